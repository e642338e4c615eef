"""``--attached`` runs: each check meets a running ``<target> engine``, stopped before the straggler sweep."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import anyio
import pytest

from shadowcode_conformance.cli import main
from shadowcode_conformance.context import Context, EngineMode
from shadowcode_conformance.registry import Check, CheckResult, load_checks
from shadowcode_conformance.runner import run_checks

SUITE = Path(__file__).resolve().parents[1] / "shadowcode_conformance"

# A target with just enough of a headless engine: `engine` writes its pid into the profile
# and blocks until SIGTERM; `engine status` reads that pid; `engine stop` signals it. Every
# start and stop is appended to LOG; SIGTERM ends it, SIGUSR1 makes it quit with status 0
# while its pid file stays. MODE "never-ready" makes it exit 1 at once instead.
FAKE_ENGINE = r"""
import json, os, signal, sys
args = sys.argv[1:]
home = os.environ["SHADOWCODE_HOME"]
pidfile = os.path.join(home, "engine.pid")

def note(what):
    with open(LOG, "a", encoding="utf-8") as f:
        f.write(json.dumps({"event": what, "home": home, "pid": os.getpid()}) + "\n")

def alive():
    try:
        with open(pidfile, encoding="utf-8") as f:
            os.kill(int(f.read()), 0)
        return True
    except (OSError, ValueError):
        return False

if "--json" in args and "serve" in args:
    sys.stderr.write("refused: --json with mcp serve\n")
    sys.exit(2)
if args[-2:] == ["engine", "status"]:
    print(json.dumps({"running": alive()}))
    sys.exit(0 if alive() else 3)
if args[-2:] == ["engine", "stop"]:
    if alive():
        with open(pidfile, encoding="utf-8") as f:
            os.kill(int(f.read()), signal.SIGTERM)
    sys.exit(0)
if args[-1:] == ["engine"]:
    note("start")
    if MODE == "never-ready":
        sys.stderr.write("cannot open the control socket\n")
        sys.exit(1)
    def stop(signum, frame):
        note("term")
        os.remove(pidfile)
        sys.exit(0)
    def leave(signum, frame):
        note("quit")
        sys.exit(0)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGUSR1, leave)
    with open(pidfile, "w", encoding="utf-8") as f:
        f.write(str(os.getpid()))
    sys.stderr.write("engine ready\n")
    while True:
        signal.pause()
sys.exit(0)
"""


def fake_engine_target(folder: Path, mode: str = "") -> tuple[list[str], Path]:
    """A fake target whose ``engine`` behaves as ``mode`` says; its argv and its event log."""
    log = folder / "engine-events.jsonl"
    script = folder / "fake_engine_target.py"
    script.write_text(f"LOG = {str(log)!r}\nMODE = {mode!r}\n" + FAKE_ENGINE, encoding="utf-8")
    return [sys.executable, str(script)], log


def events(log: Path) -> list[dict[str, object]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def stand_in_project(dest: Path) -> Path:
    dest.mkdir(parents=True)
    (dest / "README.md").write_text("# stand-in\n", encoding="utf-8")
    return dest.resolve()


def _check(name: str, fn, *, own_engine: bool = False, timeout: float = 20.0) -> Check:
    return Check(name=name, group="unit", covers=("ENG-03",), fn=fn, timeout_seconds=timeout, own_engine=own_engine)


def _run(checks: list[Check], target: list[str], engine: EngineMode = EngineMode.ATTACHED, jobs: int = 2):
    async def go():
        with anyio.fail_after(60):
            return await run_checks(
                checks,
                target=target,
                cwd=Path.cwd(),
                repo_root=SUITE,
                project_factory=stand_in_project,
                jobs=jobs,
                engine=engine,
            )

    return anyio.run(go)


def _engine_pid(ctx: Context) -> int | None:
    pidfile = ctx.home / "engine.pid"
    return int(pidfile.read_text(encoding="utf-8")) if pidfile.exists() else None


@pytest.mark.req("ENG-03", "CONF-01")
def test_attached_run_gives_each_check_a_ready_engine_and_stops_it_with_sigterm(tmp_path: Path) -> None:
    target, log = fake_engine_target(tmp_path)
    seen: dict[str, tuple[EngineMode, int | None]] = {}

    async def look(ctx: Context) -> CheckResult:
        status = await ctx.run([*ctx.target, "--json", "engine", "status"], timeout_seconds=10)
        seen[str(ctx.home)] = (ctx.engine, _engine_pid(ctx))
        return CheckResult(status.returncode == 0, f"engine status exit {status.returncode}")

    outcome = _run([_check("one", look), _check("two", look)], target)
    assert [r.ok for r in outcome.records] == [True, True], [r.detail for r in outcome.records]
    assert all("killed" not in r.detail for r in outcome.records)
    assert len(seen) == 2 and all(mode is EngineMode.ATTACHED and pid for mode, pid in seen.values())
    by_home: dict[str, list[str]] = {}
    for e in events(log):
        by_home.setdefault(str(e["home"]), []).append(str(e["event"]))
    assert by_home == {home: ["start", "term"] for home in seen}


@pytest.mark.req("ENG-03", "CONF-01")
def test_own_engine_checks_and_temporary_runs_start_no_engine(tmp_path: Path) -> None:
    target, log = fake_engine_target(tmp_path)
    modes: list[tuple[str, EngineMode, int | None]] = []

    async def look(ctx: Context) -> CheckResult:
        modes.append((ctx.home.parent.name, ctx.engine, _engine_pid(ctx)))
        return CheckResult(True, "looked")

    outcome = _run([_check("own", look, own_engine=True)], target)
    outcome_temporary = _run([_check("plain", look)], target, engine=EngineMode.TEMPORARY)
    assert outcome.records[0].ok and outcome_temporary.records[0].ok
    assert [(mode, pid) for _, mode, pid in modes] == [(EngineMode.TEMPORARY, None)] * 2
    assert events(log) == []


@pytest.mark.req("ENG-03", "CONF-01")
def test_an_engine_that_never_gets_ready_fails_the_check_without_running_it(tmp_path: Path) -> None:
    target, _ = fake_engine_target(tmp_path, "never-ready")
    ran: list[str] = []

    async def never(ctx: Context) -> CheckResult:
        ran.append(ctx.home.name)
        return CheckResult(True, "must not run")

    [record] = _run([_check("needs_engine", never)], target).records
    assert not record.ok and not ran
    assert "headless engine started for this check" in record.detail
    assert "did not become ready" in record.detail and "cannot open the control socket" in record.detail


@pytest.mark.req("ENG-03", "CONF-01")
def test_an_engine_gone_before_the_check_ends_fails_the_check(tmp_path: Path) -> None:
    target, log = fake_engine_target(tmp_path)

    async def outlasts(ctx: Context) -> CheckResult:
        pid = _engine_pid(ctx)
        assert pid is not None
        os.kill(pid, signal.SIGUSR1)
        with anyio.fail_after(10):
            while Path(f"/proc/{pid}").exists():
                await anyio.sleep(0.05)
        return CheckResult(True, "fine on its own")

    [record] = _run([_check("outlasted", outlasts)], target).records
    assert not record.ok
    assert record.detail.startswith("fine on its own; ")
    assert "exited 0 before the check ended" in record.detail or "no longer ran" in record.detail
    assert [e["event"] for e in events(log)] == ["start", "quit"]


@pytest.mark.req("ENG-03", "SRV-21")
def test_engine_lifecycle_and_temporary_engine_checks_declare_their_own_engine() -> None:
    checks = load_checks()
    own = {name for name, c in checks.items() if c.own_engine}
    assert {name for name in checks if name.startswith("engine_lifecycle:")} <= own
    assert {
        "delegation:detached_task_survives_owner_eof",
        "delegation:stdin_eof_cancels_task",
        "gateway:kill_scenario",
        "project_isolation:server_leaves_nothing_behind",
    } <= own
    assert not checks["delegation:sigkill_cancels_task"].own_engine
    assert not checks["python_client:auto"].own_engine and not checks["python_client:legacy"].own_engine


@pytest.mark.req("CONF-01")
def test_list_with_attached_marks_which_checks_get_the_engine(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--list", "--attached", "--only", "engine_lifecycle:second_engine_refused,python_client:auto"]) == 0
    rows = dict(line.split("\t", 1) for line in capsys.readouterr().out.splitlines())
    lifecycle = "https://modelcontextprotocol.io/specification/2025-11-25/basic/lifecycle"
    ids = " ".join(f"REQUIREMENTS.md#{i}" for i in ("SRV-03", "SRV-04", "SRV-05", "SRV-06", "SRV-20"))
    assert rows == {
        "engine_lifecycle:second_engine_refused": "ENG-03\town engine\tREQUIREMENTS.md#ENG-03",
        "python_client:auto": f"SRV-03,SRV-04,SRV-05,SRV-06,SRV-20\tattached\t{lifecycle} {ids}",
    }


def _stand_in_fixture(folder: Path) -> Path:
    fixture = folder / "stand_in_fixture.py"
    fixture.write_text(
        "from pathlib import Path\n"
        "def make_sample_project(dest):\n"
        "    dest = Path(dest); dest.mkdir(parents=True); (dest / 'README.md').write_text('x\\n', encoding='utf-8')\n"
        "    return dest\n",
        encoding="utf-8",
    )
    return fixture


@pytest.mark.req("CONF-01")
@pytest.mark.parametrize(("flags", "mode"), [(["--attached"], "attached"), ([], "temporary")])
def test_report_names_the_engine_mode_of_the_run(
    tmp_path: Path, flags: list[str], mode: str, capsys: pytest.CaptureFixture[str]
) -> None:
    target, log = fake_engine_target(tmp_path)
    out = tmp_path / "out"
    argv = ["--target", " ".join(target), "--only", "cli_usage:json_serve_refused", "--out", str(out)]
    argv += ["--fixture", str(_stand_in_fixture(tmp_path)), "--no-expected-failures", *flags]
    assert main(argv) == 0, capsys.readouterr().err
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["engine"] == mode
    assert f"- Engine: {mode}" in (out / "report.md").read_text(encoding="utf-8")
    assert [e["event"] for e in events(log)] == (["start", "term"] if flags else [])
