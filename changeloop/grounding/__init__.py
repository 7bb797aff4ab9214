"""Claims grounded in code (docs/grounding.md): entry points, per-test traces, citations.

``tracer`` is standard-library only (it runs inside a project's pytest);
``entrypoints`` resolves ``entryPoints`` patterns with ``ast``, naming functions
through ``qualnames`` (the one walker mutation uses too); ``citations`` reads what
the plugin recorded.
"""
