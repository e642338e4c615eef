"""Removing configured values from what external servers return.

Covers CLI-04.
"""

from __future__ import annotations

import pytest

from shadowcode.mcp.client.redaction import REDACTED, Redactor

pytestmark = pytest.mark.req("CLI-04")


@pytest.mark.req("CLI-04")
def test_redaction_replaces_every_configured_value_in_keys_and_strings_in_one_pass() -> None:
    redactor = Redactor(["abc", "abcdef", ""])
    doc = {"abc-key": ["xabcdefx", {"n": 1, "t": "abc abc"}], "none": None}
    assert redactor.redact(doc) == {
        f"{REDACTED}-key": [f"x{REDACTED}x", {"n": 1, "t": f"{REDACTED} {REDACTED}"}],
        "none": None,
    }
    assert Redactor().redact(doc) is doc
