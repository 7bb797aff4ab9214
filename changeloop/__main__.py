"""``python -m changeloop``: the same entry point as the console script.

Importing :mod:`changeloop.cli.main` installs the SIGINT/SIGTERM handlers
before anything heavy is imported (docs/processes.md).
"""

from changeloop.cli.main import entry

if __name__ == "__main__":
    entry()
