"""The ``generic`` profile: its own checks, any server command as target, its own baselines."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from shadowcode_conformance.checks.generic import invalid_json_answered, split_utf8_frame, stdout_purity
from shadowcode_conformance.cli import main
from shadowcode_conformance.registry import CHECKS, check, load_checks
from shadowcode_conformance.report import load_expected_failures
from shadowcode_conformance.runner import run_one

SUITE = Path(__file__).resolve().parents[1] / "shadowcode_conformance"
EVERYTHING = SUITE / "node_probes/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
BASELINE = SUITE / "baselines/server-everything.yml"


def _listed(capsys: pytest.CaptureFixture[str], *argv: str) -> list[str]:
    assert main(["--list", *argv]) == 0
    return [line.split("\t")[0] for line in capsys.readouterr().out.splitlines()]


@pytest.mark.req("SRV-01", "SRV-03")
def test_profiles_select_disjoint_checks(capsys: pytest.CaptureFixture[str]) -> None:
    generic = _listed(capsys, "--profile", "generic")
    default = _listed(capsys)
    assert generic and all(name.startswith("generic:") for name in generic)
    assert "generic:http_foreign_origin" in generic
    assert "official:server:ping" in _listed(capsys, "--profile", "generic", "--official")
    assert default and not any(name.startswith("generic:") for name in default)
    assert "boundaries:result_cap_counts_bytes" in default
    assert _listed(capsys, "--profile", "shadowcode") == default


def test_unknown_profile_is_bad_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--profile", "nope", "--target", "true"]) == 2
    assert "nope" in capsys.readouterr().err
    with pytest.raises(ValueError, match="unknown profile"):
        check("test:bad_profile", covers=["SRV-01"], profile="nope")


@pytest.mark.parametrize("baseline", sorted((SUITE / "baselines").glob("*.yml")))
def test_shipped_generic_baselines_name_only_generic_checks(baseline: Path) -> None:
    load_checks()
    names = {e.check for e in load_expected_failures(baseline)}
    generic = {c.name for c in CHECKS.values() if "generic" in c.profiles}
    # A sub-check is named after the check that reports it: "<check>:<what>".
    subs = {n for n in names if any(n.startswith(g + ":") for g in generic)}
    # Every entry states the weight of the broken rule, and it is the check's own.
    for entry in load_expected_failures(baseline):
        assert entry.weight, entry
        if entry.check in CHECKS:
            assert entry.weight == CHECKS[entry.check].weight, entry
    assert names - {"report:protocol_revisions"} - subs <= generic or not names


def _run(fn, target: list[str]):
    load_checks()
    chk = next(c for c in CHECKS.values() if c.fn is fn)

    async def go():
        with anyio.fail_after(chk.timeout_seconds + 10):
            return await run_one(
                chk, target=target, cwd=Path.cwd(), repo_root=SUITE, project_factory=_project
            )

    return anyio.run(go)[0][0]


def _project(dest: Path) -> Path:
    dest.mkdir(parents=True)
    return dest.resolve()


@pytest.mark.req("SRV-01")
def test_generic_checks_pass_a_plain_server_and_catch_a_banner(fake_target) -> None:
    good = fake_target()
    for fn in (stdout_purity, invalid_json_answered, split_utf8_frame):
        record = _run(fn, good)
        assert record.ok, (record.name, record.detail)
    record = _run(stdout_purity, fake_target("--banner"))
    assert not record.ok and "not JSON-RPC" in record.detail


@pytest.mark.req("CONF-01")
def test_list_refuses_a_baseline_it_cannot_read(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--list", "--profile", "generic", "--expected-failures", "no-such-baseline"]) == 2
    assert "no-such-baseline" in capsys.readouterr().err


@pytest.mark.req("CONF-01")
def test_a_generic_run_names_no_engine(fake_target, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The generic profile starts the target as given: "temporary engine" would mean nothing.
    out = tmp_path / "out"
    argv = ["--profile", "generic", "--target", " ".join(fake_target()), "--only", "generic:stdout_purity"]
    assert main([*argv, "--out", str(out)]) == 0
    assert "conformance (generic profile): 1 checks passed" in capsys.readouterr().err
    assert json.loads((out / "report.json").read_text(encoding="utf-8"))["engine"] == "none"
    assert "- Engine: none (the generic profile runs the target as given)" in (out / "report.md").read_text(
        encoding="utf-8"
    )
