#!/usr/bin/env bash
# Runs one test file (or a few) of any Jest project: `npm run test:file -- test/e2e/smoke.e2e-spec.ts`.
# Jest picks the project by the file's path (unit: src/**/*.spec.ts, integration: test/integration,
# e2e: test/e2e; test/reliability and test/browser turn their project on here, and reliability builds
# dist/ first, since it starts `node dist/src/main.js`). Other arguments go to Jest unchanged
# (`-t 'a test name'`, `--detectOpenHandles`). DATABASE_URL set: PostgreSQL (a fresh database per
# test app); unset: the embedded database.
set -euo pipefail
cd "$(dirname "$0")/.."
files=0
build=0
for arg in "$@"; do
  [[ "$arg" == -* ]] && continue
  case "$arg" in
    *.spec.ts | *.int-spec.ts | *.e2e-spec.ts | *.rel-spec.ts | *.browser-spec.ts) ;;
    *) continue ;;
  esac
  if [[ ! -f "$arg" ]]; then
    echo "test:file: no such file: $arg" >&2
    exit 2
  fi
  files=$((files + 1))
  case "$arg" in
    *test/reliability/*) export RELIABILITY=1 build=1 ;;
    *test/browser/*) export BROWSER_TESTS=1 ;;
  esac
done
if [[ $files -eq 0 ]]; then
  echo "usage: npm run test:file -- <test file> [more files] [jest options], e.g. npm run test:file -- test/e2e/smoke.e2e-spec.ts" >&2
  exit 2
fi
if [[ $build -eq 1 ]]; then npm run -s build; fi
export NODE_OPTIONS="${NODE_OPTIONS:+$NODE_OPTIONS }--experimental-vm-modules --no-warnings=ExperimentalWarning"
exec node_modules/.bin/jest --runInBand --runTestsByPath "$@"
