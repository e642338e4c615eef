"""Protocol-only stdout over one long stdio session (SRV-01).

One legacy session of ``PURITY_FRAMES`` frames: the ``initialize`` handshake, then a mix of
``tools/list``, ``resources/read``, ``tools/call shadow_status``, pings and a few invalid
requests (unknown method, missing tool name, unknown resource), and finally one line that
is not JSON at all. Frames are evenly spaced below the stdio frame-rate bound, so no
one-second interval holds more than ``PURITY_FRAMES_PER_SECOND + 1`` of them, and at most
eight requests are unanswered at once. Every byte the target writes to stdout must belong to a newline-ended
JSON-RPC message; stderr may carry anything.
"""

from __future__ import annotations

import json
import time
from typing import Any, cast

import anyio
from anyio.abc import ByteReceiveStream

from shadowcode_conformance.context import Context
from shadowcode_conformance.limits import PURITY_FRAMES, PURITY_FRAMES_PER_SECOND, PURITY_IN_FLIGHT_MAX
from shadowcode_conformance.processes import drain, tail
from shadowcode_conformance.registry import CheckResult, check

__all__ = ["frames", "is_jsonrpc_message", "stdout_is_protocol_only"]

_HANDSHAKE_REVISION = "2025-11-25"


def is_jsonrpc_message(line: bytes) -> bool:
    """Whether one stdout line (newline removed) is a JSON-RPC 2.0 message (SRV-01).

    Args:
        line: the raw bytes of the line.

    Returns:
        True for a request, notification, result or error object with ``"jsonrpc": "2.0"``, and
        for a batch's answer: a non-empty array of result and error objects (JSON-RPC 2.0,
        batch; MCP 2025-03-26 only).
    """
    try:
        obj: object = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return False
    whole = obj  # kept as decoded: the checks below narrow obj
    if isinstance(obj, list) and obj:
        return all(_is_answer(member) for member in cast("list[object]", obj))
    call = cast("dict[str, Any]", obj) if isinstance(obj, dict) else {}
    is_call = call.get("jsonrpc") == "2.0" and isinstance(call.get("method"), str)
    return is_call or _is_answer(whole)


def _is_answer(obj: object) -> bool:
    """Whether ``obj`` is one JSON-RPC 2.0 result or error object."""
    answer = cast("dict[str, Any]", obj) if isinstance(obj, dict) else None
    if answer is None or answer.get("jsonrpc") != "2.0":
        return False
    return "method" not in answer and "id" in answer and (("result" in answer) != ("error" in answer))


def frames(total: int = PURITY_FRAMES) -> list[tuple[int | None, bytes]]:
    """The frames the purity session sends after ``initialize``, as (request id, line).

    Args:
        total: frame count including ``initialize`` (index 0) and the final non-JSON line.

    Returns:
        ``total - 1`` entries: ``notifications/initialized``, the request mix, then one
        malformed line. The id is None for frames that expect no answer.
    """
    out: list[tuple[int | None, bytes]] = [(None, _line({"jsonrpc": "2.0", "method": "notifications/initialized"}))]
    invalid: list[tuple[str, dict[str, Any]]] = [
        ("shadow/no_such_method", {}),
        ("tools/call", {"arguments": {}}),
        ("resources/read", {"uri": "shadow://no-such-resource"}),
    ]
    normal: list[tuple[str, dict[str, Any]]] = [
        ("tools/list", {}),
        ("resources/read", {"uri": "shadow://project"}),
        ("tools/call", {"name": "shadow_status", "arguments": {}}),
        ("ping", {}),
    ]
    for index in range(2, total - 1):
        if index % 25 == 0:
            method, params = invalid[(index // 25) % len(invalid)]
        else:
            method, params = normal[index % len(normal)]
        out.append((index, _line({"jsonrpc": "2.0", "id": index, "method": method, "params": params})))
    out.append((None, b'{"jsonrpc": "2.0", "id": "broken", "method": \n'))
    return out


def _line(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode("utf-8") + b"\n"


class _Watcher:
    """Reads stdout, checks each line, and tracks which requests were answered."""

    def __init__(self) -> None:
        self.lines = 0
        self.bad: list[bytes] = []
        self.pending: set[int] = set()
        self.answered: dict[int, str] = {}
        self.slots = anyio.Semaphore(PURITY_IN_FLIGHT_MAX)
        self.changed = anyio.Event()
        self.eof = False
        self.handshake: dict[str, Any] | None = None
        self.handshake_seen = anyio.Event()

    def _take(self, line: bytes) -> None:
        self.lines += 1
        if not is_jsonrpc_message(line):
            self.bad.append(line[:200])
            return
        obj = json.loads(line)
        ident = obj.get("id")
        if ident == 0 and self.handshake is None:
            self.handshake = obj
            self.handshake_seen.set()
        if isinstance(ident, int) and ident in self.pending:
            self.pending.discard(ident)
            self.answered[ident] = "error" if "error" in obj else "result"
            self.slots.release()
            self._notify()

    def _notify(self) -> None:
        self.changed.set()
        self.changed = anyio.Event()

    async def read(self, stream: ByteReceiveStream | None) -> None:
        buffer = bytearray()
        if stream is not None:
            try:
                while True:
                    buffer.extend(await stream.receive())
                    while (cut := buffer.find(b"\n")) >= 0:
                        self._take(bytes(buffer[:cut]))
                        del buffer[: cut + 1]
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass
        if buffer:
            self.bad.append(b"(no newline at end) " + bytes(buffer[:200]))
        self.eof = True
        for _ in range(PURITY_IN_FLIGHT_MAX):
            self.slots.release()  # unblock a sender waiting for an answer that will never come
        self.handshake_seen.set()
        self._notify()


@check("stdout_purity:500_frames", covers=["SRV-01"], timeout_seconds=120)
async def stdout_is_protocol_only(ctx: Context) -> CheckResult:
    """Every stdout line of a 500-frame session is a JSON-RPC message (SRV-01)."""
    watcher = _Watcher()
    stderr = bytearray()
    problems: list[str] = []
    sent = 0
    plan = frames()
    async with ctx.spawn(ctx.serve_argv()) as proc, anyio.create_task_group() as tg:
        tg.start_soon(watcher.read, proc.stdout)
        tg.start_soon(drain, proc.stderr, stderr)
        assert proc.stdin is not None
        try:
            with anyio.fail_after(max(1.0, ctx.remaining() - 10)):
                init = {
                    "protocolVersion": _HANDSHAKE_REVISION,
                    "capabilities": {},
                    "clientInfo": {"name": "conformance-purity", "version": "1"},
                }
                watcher.pending.add(0)
                await watcher.slots.acquire()
                await proc.stdin.send(_line({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}))
                sent = 1
                await watcher.handshake_seen.wait()
                if watcher.handshake is None or "result" not in watcher.handshake:
                    problems.append(f"initialize was not answered with a result: {watcher.handshake!r:.200}")
                else:
                    revision = watcher.handshake["result"].get("protocolVersion")
                    if isinstance(revision, str):
                        ctx.record_revision("stdout_purity:500_frames", revision)
                    # Evenly spaced sends keep every one-second interval (sliding or fixed) under the bound.
                    spacing = 1.0 / PURITY_FRAMES_PER_SECOND
                    next_at = time.monotonic() + spacing
                    for ident, line in plan:
                        if watcher.eof:
                            break
                        await anyio.sleep(max(0.0, next_at - time.monotonic()))
                        next_at = max(next_at, time.monotonic()) + spacing
                        if ident is not None:
                            await watcher.slots.acquire()
                            if watcher.eof:
                                break
                            watcher.pending.add(ident)
                        await proc.stdin.send(line)
                        sent += 1
                    while watcher.pending and not watcher.eof:
                        await watcher.changed.wait()
        except TimeoutError:
            problems.append(f"ran out of time with {len(watcher.pending)} requests unanswered")
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            problems.append(f"stdin closed after {sent} frames ({type(exc).__name__})")
        await proc.stdin.aclose()
        with anyio.move_on_after(max(1.0, min(10.0, ctx.remaining() - 1))):
            await proc.wait()
        if proc.returncode is None:
            proc.kill()
        tg.cancel_scope.deadline = time.monotonic() + 5
    if watcher.pending:
        problems.append(f"{len(watcher.pending)} requests never answered (e.g. ids {sorted(watcher.pending)[:5]})")
    if watcher.bad:
        shown = "; ".join(repr(b) for b in watcher.bad[:3])
        problems.append(f"{len(watcher.bad)} of {watcher.lines} stdout lines are not JSON-RPC: {shown}")
    errors = sum(1 for v in watcher.answered.values() if v == "error")
    data = {"frames_sent": sent, "stdout_lines": watcher.lines, "answered": len(watcher.answered), "errors": errors}
    if sent < PURITY_FRAMES and not problems:
        problems.append(f"only {sent} of {PURITY_FRAMES} frames could be sent")
    if problems:
        return CheckResult(False, "; ".join(problems) + f" (stderr: {tail(stderr)})", data)
    return CheckResult(
        True,
        f"{sent} frames sent, {watcher.lines} stdout lines all JSON-RPC, "
        f"{len(watcher.answered)} requests answered ({errors} with errors)",
        data,
    )
