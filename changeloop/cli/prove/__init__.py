"""The ``prove`` verb: its arguments and roads (``command``), the plan (``plan``),
the no-change answer (``nochange``) and the full run (``full``).
"""

from changeloop.cli.prove.args import empty
from changeloop.cli.prove.command import register

__all__ = ["empty", "register"]
