#!/usr/bin/env bash
# A/B builds for `npm run bench -- --server bench/builds/<a|b>/src/main.js`:
#   bench/ab-build.sh <git-rev> <src file>...
# builds/b = the working tree (npm run build); builds/a = the same build with the given files
# compiled as they are at <git-rev> (so both use the current agents, migrations and config).
set -euo pipefail
cd "$(dirname "$0")/.."
rev=$1; shift
rm -rf bench/builds/a bench/builds/b bench/builds/tmp
npm run -s build
cp -r dist bench/builds/b
cp -r dist bench/builds/a
for f in "$@"; do
  mkdir -p "bench/builds/tmp/$(dirname "$f")"
  git show "$rev:$f" > "bench/builds/tmp/$f"
done
(cd bench/builds/tmp && npx swc . -d out --config-file ../../../.swcrc --quiet && cp -r out/. ../a/)
rm -rf bench/builds/tmp
echo "built bench/builds/a ($rev: $*) and bench/builds/b (working tree)"
