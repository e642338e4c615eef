"""The no-SDK floor: a stdio MCP server that answers from canned JSON, standard library only.

It exists so the benchmark can show what spawning a Python process and exchanging a few
newline-delimited JSON-RPC lines costs with no framework at all. It answers ``initialize``
(echoing a legacy revision it knows, else the newest one), ``tools/list`` (one tool, ``echo``),
``tools/call`` of ``echo`` and ``ping``; notifications get no answer, anything else a
method-not-found error. It validates nothing else and has no limits: it is a measuring stick,
not a server to deploy.

Run: ``python bench/floor_server.py`` and speak JSON-RPC on stdin/stdout; exits at stdin EOF.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Final

__all__ = ["TOOL_NAME", "answer", "main"]

TOOL_NAME: Final = "echo"
"""The one tool the floor lists; it returns its ``message`` argument as text."""

_KNOWN_REVISIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")

_TOOLS_RESULT: Final = {
    "tools": [
        {
            "name": TOOL_NAME,
            "description": "Return the message.",
            "inputSchema": {
                "type": "object",
                "properties": {"message": {"type": "string"}},
                "required": ["message"],
            },
        }
    ]
}


def _initialize(params: dict[str, Any]) -> dict[str, Any]:
    asked = params.get("protocolVersion")
    return {
        "protocolVersion": asked if asked in _KNOWN_REVISIONS else _KNOWN_REVISIONS[-1],
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "floor", "version": "0"},
    }


def _call(params: dict[str, Any]) -> dict[str, Any]:
    arguments = params.get("arguments") or {}
    text = str(arguments.get("message", ""))
    return {"content": [{"type": "text", "text": text}], "isError": False}


def answer(line: bytes) -> bytes | None:
    """The reply line to one request line, or None for a notification.

    Args:
        line: one JSON-RPC frame without its newline.

    Returns:
        One JSON-RPC response encoded as UTF-8 with a trailing newline, or None when the
        frame is a notification (no ``id``) or blank.
    """
    if not line.strip():
        return None
    message = json.loads(line)
    if "id" not in message:
        return None
    method = message.get("method")
    params = message.get("params") or {}
    reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
    if method == "initialize":
        reply["result"] = _initialize(params)
    elif method == "tools/list":
        reply["result"] = _TOOLS_RESULT
    elif method == "tools/call" and params.get("name") == TOOL_NAME:
        reply["result"] = _call(params)
    elif method == "ping":
        reply["result"] = {}
    else:
        reply["error"] = {"code": -32601, "message": f"method not found: {method}"}
    return json.dumps(reply, separators=(",", ":")).encode("utf-8") + b"\n"


def main() -> None:
    """Serve stdin to stdout until EOF."""
    stdin = sys.stdin.buffer
    stdout = sys.stdout.buffer
    for line in stdin:
        out = answer(line)
        if out is not None:
            stdout.write(out)
            stdout.flush()


if __name__ == "__main__":
    main()
