#!/usr/bin/env bash
# The VS Code extension's tests, as `make test` runs them (mk/vscode.mk): installs what they
# need (scripts/install-tools.sh), type-checks, runs the unit tests under Node's test runner,
# packages the .vsix and runs the end-to-end tests in code-server with Chromium.
# Fails loudly when anything is missing; never skips.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ext=$(cd "$here/.." && pwd)
root=$(cd "$ext/../.." && pwd)
"$here/install-tools.sh"
eval "$("$here/install-tools.sh" --env)"
mkdir -p "$root/.cache/vscode"
export AGENTD_BIN="$root/.cache/vscode/agentd"
export FAKEMODEL_BIN="$root/.cache/vscode/fakemodel"
(cd "$root" && ${GO:-go} build -o "$AGENTD_BIN" ./cmd/agentd && ${GO:-go} build -o "$FAKEMODEL_BIN" ./internal/fakemodel/cmd/fakemodel)
cd "$ext"
npm run --silent typecheck
echo "== vscode unit tests"
node esbuild.mjs --tests
set +e
node --test --test-reporter=spec out/test/*.test.js | tee out/unit.log
unit=${PIPESTATUS[0]}
set -e
p=$(sed -n 's/^ℹ pass \([0-9]*\)$/\1/p' out/unit.log); f=$(sed -n 's/^ℹ fail \([0-9]*\)$/\1/p' out/unit.log)
echo "${p:-0} passed, ${f:-?} failed"
[ "$unit" = 0 ] && [ -n "$p" ] && [ "$p" -gt 0 ] || { echo "vscode unit tests FAILED"; exit 1; }
echo "== vscode package"
npm run --silent package
echo "== vscode end-to-end (code-server + Chromium)"
timeout 1800 node test/e2e/run.mjs
