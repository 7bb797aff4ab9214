"""Where trust comes from: one resolution, used by every verb that weighs a receipt.

Example::

    trust = resolve(plan, TrustRequest(trust_from="main"))
    plan = trust.apply(plan)        # external providers judge with main's keys, accepts, maxAge
    trust.lines()                   # ["trust: REV 3f2a… (main)", "  trust-changed: …"]
    trust.to_json()                 # the "trust" object of every verb's --json document

Whoever verifies must not take their trust from what is verified: a pull request
edits its change's ``execution.yaml`` and key files, so ``gate``, ``summary``,
``report``, ``prove`` (its ``external`` providers and ``--cache-from``) and
``receipt import`` can read the trust material from a base revision
(``--trust-from``) or from CI's keyring (``--trust-keyring``) instead.
:mod:`~changeloop.trust.resolve` holds the rule, :mod:`~changeloop.trust.at_rev`
reads another revision, :mod:`~changeloop.trust.keyring` the keyring file, and
:mod:`~changeloop.trust.records` the answer.
"""

from changeloop.trust.records import ProviderTrust, Source, Trust, TrustChanged
from changeloop.trust.resolve import TrustRequest, resolve

__all__ = ["ProviderTrust", "Source", "Trust", "TrustChanged", "TrustRequest", "resolve"]
