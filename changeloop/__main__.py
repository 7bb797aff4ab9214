"""``python -m changeloop``: the same entry point as the console script.

Importing :mod:`changeloop.cli.main` installs the SIGINT/SIGTERM handlers
before anything heavy is imported (DESIGN.md §5 "Faults").
"""

from changeloop.cli.main import entry

if __name__ == "__main__":
    entry()
