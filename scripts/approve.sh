#!/usr/bin/env bash
# Re-approves the golden files from the current build: the text dumps of
# tests/golden/*.txt, the emitted C++ of tests/golden/emit/, and the dumps of
# the example plans in plans/ (which the build compiles). Run it after an
# intended change of the text dump, a generator, a pass or the C++ backend,
# then review `git diff tests/golden plans` before committing.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build --target collplan_tests
COLLPLAN_APPROVE=1 ./build/tests/collplan_tests "[golden]"
git --no-pager diff --stat -- tests/golden plans || true
