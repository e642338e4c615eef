"""Background processes: started by a tool, owned by the process manager, not by a task (SRV-23).

Contract:
- A background process is a :class:`shadowcode.process_group.GroupChild` (its own process
  group, stdin from ``/dev/null``, stdout and stderr merged). Cancelling the task or the
  connection that started one leaves it running until :meth:`BackgroundProcesses.stop` or
  until :meth:`BackgroundProcesses.close` hands every one over to be finished.
- A daemon thread drains its output into a ring buffer of ``BACKGROUND_OUTPUT_MAX_BYTES``
  (newest bytes kept), so a chatty process never blocks on a full pipe.
- At most ``BACKGROUND_PROCESSES_MAX`` run at once; each belongs to one canonical project and
  listings, outputs and stops can be confined to it.
"""

from __future__ import annotations

import os
import secrets
import selectors
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from shadowcode.errors import NotFound, ToolError
from shadowcode.limits import BACKGROUND_OUTPUT_MAX_BYTES, BACKGROUND_PROCESSES_MAX, PROCESS_PIPE_DRAIN_SECONDS
from shadowcode.process_group import GroupChild, OutputTail

__all__ = ["BackgroundProcess", "BackgroundProcesses"]

_READ_CHUNK_BYTES = 65536
"""Bytes asked of one pipe read; a read size, not a limit."""


def _drain_thread(fd: int, wake_fd: int, tail: OutputTail) -> None:
    """Background output reader: runs until end of file or until woken through ``wake_fd``."""
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        sel.register(wake_fd, selectors.EVENT_READ)
        while True:
            for key, _ in sel.select():
                if key.fd == wake_fd:
                    return
                try:
                    chunk = os.read(fd, _READ_CHUNK_BYTES)
                except BlockingIOError:
                    continue
                except OSError:
                    return
                if not chunk:
                    return
                tail.add(chunk)


@dataclass
class BackgroundProcess:
    """One background process, its output tail and the thread draining its pipe."""

    id: str
    child: GroupChild
    argv: list[str]
    cwd: Path
    project: Path
    started_at: int
    tail: OutputTail
    thread: threading.Thread
    wake_r: int
    wake_w: int

    def info(self) -> dict[str, Any]:
        """``{"id", "pid", "argv", "cwd", "project", "started_at", "running", "exit_code", "signal"}``."""
        status = self.child.exit_status()
        return {
            "id": self.id,
            "pid": self.child.pid,
            "argv": list(self.argv),
            "cwd": str(self.cwd),
            "project": str(self.project),
            "started_at": self.started_at,
            "running": status is None,
            "exit_code": None if status is None else status[0],
            "signal": None if status is None else status[1],
        }

    async def finish(self) -> None:
        """Stop the group (TERM, grace, KILL, reap), let the drain thread read what is left, close the pipes."""
        await self.child.stop()
        await anyio.to_thread.run_sync(self.thread.join, PROCESS_PIPE_DRAIN_SECONDS)
        os.write(self.wake_w, b"x")
        await anyio.to_thread.run_sync(self.thread.join)
        self.child.close_pipe()
        os.close(self.wake_r)
        os.close(self.wake_w)


class BackgroundProcesses:
    """The running background processes of one process manager (SRV-23)."""

    def __init__(self) -> None:
        self._entries: dict[str, BackgroundProcess] = {}
        self._closed = False

    def start(self, argv: list[str], cwd: Path, env: dict[str, str], project: Path) -> dict[str, Any]:
        """Start a process that outlives the task and connection that asked for it (SRV-23).

        Args:
            argv: the literal command line.
            cwd: the folder to run in.
            env: the child's complete environment.
            project: the canonical project it belongs to; listings and stops can filter on it.

        Returns:
            ``{"id": "bg_<hex>", "pid": int, "argv": [str], "cwd": str, "started_at": int}``
            (``started_at`` in Unix seconds).

        Raises:
            ToolError: bad arguments, the command cannot be started, ``BACKGROUND_PROCESSES_MAX``
                processes already run, or the manager is closed.
        """
        if self._closed:
            raise ToolError("the process manager is closed")
        if len(self._entries) >= BACKGROUND_PROCESSES_MAX:
            raise ToolError(
                f"at most {BACKGROUND_PROCESSES_MAX} background processes may run; stop one first",
                limit=BACKGROUND_PROCESSES_MAX,
            )
        child = GroupChild(argv, cwd, env)
        tail = OutputTail(BACKGROUND_OUTPUT_MAX_BYTES)
        wake_r, wake_w = os.pipe()
        thread = threading.Thread(
            target=_drain_thread, args=(child.out_fd, wake_r, tail), name=f"bg-output-{child.pid}", daemon=True
        )
        entry = BackgroundProcess(
            id=f"bg_{secrets.token_hex(8)}",
            child=child,
            argv=list(argv),
            cwd=Path(cwd),
            project=Path(project),
            started_at=int(time.time()),
            tail=tail,
            thread=thread,
            wake_r=wake_r,
            wake_w=wake_w,
        )
        thread.start()
        self._entries[entry.id] = entry
        return {
            "id": entry.id,
            "pid": child.pid,
            "argv": list(entry.argv),
            "cwd": str(entry.cwd),
            "started_at": entry.started_at,
        }

    def listing(self, project: Path | None = None) -> list[dict[str, Any]]:
        """The background processes not yet stopped, oldest first (SRV-23).

        Args:
            project: when given, only that project's processes.

        Returns:
            ``[{"id", "pid", "argv", "cwd", "project", "started_at", "running", "exit_code", "signal"}]``;
            an exited process stays listed (unreaped) until it is stopped.
        """
        return [b.info() for b in self._entries.values() if project is None or b.project == Path(project)]

    def output(self, bg_id: str, *, project: Path | None = None) -> dict[str, Any]:
        """The kept tail of a background process's output (SRV-23).

        Args:
            bg_id: the id returned by :meth:`start`.
            project: when given, an id of another project is treated as unknown.

        Returns:
            ``{"id", "output": str, "truncated": bool, "running": bool}``.

        Raises:
            NotFound: no such running background process (in this project).
        """
        entry = self._find(bg_id, project)
        return {
            "id": entry.id,
            "output": entry.tail.text(),
            "truncated": entry.tail.truncated,
            "running": entry.child.exit_status() is None,
        }

    async def stop(self, bg_id: str, *, project: Path | None = None) -> dict[str, Any]:
        """Stop a background process group: TERM, grace, KILL, reap (SRV-23).

        Args:
            bg_id: the id returned by :meth:`start`.
            project: when given, an id of another project is treated as unknown.

        Returns:
            ``{"id", "pid", "exit_code", "signal", "output", "truncated"}`` (final output tail).

        Raises:
            NotFound: no such background process (in this project).
        """
        entry = self._find(bg_id, project)
        del self._entries[entry.id]
        with anyio.CancelScope(shield=True):
            await entry.finish()
        status = entry.child.exit_status() or (None, None)
        return {
            "id": entry.id,
            "pid": entry.child.pid,
            "exit_code": status[0],
            "signal": status[1],
            "output": entry.tail.text(),
            "truncated": entry.tail.truncated,
        }

    def close(self) -> list[BackgroundProcess]:
        """Refuse new processes and forget the running ones.

        Returns:
            The processes that were running, for the caller to :meth:`~BackgroundProcess.finish`.
        """
        self._closed = True
        entries = list(self._entries.values())
        self._entries.clear()
        return entries

    def _find(self, bg_id: str, project: Path | None) -> BackgroundProcess:
        entry = self._entries.get(bg_id)
        if entry is None or (project is not None and entry.project != Path(project)):
            raise NotFound(f"no background process {bg_id!r}", background_id=bg_id)
        return entry
