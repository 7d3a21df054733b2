#!/usr/bin/env bash
# Runs the README's API examples as a new user would: every ```bash block that follows a
# `<!-- readme-test -->` line, in order, in one shell (variables carry over from block to block),
# against a freshly started server (`node dist/src/main.js`, embedded database in a temp dir, no
# API_KEYS: the development key). Every curl must succeed (HTTP < 400, via --fail-with-body)
# except in blocks marked `<!-- readme-test: expect-http-error -->`, where every curl must get an
# HTTP error. Any failing command fails the script (set -euo pipefail).
#
# Usage: scripts/readme-examples.sh [README.md]    (run by .ci/run, step readme_examples)
set -euo pipefail

cd "$(dirname "$0")/.."
README="${1:-README.md}"
for tool in curl jq node; do
  command -v "$tool" >/dev/null || { echo "readme-examples: $tool is needed" >&2; exit 1; }
done

WORK="$(mktemp -d -t readme-examples.XXXXXX)"
SERVER_PID=""
cleanup() {
  local rc=$?
  if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  if [[ $rc -ne 0 && -f "$WORK/server.log" ]]; then
    echo "---- server log (last 40 lines) ----" >&2
    tail -n 40 "$WORK/server.log" >&2 || true
  fi
  rm -rf "$WORK"
  exit $rc
}
trap cleanup EXIT

# 1. The blocks, in order, as one script.
awk -v out="$WORK/examples.sh" '
  BEGIN { mode = ""; inblock = 0; n = 0 }
  /^<!-- readme-test(: expect-http-error)? -->[[:space:]]*$/ { mode = ($0 ~ /expect-http-error/) ? "error" : "ok"; next }
  /^```bash[[:space:]]*$/ && mode != "" && !inblock {
    inblock = 1; n++
    printf "__block %d %s\n", n, mode >> out
    next
  }
  /^```/ && inblock { inblock = 0; mode = ""; next }
  inblock { print >> out; next }
  /^[[:space:]]*$/ { next }
  { mode = "" }
  END { if (n == 0) { print "no <!-- readme-test --> blocks found" > "/dev/stderr"; exit 1 } }
' "$README"
BLOCKS="$(grep -c '^__block ' "$WORK/examples.sh")"

# 2. A server of our own on a free port (the README's http://127.0.0.1:3000 is rewritten to it).
npm run --silent build
PORT="$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")"
env -u API_KEYS -u HOST -u DATABASE_URL DATA_DIR="$WORK/data" PORT="$PORT" LOG_LEVEL=warn \
  node dist/src/main.js >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
BASE="http://127.0.0.1:$PORT"
for _ in $(seq 1 240); do
  if curl -sf "$BASE/readyz" >/dev/null 2>&1; then break; fi
  kill -0 "$SERVER_PID" 2>/dev/null || { echo "readme-examples: the server exited" >&2; exit 1; }
  sleep 0.5
done
curl -sf "$BASE/readyz" >/dev/null || { echo "readme-examples: the server did not become ready" >&2; exit 1; }
echo "readme-examples: $BLOCKS blocks of $README against $BASE"

# 3. Run them: one shell, a curl wrapper that enforces the block's expectation.
{
  cat <<'PRELUDE'
set -euo pipefail
__mode=ok
__block() { __mode="$2"; printf '\n==== README example block %s (%s) ====\n' "$1" "$2" >&2; }
curl() {
  local rc=0
  command curl --fail-with-body "$@" || rc=$?
  if [[ "$__mode" == error ]]; then
    if [[ $rc -ne 22 ]]; then echo "README example: expected an HTTP error (curl exit 22), got exit $rc: curl $*" >&2; return 1; fi
    return 0
  fi
  if [[ $rc -ne 0 ]]; then echo "README example failed (curl exit $rc): curl $*" >&2; fi
  return $rc
}
PRELUDE
  sed "s#http://127.0.0.1:3000#$BASE#g" "$WORK/examples.sh"
} >"$WORK/run.sh"
( cd "$WORK" && TMPDIR="$WORK" bash "$WORK/run.sh" )
echo
echo "readme-examples: all $BLOCKS blocks passed"
