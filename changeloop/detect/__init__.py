"""Detection: which test frameworks a repository declares, read without executing anything,
and the wiring derived from it.

:mod:`~changeloop.detect.repository` reads one repository (configured > manifest >
environment > source import, docs/bootstrap.md); :mod:`~changeloop.detect.context`
gathers a change with what each of its repositories declares, and
:mod:`~changeloop.detect.derive` turns that into providers.
"""
