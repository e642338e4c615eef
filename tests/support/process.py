"""A harness that spawns ``mcp serve`` and speaks newline-delimited JSON-RPC to it."""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ANSWER_SECONDS = 30.0
"""How long a test waits for a line: generous, since a loaded 2-core machine starts Python slowly."""


def wait_for(condition: Any, seconds: float = ANSWER_SECONDS) -> Any:
    """Poll ``condition`` until it returns something true, and return that; TimeoutError after ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    raise TimeoutError("condition not met in time")


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie does not); Linux ``/proc``."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "tests", "version": "1"}},
}


class ServerProcess:
    """``python -m shadowcode --workspace P mcp serve`` with pipes; always :meth:`close` it.

    The server runs in the spawned process itself (``SHADOWCODE_STDIO_FRONT=0``), so tests of
    its behaviour see its own process, memory and children; ``front=True`` keeps the stdio
    front in front of it, as a host starts it.
    """

    def __init__(self, workspace: Path, home: Path, *extra: str, front: bool = False) -> None:
        env = dict(os.environ, SHADOWCODE_HOME=str(home))
        if not front:
            env["SHADOWCODE_STDIO_FRONT"] = "0"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "shadowcode", "--workspace", str(workspace), "mcp", "serve", *extra],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        self._buffer = b""
        os.set_blocking(self.proc.stdout.fileno(), False)  # type: ignore[union-attr]

    def send_raw(self, data: bytes) -> None:
        """Write bytes to the server's stdin; a broken pipe is ignored (the server may have closed)."""
        try:
            self.proc.stdin.write(data)  # type: ignore[union-attr]
            self.proc.stdin.flush()  # type: ignore[union-attr]
        except BrokenPipeError:
            pass

    def send(self, message: dict[str, Any]) -> None:
        """Write one JSON-RPC frame."""
        self.send_raw(json.dumps(message).encode() + b"\n")

    def read_line(self, timeout: float = ANSWER_SECONDS) -> bytes | None:
        """The next stdout line, or None at EOF. Raises TimeoutError after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        out = self.proc.stdout
        assert out is not None
        with selectors.DefaultSelector() as sel:
            sel.register(out, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("no line from the server in time")
                if not sel.select(left):
                    continue
                chunk = os.read(out.fileno(), 65536)
                if not chunk:
                    return None
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def read_until_response(self, request_id: int | str, timeout: float = ANSWER_SECONDS) -> dict[str, Any]:
        """Read frames until the response to ``request_id``; every line must be JSON-RPC."""
        deadline = time.monotonic() + timeout
        while True:
            line = self.read_line(max(0.01, deadline - time.monotonic()))
            if line is None:
                raise EOFError("the server closed stdout before answering")
            doc = json.loads(line)
            assert doc.get("jsonrpc") == "2.0", line
            if doc.get("id") == request_id:
                return doc

    def initialize(self) -> dict[str, Any]:
        """Run the legacy handshake; returns the initialize result. On failure the process is closed."""
        self.send(INIT)
        try:
            result = self.read_until_response(0)
        except BaseException:
            self.close()
            raise
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return result

    def wait_exit(self, timeout: float = ANSWER_SECONDS) -> int:
        """Wait for the process to exit; returns its status."""
        return self.proc.wait(timeout=timeout)

    def stderr_text(self) -> str:
        """All of stderr (only after the process exited)."""
        assert self.proc.stderr is not None
        return self.proc.stderr.read().decode("utf-8", "replace")

    def peak_rss_kib(self) -> int:
        """The process's peak resident set (``VmHWM`` in ``/proc/<pid>/status``), in KiB; 0 once it exited."""
        try:
            status = Path(f"/proc/{self.proc.pid}/status").read_text(encoding="utf-8")
        except OSError:
            return 0
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
        return 0

    def child_pids(self) -> list[int]:
        """Direct children of the server process (Linux ``/proc``); empty once it exited."""
        pids: list[int] = []
        for task in Path(f"/proc/{self.proc.pid}/task").glob("*"):
            try:
                pids += [int(p) for p in (task / "children").read_text(encoding="utf-8").split()]
            except OSError:
                continue
        return pids

    def close(self) -> None:
        """Close stdin, then terminate and reap the process if it is still running."""
        try:
            self.proc.stdin.close()  # type: ignore[union-attr]
        except BrokenPipeError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


def stop_process(proc: subprocess.Popen[bytes], grace_seconds: float = 5.0) -> None:
    """SIGTERM, then SIGKILL after ``grace_seconds``; reaped, and its pipes closed."""
    proc.terminate()
    try:
        proc.wait(timeout=grace_seconds)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=grace_seconds)
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()
