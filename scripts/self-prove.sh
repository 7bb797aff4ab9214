#!/usr/bin/env bash
# changeloop proves itself: prove one of its own changes (default grounded-citations, whose
# tests cite its claims with depth and are grounded against entry points of changeloop's own
# package) with changeloop, signed with a throwaway key; then `gate` must say it is proven
# and the test receipt must verify with that key; any other answer fails the script.
# Then check the tool capability contracts against the examples' pinned tools.
# scripts/test.sh runs this after the suite when CHANGELOOP_SELF_PROVE=1 (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
change=${1:-grounded-citations}

keys=$(mktemp -d)
trap 'rm -rf "$keys"' EXIT
changeloop keygen --out "$keys" >/dev/null 2>&1

echo "self-prove: changeloop prove $change" >&2
if ! changeloop prove "$change" --sign-key "$keys/changeloop.key"; then
  echo "self-prove: changeloop could not prove its own change $change" >&2
  exit 1
fi
if ! changeloop gate "$change" --public-key "$keys/changeloop.pub"; then
  echo "self-prove: gate says $change is not proven by its receipts" >&2
  exit 1
fi
receipt=".changeloop/receipts/$change/test.test.json"
if [ -f "$receipt" ] && ! changeloop receipt verify "$receipt" --public-key "$keys/changeloop.pub" \
     --change "$change" >/dev/null; then
  echo "self-prove: the test receipt of $change does not verify with the signing key" >&2
  exit 1
fi

for example in examples/node-vitest examples/web examples/node-test examples/python-pytest \
               examples/rust-cargo; do
  echo "adapters check: $example" >&2
  changeloop adapters check --root "$example"
done
