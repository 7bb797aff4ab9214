#!/bin/sh
# Turn web/ and api/ into their own git repositories (nested .git directories
# cannot be committed) and make a demo reviewer key pair under keys/.
# Usage: ./setup.sh [DIR]   (default: the directory holding this script)
set -eu
here=${1:-$(cd "$(dirname "$0")" && pwd)}
for repo in web api; do
  if [ ! -d "$here/$repo/.git" ]; then
    git -C "$here/$repo" init -q -b main
    git -C "$here/$repo" add -A
    git -C "$here/$repo" -c user.name=example -c user.email=example@example.invalid \
      commit -q -m "initial $repo"
  fi
done
if [ ! -f "$here/keys/reviewer.key" ]; then
  mkdir -p "$here/keys"
  changeloop keygen --out "$here/keys" >/dev/null 2>&1
  mv "$here/keys/changeloop.key" "$here/keys/reviewer.key"
  mv "$here/keys/changeloop.pub" "$here/keys/reviewer.pub"
fi
echo "ready: $here (web and api are git repositories; keys/reviewer.key signs reviews)"
