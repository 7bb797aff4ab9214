"""The no-change decision: a re-prove with nothing changed, answered from one signed record.

After a full ``prove`` whose every provider ended as a pass the cache holds
(reused, or run and stored), :func:`remember` writes
``.changeloop/decisions/<change>.json``: a DSSE envelope signed with the
workspace key over what that answer depended on (the *key*) and the answer a
full re-prove would give (every provider ``cached``). The next ``prove`` of the
change with the same options calls :func:`~changeloop.nochange.answer.answer` before
loading the plan: it re-observes the key — one read of the record, the configuration
files' bytes, ``envFrom`` values (as HMACs), the environment part of every command, the
cache entries, service ports, ``latest/`` receipts, and one content identity
per repository — and, when all of it is what the record says, re-lists the
receipts in a new ``runs/<id>/`` and prints the recorded answer. Anything else
(no record, a record that does not verify, any difference, any error) returns
None and the full path runs: the record is a cache, never an authority.

What the key holds, and why each part is enough, is in docs/nochange.md.

Layout: :mod:`~changeloop.nochange.key` (the key and its digests),
:mod:`~changeloop.nochange.record` (``remember``) and
:mod:`~changeloop.nochange.answer` (``answer``, the order of its checks), whose
parts are :mod:`~changeloop.nochange.signed` (reading and verifying the record),
:mod:`~changeloop.nochange.content` (the content identities on threads of their own),
:mod:`~changeloop.nochange.materialize` (the answered run's ``runs/<id>/``) and
:mod:`~changeloop.nochange.miss` (why the record did not answer).

The package re-exports nothing: callers import the module they need, so that
``prove`` can start the workspace root's content identity
(:func:`~changeloop.nochange.content.begin`) before the rest of the decision is
imported, and git runs while Python imports.
"""
