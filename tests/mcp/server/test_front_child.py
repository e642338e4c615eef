"""The stdio front's child serves without the full CLI (issue 32, SRV-01, SRV-07).

The front starts ``mcp serve`` again as its child; the child's first tool answer waits for
every module it imports, so it goes from ``shadowcode/__main__.py`` straight to
``serve_stdio`` with what the front parsed, never through typer and every command's module.
An error before serving is reported as the full CLI reports it.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from shadowcode.mcp.server import READY_FD_ENV
from tests.support.engine import PY, cli_env

pytestmark = pytest.mark.req("SRV-01")

CHILD_TIMEOUT_SECONDS = 60

_PROBE = """
import json, sys
import shadowcode.__main__ as entry
import shadowcode.mcp.server.launch as launch
from shadowcode.errors import ConfigError
seen = {}
def serve_stdio(**kwargs):
    seen.update(kwargs, workspace=str(kwargs["workspace"]))
    if sys.argv[1] == "fail":
        raise ConfigError("no such profile\\x1b[31m here")
launch.serve_stdio = serve_stdio
status = entry.front_child(json.loads(sys.argv[2]))
cli = [m for m in sys.modules if m.startswith(("typer", "shadowcode.cli"))]
print(json.dumps({"status": status, "seen": seen, "cli": cli}))
"""


def _probe(tmp_path: Path, argv: list[str], *, child: bool = True, fail: bool = False) -> tuple[dict, str]:
    env = cli_env(tmp_path / "home")
    env.pop(READY_FD_ENV, None)
    if child:
        env[READY_FD_ENV] = "99"  # what the front sets; serve_stdio (replaced here) reads it
    done = subprocess.run(
        [PY, "-c", _PROBE, "fail" if fail else "ok", json.dumps(argv)],
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=CHILD_TIMEOUT_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1]), done.stderr


def test_the_child_serves_what_the_front_parsed_without_loading_the_cli(tmp_path: Path) -> None:
    argv = ["--profile", "p1", "--workspace", str(tmp_path), "mcp", "serve", "--allow-write", "--approve-in-host"]

    found, stderr = _probe(tmp_path, argv)

    assert found["status"] == 0, stderr
    assert found["seen"] == {
        "workspace": str(tmp_path),
        "profile": "p1",
        "allow_write": True,
        "allow_approvals": False,
        "approve_in_host": True,
        "approval_page": False,
    }
    assert found["cli"] == []


@pytest.mark.parametrize(
    "argv",
    [
        ["mcp", "serve", "--http", "127.0.0.1:0"],  # the gateway: the full CLI
        ["mcp", "serve", "--approval-page"],  # refused by the full CLI without --approve-in-host
        ["--json", "mcp", "serve"],
        ["status"],
    ],
)
def test_any_other_command_line_goes_to_the_full_cli(tmp_path: Path, argv: list[str]) -> None:
    found, _ = _probe(tmp_path, argv)

    assert found["status"] is None and found["seen"] == {}


def test_outside_the_front_the_full_cli_serves(tmp_path: Path) -> None:
    found, _ = _probe(tmp_path, ["--workspace", str(tmp_path), "mcp", "serve"], child=False)

    assert found["status"] is None and found["seen"] == {}


def test_an_error_before_serving_is_one_inert_line_and_the_cli_exit_status(tmp_path: Path) -> None:
    found, stderr = _probe(tmp_path, ["--workspace", str(tmp_path), "mcp", "serve"], fail=True)

    assert found["status"] == 2
    assert stderr == "shadowcode: no such profile\\x1b[31m here\n"
