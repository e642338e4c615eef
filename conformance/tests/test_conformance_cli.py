"""Command-line behaviour of ``python -m shadowcode_conformance``: usage errors exit 2, reports and exit status."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from check_runs import SUITE, conformance_env, needs_product, wait_for

from shadowcode_conformance.cli import main, parse_target
from shadowcode_conformance.requirements import requirement_ids


@pytest.mark.req("CONF-01")
def test_target_is_split_like_a_shell() -> None:
    assert parse_target('python3 "dist/my app.pyz"') == ["python3", "dist/my app.pyz"]


@pytest.mark.req("CONF-01")
@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--target", ""],
        ["--target", "python3 'unbalanced"],
        ["--target", "x", "--jobs", "0"],
        ["--target", "x", "--only", "no_such_check_anywhere"],
        ["--target", "x", "--fixture", "does/not/exist.py"],
        ["--bogus"],
    ],
)
def test_bad_usage_exits_2_with_a_message(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("conformance: ") and captured.out == ""


@pytest.mark.req("CONF-01")
def test_list_shows_checks_with_their_ids(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--list", "--only", "cli_usage"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines and all(line.startswith("cli_usage:") for line in lines)
    assert any("SRV-02" in line for line in lines)


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
@pytest.mark.slow
@needs_product
def test_end_to_end_cli_usage_run_against_the_source_tree_writes_reports(tmp_path: Path) -> None:
    out = tmp_path / "out"
    argv = [
        sys.executable,
        "-m",
        "shadowcode_conformance",
        "--target",
        f"{sys.executable} -m shadowcode",
        "--only",
        "cli_usage",
        "--out",
        str(out),
    ]
    if not (SUITE / "fixtures" / "sample_project.py").is_file():
        argv += ["--fixture", str(_stand_in_fixture(tmp_path))]
    env = conformance_env()
    done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=150, encoding="utf-8")
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    statuses = {r["id"]: r["status"] for r in report["results"]}
    assert len(statuses) == len(requirement_ids())
    assert statuses["SRV-02"] == "pass" and statuses["ENG-02"] == "pass"
    assert statuses["SRV-03"] == "not_covered" and statuses["GW-01"] == "not_covered"
    assert {c["name"] for c in report["checks"]} == {
        "cli_usage:json_serve_refused",
        "cli_usage:missing_workspace_refused",
        "cli_usage:file_workspace_refused",
        "cli_usage:bad_profile_refused",
    }
    assert report["summary"]["fail"] == 0 and report["target"] == [sys.executable, "-m", "shadowcode"]
    assert "# Conformance report" in (out / "report.md").read_text(encoding="utf-8")


@pytest.mark.req("CONF-01")
@pytest.mark.slow
def test_a_failing_check_makes_the_exit_status_1(tmp_path: Path) -> None:
    out = tmp_path / "out"
    only = "cli_usage:json_serve_refused"
    argv = [sys.executable, "-m", "shadowcode_conformance", "--target", "true", "--only", only]
    argv += ["--out", str(out), "--fixture", str(_stand_in_fixture(tmp_path))]
    env = conformance_env()
    done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, encoding="utf-8")
    assert done.returncode == 1, done.stderr
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert {r["id"]: r["status"] for r in report["results"]}["SRV-02"] == "fail"


def _pids_running(marker: str, *, besides: int) -> list[int]:
    """Live processes (zombies aside) whose command line holds ``marker``, other than ``besides``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == besides:
            continue
        try:
            if marker.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.req("CONF-01")
@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_ends_the_run_once_every_check_stopped_its_processes(tmp_path: Path, signum: int) -> None:
    marker = f"conformance-stop-{uuid.uuid4().hex}"
    out = tmp_path / "out"
    target = f"{sys.executable} -c 'import time; time.sleep(120)' {marker}"
    argv = [sys.executable, "-m", "shadowcode_conformance", "--target", target]
    argv += ["--only", "cli_usage:json_serve_refused", "--out", str(out), "--fixture", str(_stand_in_fixture(tmp_path))]
    env = conformance_env()
    runner = subprocess.Popen(
        argv,
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        encoding="utf-8",
        start_new_session=True,
    )
    try:
        wait_for(lambda: _pids_running(marker, besides=runner.pid) or runner.poll() is not None, 60)
        assert runner.poll() is None, "the runner ended before the check started the target"
        runner.send_signal(signum)
        stdout, stderr = runner.communicate(timeout=60)
        left = _pids_running(marker, besides=runner.pid)
    finally:
        if runner.poll() is None:
            os.killpg(runner.pid, signal.SIGKILL)
            runner.wait(timeout=10)
        for pid in _pids_running(marker, besides=runner.pid):
            os.kill(pid, signal.SIGKILL)
    assert runner.returncode == 128 + signum, stderr
    assert f"conformance: stopped by {signal.Signals(signum).name}" in stderr and "Traceback" not in stderr
    assert stdout == "" and not left and not (out / "report.json").exists()


@pytest.mark.req("CONF-01")
def test_list_read_in_part_exits_0_without_a_message(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "shadowcode_conformance", "--list"]
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    with subprocess.Popen(argv, cwd=tmp_path, env=conformance_env(), encoding="utf-8", **pipes) as lister:
        assert lister.stdout is not None and lister.stderr is not None
        first = lister.stdout.readline()
        lister.stdout.close()  # as `| head -1` does: the rest of the list meets a closed pipe
        stderr = lister.stderr.read()
        assert lister.wait(timeout=60) == 0, stderr
    assert first.count("\t") >= 2 and stderr == ""
