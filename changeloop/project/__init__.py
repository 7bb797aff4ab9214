"""What a repository is, read as data: its manifests (bounded, never executed) and its
own top-level Python packages.
"""
