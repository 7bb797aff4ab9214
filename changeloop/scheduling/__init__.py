"""The provider DAG: dependency order (``graph``), resource locks (``resources``)
and the parallel scheduler (``scheduler``).
"""
