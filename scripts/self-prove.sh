#!/usr/bin/env bash
# changeloop proves itself: prove one of its own changes (default add-gate-verb) with
# changeloop, then `gate` must say it is proven; any other answer fails the script.
# Then check the tool capability contracts against the examples' pinned tools.
# scripts/test.sh runs this after the suite when CHANGELOOP_SELF_PROVE=1 (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
change=${1:-add-gate-verb}

echo "self-prove: changeloop prove $change" >&2
if ! changeloop prove "$change"; then
  echo "self-prove: changeloop could not prove its own change $change" >&2
  exit 1
fi
if ! changeloop gate "$change"; then
  echo "self-prove: gate says $change is not proven by its receipts" >&2
  exit 1
fi

for example in examples/node-vitest examples/web examples/node-test examples/python-pytest \
               examples/rust-cargo; do
  echo "adapters check: $example" >&2
  changeloop adapters check --root "$example"
done
