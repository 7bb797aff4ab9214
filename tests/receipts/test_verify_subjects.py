"""A statement must name each subject once, and at least one."""

from __future__ import annotations

import pytest
from receipts_helpers import T0, statement

from changeloop.model import ContentIdentity
from changeloop.signing.dsse import PAYLOAD_TYPE, sign_envelope
from changeloop.signing.jcs import canonicalize
from changeloop.signing.keys import generate_private_key
from changeloop.signing.verify import Expectation, VerificationError, verify_envelope

WEB = ContentIdentity(tree="3f2a" + "0" * 36, head="71be" + "0" * 36, dirty=False)
KEY = generate_private_key()


def _refused(subjects: list[dict[str, object]]) -> VerificationError:
    st = statement(subjects={"web": WEB})
    st["subject"] = subjects
    data = sign_envelope(canonicalize(st), PAYLOAD_TYPE, KEY)
    with pytest.raises(VerificationError) as err:
        verify_envelope(data, [KEY.public_key()], Expectation(change="add-review", now=T0))
    return err.value


def test_no_subject_is_refused() -> None:
    err = _refused([])
    assert err.check == "statement" and "no subject" in err.reason


def test_a_repository_named_twice_is_refused() -> None:
    one: dict[str, object] = {"name": "web", "digest": {"gitTree": WEB.tree}}
    two: dict[str, object] = {"name": "web", "digest": {"gitTree": "9c1d" + "0" * 36}}
    err = _refused([one, two])
    assert err.check == "statement" and "web" in err.reason and "more than once" in err.reason
