#!/usr/bin/env bash
# Install everything the test suite needs, then run it. `.ci/run` calls this;
# so does the README's second quick-start command.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m pip install --quiet --disable-pip-version-check -e '.[test]'
# The editable install leaves changeloop's bytecode uncompiled; under PYTHONDONTWRITEBYTECODE
# every `changeloop` the tests start would compile all of it again (a fifth of a CLI test).
python3 -m compileall -q changeloop >/dev/null

need_apt=()
command -v git >/dev/null 2>&1 || need_apt+=(git)
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  else
    echo "note: ${need_apt[*]} missing and apt-get unavailable; browser tests will skip" >&2
  fi
fi

# Node projects of the examples: exactly what their lock files say. (tests/fixtures/runners/
# only regenerates checked-in report fixtures; no test needs it installed.)
if command -v npm >/dev/null 2>&1; then
  git ls-files '*package-lock.json' | grep -v -e node_modules -e '^tests/fixtures/runners/' | while read -r lock; do
    dir=$(dirname "$lock")
    if [ ! -d "$dir/node_modules" ] || [ "$lock" -nt "$dir/node_modules/.package-lock.json" ]; then
      echo "npm ci in $dir" >&2
      (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
    fi
  done
fi

# The tool matrix: several versions of each contracted runner side by side (vitest 3 and 4,
# pytest 8 and 9, jest, jest-junit, unittest of each Python), kept in a cache; the citation
# and contract tests drive them (bench/tool_matrix.py).
if command -v npm >/dev/null 2>&1; then
  python3 bench/tool_matrix.py >/dev/null
fi

# Gates before the suite: formatting, lint (incl. unused arguments), the import
# layers (pyproject's [tool.importlinter]), strict typing of the package and the tests.
python3 -m ruff format --check changeloop tests bench
python3 -m ruff check changeloop tests bench
python3 -c 'import sys; from importlinter.cli import lint_imports_command as lint; sys.argv[1:] = ["--no-cache"]; lint()'
python3 -m mypy  # files, strictness and the per-module overrides: pyproject.toml [tool.mypy]

# pyproject.toml makes every warning an error and every xfail strict.
# Two workers, one per core (most tests wait on the processes they start); a file's tests
# stay on one worker, so a module's fixtures are made once.
python3 -m pytest -n "${CHANGELOOP_TEST_WORKERS:-2}" --dist loadfile "$@"

# changeloop proves itself after the suite (.ci/run sets CHANGELOOP_SELF_PROVE=1):
# one of its own changes is proven and gated, or CI fails (scripts/self-prove.sh).
if [ "${CHANGELOOP_SELF_PROVE:-0}" = 1 ]; then
  bash scripts/self-prove.sh "${CHANGELOOP_SELF_CHANGE:-grounded-citations}"
fi
