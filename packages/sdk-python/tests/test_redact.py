"""Redaction of recorded payloads (sdk.md §12.2): the key list shared with svc-sdk for Node and Rust."""

from __future__ import annotations

from svc_helpers.observability import redact


def test_keys_of_the_spec_and_a_channel_refs_access_key() -> None:
    payload = {
        "user": "ann",
        "Password": "p",
        "nested": [{"API_KEY": "k", "token": "t", "id_token": "i", "tokens": 3}],
        "body": {"channel_id": "c1", "access_key": "k", "direction": "read"},
    }
    assert redact(payload) == {
        "user": "ann",
        "Password": "[REDACTED]",
        "nested": [{"API_KEY": "[REDACTED]", "token": "[REDACTED]", "id_token": "[REDACTED]", "tokens": 3}],
        "body": {"channel_id": "c1", "access_key": "[REDACTED]", "direction": "read"},
    }
