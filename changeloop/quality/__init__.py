"""Consumer-quality lanes (``quality/foundation-quality.json``): loading, running,
and the worst-lane summary.
"""
