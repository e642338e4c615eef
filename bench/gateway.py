"""The HTTP gateway figure: requests/s and p99 with 8 callers, beside a bare SDK HTTP server.

Pending: the benchmark does not drive the HTTP gateway yet, so :func:`gateway_figures`
reports nulls with the reason. Extension point: start ``mcp serve --http`` and a bare SDK
server (the lowlevel ``Server``'s ``streamable_http_app(stateless_http=True,
json_response=True)`` under uvicorn, on 127.0.0.1 port 0), drive both with the same load
(8 callers, the same tool as the stdio figures) and fill the same keys.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ["GATEWAY_CALLERS", "GATEWAY_PENDING_REASON", "gateway_figures"]

GATEWAY_CALLERS: Final = 8
"""Concurrent callers in the gateway figure."""

GATEWAY_PENDING_REASON: Final = "not measured yet: the benchmark does not drive the HTTP gateway (`mcp serve --http`)"
"""Why the gateway figures are null for now."""


def gateway_figures() -> dict[str, Any]:
    """The gateway figures of this run.

    Returns:
        ``{"callers": int, "shadowcode_rps": float | None, "shadowcode_p99_ms": float | None,
        "bare_rps": float | None, "bare_p99_ms": float | None, "reason": str | None}``;
        ``reason`` says why a figure is null.
    """
    return {
        "callers": GATEWAY_CALLERS,
        "shadowcode_rps": None,
        "shadowcode_p99_ms": None,
        "bare_rps": None,
        "bare_p99_ms": None,
        "reason": GATEWAY_PENDING_REASON,
    }
