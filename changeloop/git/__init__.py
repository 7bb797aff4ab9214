"""Running git on repositories we name: the content identity (a git tree of what
was proven), submodules, and where a repository sits in its work tree.
"""
