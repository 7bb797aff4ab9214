"""changeloop: prove OpenSpec changes with executed, signed evidence."""

__version__ = "0.1.0"
