"""``changeloop report``: one self-contained HTML page of a change's evidence (docs/verbs/gate.md).

:mod:`~changeloop.report.collect` gathers (verification is ``gate``'s),
:mod:`~changeloop.report.model` holds the records, :mod:`~changeloop.report.render`
makes the page, :mod:`~changeloop.report.timeline` draws the run, and
:mod:`~changeloop.report.write` writes it.
"""
