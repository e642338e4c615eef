"""Each host's server entry in the common field names the converter reads (CW-01).

The converter (:mod:`~shadowcode.mcp.client.imports.convert`) reads ``type``, ``command``
(a string or an argv list), ``args``, ``env``, ``url`` and ``headers`` plus the fields of its
table. Most hosts write those names; the others are renamed here, one function per shape,
without judging any value:

- Gemini CLI, Qwen Code: ``httpUrl`` is Streamable HTTP; a bare ``url`` is their SSE field;
  ``includeTools``/``excludeTools`` are the tool filters.
- opencode, Kilo: ``{type: "local", command: [argv], environment}`` or
  ``{type: "remote", url, headers}``.
- Continue: a list of items named by ``name``; headers under ``requestOptions.headers``.
- Zed: ``context_servers`` entries ``{source: "custom", command, args, env}``, the older
  ``{command: {path, args, env}}``, or ``{url, headers}``; an extension's server is configured
  by that extension and is not importable.
- Windsurf: ``serverUrl`` is the URL.

A function returns the renamed entry, or a string saying why the entry cannot be imported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from shadowcode.json_values import json_object

__all__ = ["SHAPES", "Shape"]

Shape = Callable[[dict[str, Any]], "dict[str, Any] | str"]


def _renamed(entry: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    return {names.get(key, key): value for key, value in entry.items()}


def _gemini(entry: dict[str, Any]) -> dict[str, Any] | str:
    out = _renamed(entry, {"includeTools": "enabled_tools", "excludeTools": "disabled_tools"})
    if "httpUrl" in out:
        if "url" in out:
            return "both 'httpUrl' (Streamable HTTP) and 'url' (SSE) are set; a server has one transport"
        out["url"] = out.pop("httpUrl")
        out.setdefault("type", "http")
    elif "url" in out:
        out.setdefault("type", "sse")
    return out


def _opencode(entry: dict[str, Any]) -> dict[str, Any] | str:
    kind = entry.get("type")
    out = _renamed(entry, {"environment": "env"})
    if kind == "local":
        out.pop("type")
        return out
    if kind == "remote":
        out["type"] = "http"
        return out
    return f"'type' is {kind!r}, not 'local' or 'remote'"


def _continue(entry: dict[str, Any]) -> dict[str, Any] | str:
    out = {k: v for k, v in entry.items() if k != "name"}
    given = out.pop("requestOptions", None)
    if given is not None:
        options = json_object(given)
        if options is None:
            return "field 'requestOptions' is not an object"
        rest = {k: v for k, v in options.items() if k != "headers"}
        if "headers" in options:
            out["headers"] = options["headers"]
        if rest:
            out["requestOptions"] = rest
    return out


def _zed(entry: dict[str, Any]) -> dict[str, Any] | str:
    source = entry.get("source", "custom")
    if source == "extension" or "settings" in entry and "command" not in entry and "url" not in entry:
        return "a server of a Zed extension is configured by that extension; add the server it starts by hand"
    if source != "custom":
        return f"'source' is {source!r}, not 'custom'"
    out = {k: v for k, v in entry.items() if k not in ("source", "remote")}
    command = json_object(out.get("command"))
    if command is not None:  # the older {"command": {"path", "args", "env"}}
        out.pop("command")
        out.update(_renamed(command, {"path": "command"}))
    if "url" in out:
        out.setdefault("type", "http")
    return out


def _windsurf(entry: dict[str, Any]) -> dict[str, Any] | str:
    if "serverUrl" in entry and "url" in entry:
        return "both 'serverUrl' and 'url' are set; a server has one URL"
    return _renamed(entry, {"serverUrl": "url"})


SHAPES: dict[str, Shape] = {
    "gemini": _gemini,
    "qwen": _gemini,
    "opencode": _opencode,
    "kilo": _opencode,
    "continue": _continue,
    "zed": _zed,
    "windsurf": _windsurf,
}
"""Host → its renaming; hosts not listed write the common names already."""
