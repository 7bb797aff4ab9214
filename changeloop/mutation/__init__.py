"""The mutation adapter's parts (DESIGN.md §11); the adapter itself is ``providers/mutation.py``.

``mutants.py`` makes AST mutants, ``select.py`` picks a claim's tests and
mutants from a traced run, ``sandbox.py`` is the adapter's own copy, and
``judge.py`` scores the mutants' job results (pure).
"""
