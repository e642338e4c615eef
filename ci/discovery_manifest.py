"""Record what the full ``mcp serve`` answers to discovery into shadowcode/mcp/server/discovery.json.

    python ci/discovery_manifest.py            # write the file
    python ci/discovery_manifest.py --check    # exit 1 when the file differs from a fresh recording

The stdio front answers discovery from that file while the full server starts (issue 15), so
it must be exactly what the server answers. This runs the server without the front
(``SHADOWCODE_STDIO_FRONT=0``) in a temporary profile: one session per handshake revision
(``initialize``, ``notifications/initialized``, ``ping`` and the five listings) and one per
modern revision (``server/discover``, ``ping`` and the listings, each with the usual ``_meta``).
Each session runs twice, with different client descriptions and capabilities, and with and
without ``--allow-write --allow-approvals``: the answers must not depend on them, since the
front gives the same answer to every client.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from generated_file import write_or_check

REPO = Path(__file__).resolve().parents[1]
TARGET = REPO / "shadowcode" / "mcp" / "server" / "discovery.json"
SESSION_SECONDS = 240.0
SESSIONS_AT_ONCE = 4

HANDSHAKE = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MODERN = ("2026-07-28",)
METHODS = ("ping", "tools/list", "resources/list", "resources/templates/list", "prompts/list")
CLIENTS = (
    ({"name": "recorder", "version": "1.0"}, {}),
    ({"name": "other-client", "version": "9.9.9", "title": "Other"}, {"roots": {"listChanged": True}, "sampling": {}}),
)


def _session(requests: list[dict[str, Any]], flags: list[str], home: Path, project: Path) -> dict[int, Any]:
    """Send ``requests`` to a fresh ``mcp serve`` (no front), close stdin; ``{id: {"result"|"error": ...}}``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHADOWCODE_")}
    env.update(SHADOWCODE_HOME=str(home), SHADOWCODE_STDIO_FRONT="0")
    argv = [sys.executable, "-m", "shadowcode", "--workspace", str(project), "mcp", "serve", *flags]
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=REPO
    )
    timer = threading.Timer(SESSION_SECONDS, proc.kill)
    timer.start()
    try:
        payload = "".join(json.dumps(r) + "\n" for r in requests).encode("utf-8")
        out, err = proc.communicate(payload)
    finally:
        timer.cancel()
    answers: dict[int, Any] = {}
    for line in out.decode("utf-8").splitlines():
        message = json.loads(line)
        if "id" not in message:
            continue
        answers[message["id"]] = {k: v for k, v in message.items() if k in ("result", "error")}
    missing = [r["id"] for r in requests if "id" in r and r["id"] not in answers]
    if missing:
        raise SystemExit(f"no answer to requests {missing}; stderr: {err.decode(errors='replace')}")
    return answers


def _handshake(revision: str, client: tuple[dict[str, Any], dict[str, Any]]) -> list[dict[str, Any]]:
    info, capabilities = client
    init = {"protocolVersion": revision, "capabilities": capabilities, "clientInfo": info}
    requests: list[dict[str, Any]] = [{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}]
    requests.append({"jsonrpc": "2.0", "method": "notifications/initialized"})
    requests += [{"jsonrpc": "2.0", "id": i, "method": m} for i, m in enumerate(METHODS, start=1)]
    return requests


def _modern(revision: str, client: tuple[dict[str, Any], dict[str, Any]]) -> list[dict[str, Any]]:
    info, capabilities = client
    meta = {
        "io.modelcontextprotocol/protocolVersion": revision,
        "io.modelcontextprotocol/clientInfo": info,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    }
    methods = ("server/discover", *METHODS)
    return [{"jsonrpc": "2.0", "id": i, "method": m, "params": {"_meta": meta}} for i, m in enumerate(methods)]


def record() -> dict[str, Any]:
    """A fresh recording: ``{"format", "version", "handshake": {rev: {method: answer}}, "modern": ...}``.

    An answer is the response without ``jsonrpc`` and ``id``: ``{"result": ...}`` or ``{"error": ...}``.
    """
    import shadowcode

    document: dict[str, Any] = {"format": 1, "version": shadowcode.__version__, "handshake": {}, "modern": {}}
    jobs = []
    for era, revisions, build, methods in (
        ("handshake", HANDSHAKE, _handshake, ("initialize", *METHODS)),
        ("modern", MODERN, _modern, ("server/discover", *METHODS)),
    ):
        for revision in revisions:
            for client, flags in ((CLIENTS[0], []), (CLIENTS[1], ["--allow-write", "--allow-approvals"])):
                jobs.append((era, revision, methods, build(revision, client), flags))
    with tempfile.TemporaryDirectory(prefix="discovery-") as scratch, ThreadPoolExecutor(SESSIONS_AT_ONCE) as pool:
        home, project = Path(scratch) / "home", Path(scratch) / "project"
        project.mkdir()
        answers = list(pool.map(lambda job: _session(job[3], job[4], home, project), jobs))
    seen: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for (era, revision, methods, _requests, _flags), got in zip(jobs, answers, strict=True):
        seen.setdefault((era, revision), []).append({m: got[i] for i, m in enumerate(methods)})
    for (era, revision), (first, second) in seen.items():
        if first != second:
            differ = [m for m in first if first[m] != second[m]]
            raise SystemExit(f"{era} {revision}: answers depend on the client or flags: {differ}")
        document[era][revision] = first
    return document


def _text(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    return write_or_check(argv, TARGET, lambda: _text(record()), "ci/discovery_manifest.py")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
