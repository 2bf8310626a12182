#!/usr/bin/env bash
# Renders an `iotrex report` page in headless Chromium and saves a screenshot, so a person (or
# a session) can look at it. tests/it/report_screens.rs renders the pages of real traces the same
# way and measures them (`scripts/install-deps.sh` installs Chromium).
#
#   scripts/check-report.sh [REPORT.html] [SHOT.png] [HEIGHT]
#
# Without REPORT it builds one from the demo traces in demo-out/ (run `make demo` first) or,
# if there are none, from synthetic traces. It fails if Chromium cannot render the page or the
# screenshot comes out blank; every <details> section is opened first so all plots are drawn.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${IOTREX:-target/release/iotrex}
REPORT=${1:-}
SHOT=${2:-/tmp/iotrex-report.png}
HEIGHT=${3:-2400}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

if ! command -v chromium >/dev/null; then
  echo "chromium not found: apt-get install -y chromium" >&2
  exit 2
fi
if [ -z "$REPORT" ]; then
  REPORT=$TMP/report.html
  if ls demo-out/ior_like.{4,8,12,16}.iotrex >/dev/null 2>&1; then
    X=demo-out/ior_like.64.extrap.iotrex
    [ -f "$X" ] || X=demo-out/ior_like.64.real.iotrex
    "$BIN" report demo-out/ior_like.{4,8,12,16}.iotrex --extrap "$X" -o "$REPORT"
  else
    for n in 4 8 16 64; do "$BIN" synth --ranks $n --iters 20 -o "$TMP/s.$n.iotrex" >/dev/null; done
    "$BIN" report "$TMP"/s.{4,8,16}.iotrex --extrap "$TMP/s.64.iotrex" -o "$REPORT"
  fi
fi
# A copy with every section open, so the screenshot shows every plot.
sed 's/<details id=\("[^"]*"\)>/<details id=\1 open>/g' "$REPORT" > "$TMP/open.html"
chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
  --disable-component-update --disable-sync --no-first-run --user-data-dir="$TMP/profile" \
  --screenshot="$SHOT" --window-size=1400,"$HEIGHT" "file://$TMP/open.html" 2>"$TMP/chromium.log" || {
  cat "$TMP/chromium.log" >&2
  exit 1
}
[ -s "$SHOT" ] || { echo "no screenshot written" >&2; exit 1; }
# A blank page compresses to almost nothing; a page with plots and tables does not.
size=$(stat -c %s "$SHOT")
if [ "$size" -lt 20000 ]; then
  echo "screenshot $SHOT is only $size bytes: the page looks blank" >&2
  exit 1
fi
echo "screenshot: $SHOT ($size bytes) of $REPORT"
