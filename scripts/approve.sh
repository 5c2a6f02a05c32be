#!/usr/bin/env bash
# Re-approves the golden files (tests/golden/) from the current build: run it
# after an intended change of the text dump or of a generator, then review
# `git diff tests/golden` before committing.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build --target collplan_tests
COLLPLAN_APPROVE=1 ./build/tests/collplan_tests "[golden]"
git --no-pager diff --stat -- tests/golden || true
