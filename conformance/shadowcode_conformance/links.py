"""Where the rule each check proves is written: specification sections and contract ids (CONF-01).

A check's links are what a reader follows to the text it holds a server to:

* the URLs in its ``source`` (a check of the generic profile names the MCP or JSON-RPC section
  it proves there);
* for a check of ShadowCode's contract that also holds MCP behaviour to the specification
  (stdio framing, Streamable HTTP, lifecycle, authorization, tasks), the sections in
  :data:`SPEC_SECTIONS`, a table keyed by check group or check name, kept here rather than in
  the check modules;
* for a check of ShadowCode's contract, each requirement id it covers, as
  ``REQUIREMENTS.md#SRV-01``.

Every registered check has at least one link (``conformance/tests/test_links.py``); they are
shown by ``--list`` and carried by each check of the JSON and JUnit reports.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Final

from shadowcode_conformance.registry import Check
from shadowcode_conformance.verdicts import spec

__all__ = ["REQUIREMENTS_DOC", "SPEC_SECTIONS", "check_links", "requirement_link", "urls_in"]

REQUIREMENTS_DOC: Final = "REQUIREMENTS.md"
"""The contract's file, whose ids the ShadowCode profile's checks cite."""

_REVISION: Final = "2025-11-25"
"""The revision whose text the table below cites for rules every initialize-era revision shares."""

_STDIO: Final = spec(_REVISION, "basic/transports#stdio")
_HTTP: Final = spec(_REVISION, "basic/transports#streamable-http")
_LIFECYCLE: Final = spec(_REVISION, "basic/lifecycle")

SPEC_SECTIONS: Final[dict[str, tuple[str, ...]]] = {
    # The server ShadowCode serves: its transports and lifecycle.
    "stdout_purity": (_STDIO,),
    "stdio_limits": (_STDIO, f"{_LIFECYCLE}#timeouts"),
    "stdio_discovery": (spec("2026-07-28", "server/discover"),),
    "node_stdio": (_STDIO, f"{_LIFECYCLE}#version-negotiation"),
    "python_client": (_LIFECYCLE,),
    "gateway": (_HTTP, spec(_REVISION, "basic/transports#security-warning")),
    "tasks": (spec(_REVISION, "basic/utilities/tasks"),),
    "live_lists": (spec(_REVISION, "server/resources#list-changed-notification"),),
    "delegation:jobs_sdk1": (_STDIO, spec(_REVISION, "basic/utilities/progress")),
    "delegation:jobs_sdk2": (_STDIO, spec(_REVISION, "basic/utilities/progress")),
    # ShadowCode as a client of other MCP servers.
    "external_servers": (_STDIO, _LIFECYCLE),
    "external_hostile": (_STDIO,),
    "external_http": (_HTTP,),
    "external_oauth": (spec(_REVISION, "basic/authorization"),),
    "external_helpers": (spec(_REVISION, "server/tools#list-changed-notification"),),
    "client_options": (f"{_LIFECYCLE}#timeouts",),
    "session_boot": (_LIFECYCLE,),
    "private_network": (spec(_REVISION, "basic/security_best_practices"),),
}
"""Specification sections of ShadowCode contract checks that hold MCP behaviour to the text, by
check group (every check of the module) or by check name (that check alone)."""

_URL = re.compile(r"https?://[^\s;()]+")


def urls_in(source: str) -> list[str]:
    """The URLs named in a check's ``source`` text, in order (``" ; "`` separates several)."""
    return [url.rstrip(".,") for url in _URL.findall(source)]


def requirement_link(requirement: str) -> str:
    """``"REQUIREMENTS.md#SRV-01"`` for ``"SRV-01"``: a contract id as a link."""
    return f"{REQUIREMENTS_DOC}#{requirement}"


def _unique(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


def check_links(chk: Check, source: str = "", covers: Sequence[str] | None = None) -> tuple[str, ...]:
    """The links of ``chk``: specification URLs first, then contract ids (CONF-01).

    Args:
        chk: the registered check.
        source: a sub-result's own source, read for URLs before the check's; ``""`` for none.
        covers: a sub-result's own ids instead of the check's.

    Returns:
        URLs and ``REQUIREMENTS.md#<id>`` entries, each once; empty only for a check of the
        generic profile alone whose source names no URL (a test keeps there being none).
    """
    urls = [*urls_in(source), *urls_in(chk.source)]
    urls += SPEC_SECTIONS.get(chk.name, SPEC_SECTIONS.get(chk.group, ()))
    ids = chk.covers if covers is None else tuple(covers)
    contract = [requirement_link(i) for i in ids] if "shadowcode" in chk.profiles else []
    return _unique([*urls, *contract])
