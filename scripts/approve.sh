#!/usr/bin/env bash
# Re-approves the golden files from the current build: the text dumps of
# tests/golden/*.txt, the emitted C++ of tests/golden/emit/, the pictures of
# tests/golden/render/, the dumps of the example plans in plans/ (which the
# build compiles) and the pictures of docs/img (which the build draws). Run it after an
# intended change of the text dump, a generator, a pass or the C++ backend,
# then review `git diff tests/golden plans` before committing.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build --target collplan_tests
COLLPLAN_APPROVE=1 ./build/tests/collplan_tests "[golden]"
cmake --build build --target update_docs_img
git --no-pager diff --stat -- tests/golden plans docs/img || true
