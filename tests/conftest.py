"""Suite-wide settings: a git identity for the repositories tests create."""

from __future__ import annotations

import os

os.environ.setdefault("GIT_AUTHOR_NAME", "changeloop-tests")
os.environ.setdefault("GIT_AUTHOR_EMAIL", "tests@changeloop.invalid")
os.environ.setdefault("GIT_COMMITTER_NAME", "changeloop-tests")
os.environ.setdefault("GIT_COMMITTER_EMAIL", "tests@changeloop.invalid")
