"""A headless Chromium from the system's packages, driven over the DevTools protocol on a pipe.

``chromium --remote-debugging-pipe`` reads DevTools commands on its fd 3 and writes replies and
events on its fd 4, each a JSON object followed by a NUL byte; no port is opened and nothing is
downloaded. :func:`headless_chromium` starts one with a fresh profile folder and stops it (its
whole process group) when the block ends. Every wait is bounded.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

__all__ = ["Browser", "chromium_path", "headless_chromium"]

_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--remote-debugging-pipe",
)
_WAIT_SECONDS = 20.0
_TRAMPOLINE = (
    "import os, sys; os.dup2(int(sys.argv[1]), 3); os.dup2(int(sys.argv[2]), 4); os.execv(sys.argv[3], sys.argv[3:])"
)


def chromium_path() -> str | None:
    """The system's Chromium (``chromium`` or ``chromium-browser`` on PATH), or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    """One page of a running headless Chromium, driven through DevTools commands."""

    def __init__(self, proc: subprocess.Popen[bytes], to_browser: int, from_browser: int) -> None:
        self.proc = proc
        self._out = to_browser
        self._in = from_browser
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict[str, Any]] = []
        self.session = ""

    def command(self, method: str, params: dict[str, Any] | None = None, *, session: bool = True) -> dict[str, Any]:
        """Send one command (to the page's session unless ``session`` is False); returns its result.

        Raises:
            AssertionError: an error reply, or no reply within the bound.
        """
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self._out, json.dumps(message).encode() + b"\0")
        reply = self._until(lambda m: m.get("id") == self._next_id, f"the reply to {method}")
        assert "error" not in reply, f"{method}: {reply['error']}"
        return dict(reply.get("result") or {})

    def open_page(self) -> None:
        """Attach to a new blank page and enable its page events."""
        target = self.command("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        attached = self.command("Target.attachToTarget", {"targetId": target, "flatten": True}, session=False)
        self.session = attached["sessionId"]
        self.command("Page.enable")

    def navigate(self, url: str) -> None:
        """Load ``url`` and wait for its load event."""
        self._events.clear()
        self.command("Page.navigate", {"url": url})
        self.wait_loaded()

    def wait_loaded(self) -> None:
        """Wait for the page's next load event."""
        self._until(lambda m: m.get("method") == "Page.loadEventFired", "a page load", keep=False)

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page."""
        result = self.command("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        return result.get("result", {}).get("value")

    def click_and_wait(self, element_id: str) -> None:
        """Click the element with ``id`` (a submit button) and wait for the page it loads."""
        self._events.clear()
        self.evaluate(f"document.getElementById({json.dumps(element_id)}).click()")
        self.wait_loaded()

    def status_of_last_load(self) -> int | None:
        """The HTTP status of the last document loaded, from the page's navigation timing."""
        return self.evaluate("performance.getEntriesByType('navigation')[0].responseStatus")  # type: ignore[no-any-return]

    def _until(self, wanted: Any, what: str, keep: bool = True) -> dict[str, Any]:
        for message in list(self._events):
            if wanted(message):
                self._events.remove(message)
                return message
        deadline = time.monotonic() + _WAIT_SECONDS
        while True:
            while b"\0" in self._buffer:
                raw, _, self._buffer = self._buffer.partition(b"\0")
                message = json.loads(raw)
                if wanted(message):
                    return message  # type: ignore[no-any-return]
                if keep or "id" not in message:
                    self._events.append(message)
            left = deadline - time.monotonic()
            assert left > 0, f"Chromium sent no {what} within {_WAIT_SECONDS:g} s"
            ready, _, _ = select.select([self._in], [], [], left)
            if ready:
                chunk = os.read(self._in, 1 << 16)
                assert chunk, "Chromium closed its DevTools pipe"
                self._buffer += chunk


@contextmanager
def headless_chromium(profile_dir: Path) -> Iterator[Browser]:
    """A headless Chromium with a fresh ``--user-data-dir`` and one open page; stopped at the end.

    Raises:
        AssertionError: no Chromium is installed (check :func:`chromium_path` first).
    """
    program = chromium_path()
    assert program is not None, "no chromium on PATH"
    browser_reads, we_write = os.pipe()
    we_read, browser_writes = os.pipe()
    # The DevTools pipe must be the child's fds 3 and 4: a small Python moves them there, then becomes
    # Chromium (a POSIX shell only names descriptors 0 to 9).
    argv = [sys.executable, "-c", _TRAMPOLINE, str(browser_reads), str(browser_writes)]
    argv += [program, *_FLAGS, f"--user-data-dir={profile_dir}", "about:blank"]
    proc = subprocess.Popen(
        argv,
        pass_fds=(browser_reads, browser_writes),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    os.close(browser_reads)
    os.close(browser_writes)
    try:
        browser = Browser(proc, we_write, we_read)
        browser.open_page()
        yield browser
    finally:
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # helpers left in the group
        os.close(we_write)
        os.close(we_read)
