"""The mutation adapter's parts (docs/grounding.md); the adapter is ``providers/mutation.py``.

``mutants.py`` makes AST mutants, ``select.py`` picks a claim's tests and
mutants from a traced run, ``sandbox.py`` is the adapter's own copy, and
``judge.py`` scores the mutants' job results (pure).
"""
