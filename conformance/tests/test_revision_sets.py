"""Requirement sets frozen per protocol revision: present, unchanged, and what a verdict uses (CONF-01)."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from check_runs import conformance_env

from shadowcode_conformance.context import LEGACY_REVISIONS, MODERN_REVISION
from shadowcode_conformance.registry import CHECKS, load_checks
from shadowcode_conformance.report import CheckRecord
from shadowcode_conformance.revision_sets import (
    FOLDER,
    FROZEN_SHA256,
    REVISIONS,
    RevisionSet,
    applies,
    drift,
    judge_at_revisions,
    load_sets,
    render,
)
from shadowcode_conformance.verdicts import Verdict, Weight

pytestmark = pytest.mark.req("CONF-01")


def test_every_revision_the_suite_speaks_has_a_frozen_set_with_its_digest() -> None:
    assert REVISIONS == (*LEGACY_REVISIONS, MODERN_REVISION)
    assert sorted(p.stem for p in FOLDER.glob("*.yml")) == sorted(REVISIONS) == sorted(FROZEN_SHA256)
    for revision in REVISIONS:
        path = FOLDER / f"{revision}.yml"
        assert hashlib.sha256(path.read_bytes()).hexdigest() == FROZEN_SHA256[revision], f"{path.name} was edited"


def test_the_frozen_sets_and_the_registry_agree() -> None:
    problems, _ = drift(load_checks().values())
    assert problems == []


def test_each_set_names_registered_checks_of_its_revision_with_a_known_weight() -> None:
    load_checks()
    sets = load_sets()
    for revision, frozen in sets.items():
        assert frozen.revision == revision and frozen.frozen_with and frozen.checks
        for name, weight in frozen.checks.items():
            assert applies(CHECKS[name], revision) and weight in tuple(Weight), (revision, name)
    # A rule of one revision is frozen in that revision's set only.
    assert "generic:batch_of_2025_03_26" in sets["2025-03-26"].checks
    assert "generic:batch_of_2025_03_26" not in sets["2025-06-18"].checks
    assert "generic:modern_discover" in sets[MODERN_REVISION].checks
    assert "generic:modern_discover" not in sets["2025-11-25"].checks
    assert "generic:legacy_handshakes" not in sets[MODERN_REVISION].checks


def test_an_edited_set_a_dropped_check_and_an_added_one_are_told_apart(tmp_path: Path) -> None:
    folder = tmp_path / "revisions"
    shutil.copytree(FOLDER, folder)
    checks = list(load_checks().values())
    assert drift(checks, folder) == ([], [])

    edited = folder / "2025-11-25.yml"
    edited.write_text(edited.read_text(encoding="utf-8").replace(": robustness", ": must", 1), encoding="utf-8")
    problems, _ = drift(checks, folder)
    assert len(problems) == 1 and problems[0].startswith("2025-11-25: 2025-11-25.yml differs from the set frozen")

    stdout_purity = CHECKS["generic:stdout_purity"]
    problems, _ = drift([c for c in checks if c is not stdout_purity], folder)
    assert f"{MODERN_REVISION}: frozen check generic:stdout_purity is no longer registered for it" in problems

    new = CHECKS["generic:eof_exits"]
    renamed = type(new)(**{**new.__dict__, "name": "generic:added_later"})
    _, added = drift([*checks, renamed], folder)
    assert f"{MODERN_REVISION}: generic:added_later (not scored: added after the freeze)" in added


def test_a_verdict_uses_the_frozen_weight_and_does_not_score_a_check_the_set_lacks() -> None:
    load_checks()
    sets = {
        "2025-11-25": RevisionSet("2025-11-25", "test", {"generic:stdout_purity": Weight.ROBUSTNESS}),
        MODERN_REVISION: RevisionSet(MODERN_REVISION, "test", {}),
    }
    records = [
        CheckRecord("generic:stdout_purity", ("SRV-01",), False, "banner", 0.1, weight=Weight.MUST),
        CheckRecord("generic:split_utf8_frame", ("SRV-01",), False, "split", 0.1, weight=Weight.MUST),
        CheckRecord("generic:ids_echoed_exactly", ("SRV-01",), True, "fine", 0.1, weight=Weight.MUST),
        CheckRecord("cli_usage:json_serve_refused", ("SRV-02",), False, "contract", 0.1),
    ]
    legacy = {"generic:legacy_handshakes": "2025-11-25"}
    judged = {r.name: r for r in judge_at_revisions(records, legacy, CHECKS, sets)}
    assert judged["generic:stdout_purity"].judged == Verdict.WARN  # frozen as robustness at 2025-11-25
    split = judged["generic:split_utf8_frame"]
    assert split.judged == Verdict.WARN and "not in the frozen requirement set of 2025-11-25" in split.detail
    assert judged["generic:ids_echoed_exactly"].judged == Verdict.PASS
    assert judged["cli_usage:json_serve_refused"].judged == Verdict.FAIL  # not a check of MCP behaviour

    # Both eras negotiated: a check is scored by the strongest weight any of their sets gives it.
    sets[MODERN_REVISION] = RevisionSet(MODERN_REVISION, "test", {"generic:stdout_purity": Weight.MUST})
    both = {**legacy, "generic:modern_discover": MODERN_REVISION}
    assert judge_at_revisions(records, both, CHECKS, sets)[0].judged == Verdict.FAIL
    # No revision negotiated (e.g. --only one check): nothing changes.
    assert judge_at_revisions(records, {}, CHECKS, sets) == records


def test_todays_sets_change_no_verdict_of_todays_checks() -> None:
    load_checks()
    mcp = [c for c in CHECKS.values() if any(applies(c, r) for r in REVISIONS)]
    records = [CheckRecord(c.name, c.covers, False, "x", 0.1, weight=c.weight) for c in mcp]
    for revision in REVISIONS:
        judged = judge_at_revisions(records, {"label": revision}, CHECKS)
        frozen = load_sets(revisions=(revision,))[revision].checks
        for before, after in zip(records, judged, strict=True):
            if before.name in frozen:
                assert after == before, (revision, before.name)


def test_the_command_checks_and_never_rewrites_a_frozen_set() -> None:
    check = [sys.executable, "-m", "shadowcode_conformance.revision_sets", "--check"]
    done = subprocess.run(check, env=conformance_env(), capture_output=True, encoding="utf-8", timeout=60)
    assert done.returncode == 0, done.stderr
    freeze = [sys.executable, "-m", "shadowcode_conformance.revision_sets", "--freeze", "2025-11-25"]
    done = subprocess.run(freeze, env=conformance_env(), capture_output=True, encoding="utf-8", timeout=60)
    assert done.returncode == 1 and "frozen already" in done.stderr


def test_render_lists_the_checks_of_a_revision_with_their_weights() -> None:
    text = render("2025-03-26", load_checks().values(), frozen_with="x 1")
    assert '  "generic:batch_of_2025_03_26": must\n' in text and 'frozen_with: "x 1"' in text
    assert text.startswith("# The conformance requirement set of MCP revision 2025-03-26: FROZEN.")
