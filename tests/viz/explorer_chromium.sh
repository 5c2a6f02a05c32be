#!/usr/bin/env bash
# The plan explorer (`collplan show --html`) in headless Chromium: the page
# loads with no script error and no console error, shows the round diagram
# (one arrow per message) and the measured timeline of a traced run, and
# opening it with #rank=3 makes its own script click rank 3's label, which
# shows rank 3's program; the same through a heat-map row of the summary
# view. A screenshot is kept in ARTIFACT_DIR.
#   explorer_chromium.sh COLLPLAN ARTIFACT_DIR
# Exit 77 (skipped) only when no chromium is installed.
set -uo pipefail
CP="$1"
ART="$2"
HERE="$(cd "$(dirname "$0")" && pwd)"
CHROME=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$CHROME" ]; then
  echo "SKIP: chromium is not installed (apt-get install chromium chromium-driver; scripts/setup.sh installs it)"
  exit 77
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAILED: $*"; exit 1; }
mkdir -p "$ART"

"$CP" compile -q --op encode --K 9 --p 2 -o "$dir/enc.cplan" >/dev/null || fail "compile"
"$CP" run "$dir/enc.cplan" --len 1000 --reps 2 --trace "$dir/trace.json" >/dev/null || fail "traced run"
"$CP" show "$dir/enc.cplan" --html "$dir/explorer.html" --trace "$dir/trace.json" >/dev/null || fail "show --html"
messages=$("$CP" check "$dir/enc.cplan" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["cost"]["messages"])')
cp "$dir/explorer.html" "$ART/explorer.html"

FLAGS=(--headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run --no-default-browser-check
       --disable-extensions --user-data-dir="$dir/profile" --enable-logging=stderr --v=0)
url="file://$dir/explorer.html#rank=3"
timeout 60 "$CHROME" "${FLAGS[@]}" --dump-dom "$url" >"$dir/dom.html" 2>"$dir/console.log" || {
  cat "$dir/console.log"; fail "chromium --dump-dom"; }
cp "$dir/dom.html" "$ART/explorer-dom.html"
cp "$dir/console.log" "$ART/explorer-console.log"

grep -q 'data-ready="1"' "$dir/dom.html" || fail "the page's script did not finish"
grep -q 'data-js-errors="0"' "$dir/dom.html" || fail "script errors on the page"
if grep -E 'CONSOLE|Uncaught' "$dir/console.log" | grep -Eiq 'error|uncaught'; then
  grep -E 'CONSOLE|Uncaught' "$dir/console.log"
  fail "errors in the console"
fi
grep -q 'class="collplan-plan' "$dir/dom.html" || fail "no diagram"
drawn=$(grep -o 'data-msg="' "$dir/dom.html" | wc -l)
[ "$drawn" -eq "$messages" ] || fail "the diagram shows $drawn arrows, the plan has $messages messages"
grep -q 'class="collplan-trace"' "$dir/dom.html" || fail "no measured timeline"
grep -q 'data-selected-rank="3"' "$dir/dom.html" || fail "rank 3 was not selected by its label's click"
python3 - "$dir/dom.html" <<'PY' || fail "the program panel does not show rank 3's program"
import re, sys, html
dom = open(sys.argv[1], encoding="utf-8").read()
m = re.search(r'<pre id="program">(.*?)</pre>', dom, re.S)
text = html.unescape(m.group(1)) if m else ""
assert text.startswith("rank 3:"), text[:80]
assert "step 1" in text and "send port" in text, text[:200]
assert "rank 4:" not in text
PY

# The summary view's heat-map rows are clickable ranks too.
"$CP" show "$dir/enc.cplan" --html "$dir/summary.html" --summary >/dev/null || fail "show --html --summary"
timeout 60 "$CHROME" "${FLAGS[@]}" --dump-dom "file://$dir/summary.html#rank=5" >"$dir/sdom.html" 2>"$dir/sconsole.log" || {
  cat "$dir/sconsole.log"; fail "chromium --dump-dom (summary)"; }
grep -q 'data-ready="1"' "$dir/sdom.html" || fail "summary page: the script did not finish"
grep -q 'data-js-errors="0"' "$dir/sdom.html" || fail "summary page: script errors"
grep -q '(summary)' "$dir/sdom.html" || fail "summary page: no summary view"
grep -q 'data-selected-rank="5"' "$dir/sdom.html" || fail "summary page: rank 5 was not selected by its row's click"
grep -q '<pre id="program">rank 5:' "$dir/sdom.html" || fail "summary page: rank 5's program is not shown"

timeout 60 "$CHROME" "${FLAGS[@]}" --hide-scrollbars --window-size=1400,1800 --screenshot="$ART/explorer.png" "$url" \
  >/dev/null 2>"$dir/shot.log" || { cat "$dir/shot.log"; fail "chromium --screenshot"; }
[ "$(head -c 4 "$ART/explorer.png" | od -An -c | tr -d ' ')" = "211PNG" ] || fail "no PNG screenshot"
echo "explorer in chromium: ok (screenshot $ART/explorer.png)"
