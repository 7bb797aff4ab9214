"""Claims grounded in code (DESIGN.md §11): entry points, per-test traces, citations.

``tracer`` is standard-library only (it runs inside a project's pytest);
``entrypoints`` resolves ``entryPoints`` patterns with ``ast``; ``citations``
reads what the plugin recorded.
"""
