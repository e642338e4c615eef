"""Checks every native tool result must pass: its structured content matches its declared outputSchema,
and its text block is a short human summary, not the same JSON again (SRV-04)."""

from __future__ import annotations

import json
from typing import Any

import jsonschema

from shadowcode.mcp.server.outputs import output_schema

SUMMARY_MAX_CHARS = 400


def assert_declared_output(name: str, structured: Any, text: str) -> None:
    """Fail unless ``structured`` matches ``name``'s outputSchema and ``text`` is a short summary of it."""
    schema = output_schema(name)
    errors = [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(structured)]
    assert errors == [], f"{name}: structuredContent does not match its outputSchema: {errors[:3]}"
    assert text.strip() and len(text) <= SUMMARY_MAX_CHARS, f"{name}: text block is not a short summary: {text!r}"
    try:
        json.loads(text)
    except ValueError:
        return
    raise AssertionError(f"{name}: the text block is JSON again, not a summary: {text[:120]!r}")
