"""Helpers shared by the engine, job-tool and task CLI tests.

- scripted models: write a model script and register it in a profile's settings;
- bounded waits on job state, approvals and files (every wait has a deadline);
- the CLI and the headless engine as real processes, always cleaned up;
- a command that records its pid and sleeps, to check process cleanup by pid.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio

from shadowcode.engine.approvals import Approvals
from shadowcode.engine.local import LocalEngine
from shadowcode.engine.projects import Project
from shadowcode.engine.tasks import TaskRecords
from shadowcode.enums import PermissionLevel, TaskStatus
from shadowcode.process_group import pids_alive
from shadowcode.profile import Profile
from shadowcode.store.approvals import ApprovalRecord
from shadowcode.store.tasks import TaskRecord
from tests.support.process import stop_process

__all__ = [
    "FINISHED",
    "PY",
    "REPO",
    "HeadlessEngine",
    "cli",
    "cli_env",
    "configure_models",
    "group_gone",
    "headless_engine",
    "openai_server",
    "scripted_model",
    "sleeper_argv",
    "wait_approval",
    "wait_for",
    "wait_for_sync",
    "wait_pidfile",
    "wait_status",
    "write_script",
]

PY = sys.executable
REPO = Path(__file__).resolve().parents[2]
FINISHED = tuple(status for status in TaskStatus if not status.active)
_POLL_SECONDS = 0.02


def trust_workspace(engine: LocalEngine, folder: Path) -> Project:
    """Trust ``folder`` at level ``workspace`` in ``engine``'s profile; returns the project."""
    state = engine.state
    return state.projects.trust(state.project_at(folder).path, PermissionLevel.WORKSPACE)


def enable_server(engine: LocalEngine, project: Project, def_id: str) -> None:
    """Enable the MCP definition ``def_id`` of ``project`` at its current hash."""
    registry = engine.state.mcp_servers
    definition = next(d for d in registry.definitions(project.path) if d.id == def_id)
    registry.enable(project.path, def_id, definition.sha256, trusted=True)  # type: ignore[union-attr]


def write_script(path: Path, tasks: list[dict[str, Any]]) -> Path:
    """Write a model script (JSON) holding ``tasks`` entries; returns ``path``."""
    path.write_text(json.dumps({"tasks": tasks}), encoding="utf-8")
    return path


def configure_models(profile: Profile, *entries: dict[str, Any], default: str | None = None) -> None:
    """Replace the profile's configured models with ``entries`` (settings.json)."""
    profile.ensure()
    doc: dict[str, Any] = {"models": list(entries)}
    if default is not None:
        doc["default_model"] = default
    profile.settings_path.write_text(json.dumps(doc), encoding="utf-8")


def scripted_model(
    profile: Profile,
    script: Path,
    tasks: list[dict[str, Any]],
    *,
    name: str = "scripted",
    request_log: Path | None = None,
) -> None:
    """Write ``tasks`` to ``script`` and make it the profile's only (default) model."""
    write_script(script, tasks)
    entry: dict[str, Any] = {"name": name, "provider": "scripted", "script": str(script)}
    if request_log is not None:
        entry["request_log"] = str(request_log)
    configure_models(profile, entry, default=name)


async def wait_for(check: Callable[[], Any], *, timeout: float = 30.0, what: str = "a condition") -> Any:
    """Poll ``check`` until it returns something truthy; returns it. Fails after ``timeout`` seconds."""
    try:
        with anyio.fail_after(timeout):
            while True:
                found = check()
                if found:
                    return found
                await anyio.sleep(_POLL_SECONDS)
    except TimeoutError:
        raise AssertionError(f"timed out after {timeout} s waiting for {what}") from None


def wait_for_sync(check: Callable[[], Any], *, timeout: float = 30.0, what: str = "a condition") -> Any:
    """The blocking form of :func:`wait_for`, for tests that drive processes."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(_POLL_SECONDS)


async def wait_status(
    records: TaskRecords, task_id: str, statuses: tuple[str, ...] = FINISHED, *, timeout: float = 30.0
) -> TaskRecord:
    """Wait until the task's status is one of ``statuses``; returns the task."""

    def check() -> TaskRecord | None:
        task = records.get(task_id)
        return task if task.status in statuses else None

    return await wait_for(check, timeout=timeout, what=f"{task_id} to reach {statuses}")  # type: ignore[no-any-return]


async def wait_approval(approvals: Approvals, task_id: str, *, timeout: float = 30.0) -> ApprovalRecord:
    """Wait for the task's first pending approval; returns it."""

    def check() -> ApprovalRecord | None:
        pending = approvals.pending(task_id=task_id)
        return pending[0] if pending else None

    return await wait_for(check, timeout=timeout, what=f"a pending approval of {task_id}")  # type: ignore[no-any-return]


def sleeper_argv(pidfile: Path, seconds: int = 60) -> list[str]:
    """A command that writes its pid to ``pidfile`` (atomically) and then sleeps."""
    code = (
        "import os, sys, time\n"
        "tmp = sys.argv[1] + '.tmp'\n"
        "open(tmp, 'w').write(str(os.getpid()))\n"
        "os.replace(tmp, sys.argv[1])\n"
        f"time.sleep({seconds})\n"
    )
    return [PY, "-c", code, str(pidfile)]


async def wait_pidfile(pidfile: Path, *, timeout: float = 30.0) -> int:
    """Wait for :func:`sleeper_argv` to report its pid; returns it."""
    text = await wait_for(
        lambda: pidfile.exists() and pidfile.read_text(encoding="utf-8"), timeout=timeout, what=str(pidfile)
    )
    return int(text)


def _pid_running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 :][:1] not in (b"Z", b"X")


def group_gone(pid: int) -> bool:
    """True when ``pid`` no longer runs and its process group (it leads one) has no live member."""
    return not _pid_running(pid) and not pids_alive(pid)


def cli_env(home: Path) -> dict[str, str]:
    """The environment for a CLI or engine process under ``home``."""
    return dict(os.environ, SHADOWCODE_HOME=str(home), PYTHONWARNDEFAULTENCODING="1")


def cli(
    home: Path, *args: str, workspace: Path | None = None, timeout: float = 30.0
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m shadowcode [--workspace W] ARGS`` with ``SHADOWCODE_HOME=home``; returns the result."""
    prefix = ["--workspace", str(workspace)] if workspace is not None else []
    return subprocess.run(
        [PY, "-m", "shadowcode", *prefix, *args],
        env=cli_env(home),
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


class HeadlessEngine:
    """A ``shadowcode engine`` process for one SHADOWCODE_HOME; use through :func:`headless_engine`."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.profile = Profile(name="default", root=home / "profiles" / "default")
        self.stderr_path = home.parent / f"engine-{time.monotonic_ns()}.stderr"
        home.mkdir(parents=True, exist_ok=True)
        self._stderr = self.stderr_path.open("wb")
        self.proc = subprocess.Popen(
            [PY, "-m", "shadowcode", "engine"],
            env=cli_env(home),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._stderr,
        )

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Wait until the engine reports it is ready (it then accepts connections)."""

        def ready() -> bool:
            if self.proc.poll() is not None:
                raise AssertionError(f"the engine exited early ({self.proc.returncode}): {self.stderr()}")
            return "engine ready" in self.stderr()

        wait_for_sync(ready, timeout=timeout, what="the headless engine to be ready")

    def stderr(self) -> str:
        """What the engine wrote on stderr so far."""
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")

    def kill(self) -> None:
        """SIGKILL the engine and reap it."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)

    def close(self) -> None:
        """SIGTERM, then SIGKILL after a bounded wait; always reaps and closes the stderr file."""
        try:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=10)
        finally:
            self._stderr.close()


@contextmanager
def headless_engine(home: Path, *, ready: bool = True) -> Iterator[HeadlessEngine]:
    """Start ``shadowcode engine`` under ``home``, wait until ready, and always stop it afterwards."""
    engine = HeadlessEngine(home)
    try:
        if ready:
            engine.wait_ready()
        yield engine
    finally:
        engine.close()


@contextmanager
def openai_server(*args: str, timeout: float = 30.0) -> Iterator[str]:
    """Run the fixtures' ``openai_server.py ARGS`` on a free loopback port; yields its base URL; always stopped."""
    proc = subprocess.Popen(
        [PY, str(REPO / "conformance/shadowcode_conformance/fixtures" / "openai_server.py"), "--port", "0", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert proc.stdout is not None
        os.set_blocking(proc.stdout.fileno(), False)
        seen = bytearray()

        def ready() -> bool:
            try:
                chunk = os.read(proc.stdout.fileno(), 4096)  # type: ignore[union-attr]
            except BlockingIOError:
                chunk = b""
            seen.extend(chunk)
            if proc.poll() is not None and not chunk:
                raise AssertionError(f"the fixture server exited early ({proc.returncode})")
            return b"\n" in seen

        wait_for_sync(ready, timeout=timeout, what="the fixture model server")
        line = seen.split(b"\n", 1)[0].decode("utf-8")
        assert line.startswith("READY "), line
        yield line.split(" ", 1)[1]
    finally:
        stop_process(proc)
