"""Discovery answers recorded from the full server at build time, for the stdio front.

``discovery.json`` beside this module holds what the full server answers to the discovery
requests of every protocol revision it speaks: ``initialize`` then ``ping`` and the five
listings for each handshake revision, ``server/discover`` then the same for each modern one.
``ci/discovery_manifest.py`` records it by running the server, and a test runs the server
again and compares. The front (:mod:`shadowcode.mcp.server.front`) answers from it while the
full server is still starting.

Only requests in the exact shapes real clients send get an answer here; anything else (an
unknown revision, a cursor, extra parameters, a malformed client description) gets None and
goes to the full server, which answers it itself. So an answer from here is always the one
the full server would give.

This module imports only the standard library; keep it that way (start-up time, issue 15).
"""

from __future__ import annotations

import json
import os
import sys

from shadowcode.json_values import json_object

TYPE_CHECKING = False  # typing itself is too heavy to import on the fast path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["HANDSHAKE_METHODS", "MANIFEST_FILE", "Manifest", "load_manifest"]

MANIFEST_FILE = "discovery.json"
HANDSHAKE_METHODS = ("ping", "tools/list", "resources/list", "resources/templates/list", "prompts/list")
"""Requests answered after a recorded handshake, and (with ``server/discover``) in the modern era."""

_FORMAT = 1
_PROTOCOL_KEY = "io.modelcontextprotocol/protocolVersion"
_CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
_LOG_LEVEL_KEY = "io.modelcontextprotocol/logLevel"
_MODERN_META_KEYS = frozenset({_PROTOCOL_KEY, _CLIENT_INFO_KEY, _CAPABILITIES_KEY, _LOG_LEVEL_KEY})
_LOG_LEVELS = frozenset({"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"})


def _client_info(found: object) -> bool:
    """A client description as every client sends it: an object with string name and version."""
    value = json_object(found)
    return (
        value is not None
        and isinstance(value.get("name"), str)
        and isinstance(value.get("version"), str)
        and all(isinstance(v, str) for k, v in value.items() if k in ("title", "websiteUrl", "description"))
        and set(value) <= {"name", "version", "title", "websiteUrl", "description"}
    )


def _progress_only(params: object) -> bool:
    """``params`` is ``{"_meta": {"progressToken": T}}`` with a string or integer token, nothing else."""
    request = json_object(params)
    if request is None or set(request) != {"_meta"}:
        return False
    meta = json_object(request["_meta"])
    if meta is None or set(meta) != {"progressToken"}:
        return False
    token = meta["progressToken"]
    return isinstance(token, str) or (isinstance(token, int) and not isinstance(token, bool))


class Manifest:
    """The recorded answers: ``{"handshake": {rev: {method: answer}}, "modern": {rev: {method: answer}}}``.

    An answer is a response without ``jsonrpc`` and ``id``: ``{"result": ...}`` or ``{"error": ...}``
    (a method the server does not serve is recorded with its error, and answered with it).

    Attributes:
        version: the ShadowCode version the answers were recorded from.
    """

    def __init__(self, document: dict[str, Any]) -> None:
        if document.get("format") != _FORMAT:
            raise ValueError(f"unknown discovery manifest format {document.get('format')!r}")
        self.version: str = str(document.get("version", ""))
        self._handshake: dict[str, dict[str, Any]] = dict(document["handshake"])
        self._modern: dict[str, dict[str, Any]] = dict(document["modern"])

    def initialize(self, params: object) -> tuple[str, Any] | None:
        """``(revision, answer)`` for an ``initialize`` in the usual shape, or None.

        The usual shape: ``protocolVersion`` a recorded handshake revision, ``capabilities``
        an object, ``clientInfo`` a client description, nothing else.
        """
        request = json_object(params)
        if request is None or set(request) != {"protocolVersion", "capabilities", "clientInfo"}:
            return None
        revision = request["protocolVersion"]
        if not isinstance(revision, str) or revision not in self._handshake:
            return None
        if json_object(request["capabilities"]) is None or not _client_info(request["clientInfo"]):
            return None
        return revision, self._handshake[revision]["initialize"]

    def after_handshake(self, revision: str, method: str, params: object) -> Any | None:
        """The answer to ``method`` in a session initialized at ``revision``, or None.

        The request may carry no parameters, or only ``_meta`` holding only a progress token
        (Codex sends ``{"_meta": {"progressToken": 0}}`` with its ``tools/list``): a listing is
        answered at once, so the token changes nothing in the answer.
        """
        if method not in HANDSHAKE_METHODS or not (params in (None, {}) or _progress_only(params)):
            return None
        return self._handshake.get(revision, {}).get(method)

    def is_modern(self, params: object) -> bool:
        """Whether a request's ``params`` carry their own metadata at a recorded modern revision.

        Such a request changes no session state (2026-07-28 has none), so a recorded listing
        answered after it cannot be overtaken by it (SRV-03).
        """
        request = json_object(params)
        meta = json_object(request.get("_meta")) if request is not None else None
        return meta is not None and meta.get(_PROTOCOL_KEY) in self._modern

    def modern(self, method: str, params: object) -> Any | None:
        """The answer to a modern-era ``server/discover`` or listing whose only parameter is the usual ``_meta``."""
        if method != "server/discover" and method not in HANDSHAKE_METHODS:
            return None
        request = json_object(params)
        if request is None or set(request) != {"_meta"}:
            return None
        meta = json_object(request["_meta"])
        if meta is None or not {_PROTOCOL_KEY, _CLIENT_INFO_KEY, _CAPABILITIES_KEY} <= set(meta):
            return None
        if not set(meta) <= _MODERN_META_KEYS or meta.get(_LOG_LEVEL_KEY, "info") not in _LOG_LEVELS:
            return None
        revision = meta[_PROTOCOL_KEY]
        if not isinstance(revision, str) or revision not in self._modern:
            return None
        if not _client_info(meta[_CLIENT_INFO_KEY]) or json_object(meta[_CAPABILITIES_KEY]) is None:
            return None
        return self._modern[revision].get(method)


def load_manifest() -> Manifest | None:
    """The manifest stored beside this module (in the source tree or inside the archive), or None.

    None when it is missing or unreadable: the caller then serves without the front.
    """
    here = os.path.join(os.path.dirname(__file__), MANIFEST_FILE)
    loader = getattr(sys.modules[__name__], "__loader__", None)
    try:
        data = loader.get_data(here) if loader is not None and hasattr(loader, "get_data") else None
        if data is None:
            with open(here, "rb") as fh:
                data = fh.read()
        return Manifest(json.loads(data.decode("utf-8")))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
