"""Requirement sets frozen per MCP protocol revision: what a server of that revision is held to (CONF-01).

The official ``@modelcontextprotocol/conformance`` package answers "which scenarios must a
server pass to conform to revision R" with a file per revision, fixed when R shipped and never
edited after; a scenario added to the suite later still runs, but is not scored against R. This
module does the same for the suite's own checks of MCP behaviour (the generic profile, official
scenarios aside, which the package's own sets already govern):

* ``revisions/<R>.yml`` names, for each revision R the suite speaks
  (:data:`~shadowcode_conformance.context.LEGACY_REVISIONS` and
  :data:`~shadowcode_conformance.context.MODERN_REVISION`), every check whose rule applies at R, with the
  weight the rule had when the set was frozen.
* :data:`FROZEN_SHA256` holds each file's SHA-256 as frozen: editing a set is a change to this
  module too, made on purpose and reviewed, never a side effect of a check that changed.
* :func:`judge_at_revisions` judges a generic run's records by the sets of the revisions the
  server negotiated: a check in a set has that set's weight (the strongest, when the server
  negotiated several); a check in none of them (added, or widened to R, after R's set was
  frozen) still runs and is reported, but its failure only warns ("not scored"), as the
  official package treats a scenario added after a revision's release.

``python -m shadowcode_conformance.revision_sets --check`` reports drift (exit 1 for an edited or missing
set, or a frozen check no longer registered for that revision; checks added since are listed
and exit 0); ``--freeze R`` writes the set of a revision not frozen yet and prints its digest.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final, cast

import yaml

from shadowcode_conformance.context import LEGACY_REVISIONS, MODERN_REVISION
from shadowcode_conformance.registry import Check, load_checks
from shadowcode_conformance.report import CheckRecord
from shadowcode_conformance.verdicts import Verdict, Weight

__all__ = [
    "FOLDER",
    "FROZEN_SHA256",
    "REVISIONS",
    "RevisionSet",
    "applies",
    "drift",
    "judge_at_revisions",
    "load_sets",
    "main",
    "render",
]

FOLDER: Final = Path(__file__).resolve().parent / "revisions"
"""Where the frozen sets are, one ``<revision>.yml`` each (package data of the distribution)."""

REVISIONS: Final = (*LEGACY_REVISIONS, MODERN_REVISION)
"""Every protocol revision the suite speaks, oldest first."""

FROZEN_WITH: Final = "shadowcode-conformance 0.1.0"
"""The suite's release a set written by ``--freeze`` is a snapshot of."""

FROZEN_SHA256: Final[dict[str, str]] = {
    "2024-11-05": "df2c08e6d3fa336d94e519587454cd2565e7dca0995a689c35ac403bd5a3ff14",
    "2025-03-26": "bb5c277159d2d8d429bcfe4b43e9eb8ab966ae03271c3bdb5d8bc133d9ea6980",
    "2025-06-18": "51629cbadd403fdf4bf8751c731a2426709b7dc57fc48622c68f42c821b0047c",
    "2025-11-25": "30171336de7b1539ff18c58ad1e64de82d21232a2faf8edbc6f4291d05bd36e6",
    "2026-07-28": "660270f3163f809524ab6c243c31f703d9e850c01efd5ce4dfb36caf0558c9b8",
}
"""Each frozen set's SHA-256 (hex) as it was frozen, by revision."""

_STRENGTH: Final = {Weight.MUST: 2, Weight.SHOULD: 1, Weight.ROBUSTNESS: 0}


@dataclass(frozen=True)
class RevisionSet:
    """The checks one revision requires, as frozen.

    Attributes:
        revision: e.g. ``"2025-11-25"``.
        frozen_with: the suite's release the set is a snapshot of.
        checks: check name to the weight of its rule at this revision.
    """

    revision: str
    frozen_with: str
    checks: Mapping[str, str]


def applies(chk: Check, revision: str) -> bool:
    """Whether ``chk`` is a check of MCP behaviour (generic profile, not an official scenario)
    whose rule belongs to ``revision`` (a check naming no revisions belongs to all)."""
    return "generic" in chk.profiles and not chk.official and (not chk.revisions or revision in chk.revisions)


def render(revision: str, checks: Iterable[Check], frozen_with: str = FROZEN_WITH) -> str:
    """The YAML text of ``revision``'s set as the registered ``checks`` make it today."""
    lines = [
        f"# The conformance requirement set of MCP revision {revision}: FROZEN.",
        "#",
        "# Every check below applies to a server that negotiated this revision, with the weight its",
        "# rule had when the set was frozen. The list is fixed: a server is held to the suite as it",
        "# stood when the set was frozen, not to what the suite has gained since. A check added later",
        "# (or widened to this revision) still runs and is reported, but is not scored here: its",
        "# failure warns. Changing this file changes conformance/revision_sets.py's digest of it too,",
        "# on purpose (see docs/conformance.md, \"Requirement sets frozen per revision\").",
        f'revision: "{revision}"',
        f'frozen_with: "{frozen_with}"',
        "checks:",
    ]
    lines += [f'  "{c.name}": {c.weight}' for c in checks if applies(c, revision)]
    return "\n".join(lines) + "\n"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _mapping(value: object, what: str) -> dict[str, object]:
    if not isinstance(value, dict):
        raise ValueError(f"{what} is not a mapping")
    return {str(k): v for k, v in cast(dict[object, object], value).items()}


def _parse(revision: str, data: object) -> RevisionSet:
    fields = _mapping(data, f"{revision}.yml")
    if fields.get("revision") != revision:
        raise ValueError(f"{revision}.yml does not name revision {revision}")
    weights = {name: str(weight) for name, weight in _mapping(fields.get("checks") or {}, "its checks").items()}
    bad = sorted(name for name, weight in weights.items() if weight not in tuple(Weight))
    if bad:
        raise ValueError(f"{revision}.yml: checks with no known weight: {', '.join(bad)}")
    return RevisionSet(revision, str(fields.get("frozen_with", "")), weights)


def load_sets(folder: Path = FOLDER, revisions: Sequence[str] = REVISIONS) -> dict[str, RevisionSet]:
    """The frozen sets of ``revisions`` read from ``folder``.

    Raises:
        OSError: a set's file cannot be read.
        ValueError: a file is not a set of its revision (wrong revision, unknown weight).
    """
    return {r: _parse(r, yaml.safe_load((folder / f"{r}.yml").read_text(encoding="utf-8"))) for r in revisions}


def drift(checks: Iterable[Check], folder: Path = FOLDER) -> tuple[list[str], list[str]]:
    """How the registered ``checks`` and the frozen sets in ``folder`` differ.

    Returns:
        ``(problems, added)``: problems are a set missing, edited since it was frozen (its digest
        differs from :data:`FROZEN_SHA256`) or naming a check no longer registered for its
        revision; added are checks applying at a revision its frozen set does not name (run,
        reported, not scored there).
    """
    registered = list(checks)
    problems: list[str] = []
    added: list[str] = []
    for revision in REVISIONS:
        path = folder / f"{revision}.yml"
        if not path.is_file():
            problems.append(f"{revision}: no frozen set ({path.name})")
            continue
        if _digest(path) != FROZEN_SHA256.get(revision):
            problems.append(f"{revision}: {path.name} differs from the set frozen (SHA-256 {_digest(path)})")
        frozen = load_sets(folder, (revision,))[revision].checks
        applying = {c.name for c in registered if applies(c, revision)}
        gone = [n for n in frozen if n not in applying]
        problems += [f"{revision}: frozen check {n} is no longer registered for it" for n in gone]
        added += [f"{revision}: {n} (not scored: added after the freeze)" for n in sorted(applying - set(frozen))]
    return problems, added


def _strongest(weights: Iterable[str]) -> str:
    return max(weights, key=lambda w: _STRENGTH[Weight(w)])


def judge_at_revisions(
    records: Sequence[CheckRecord],
    revisions: Mapping[str, str],
    checks: Mapping[str, Check],
    sets: Mapping[str, RevisionSet] | None = None,
) -> list[CheckRecord]:
    """The records of a generic run judged by the frozen sets of the revisions the server
    negotiated (CONF-01).

    Args:
        records: the run's records.
        revisions: label to negotiated revision, as the checks recorded them.
        checks: the registered checks by name.
        sets: the frozen sets by revision (default: :func:`load_sets`).

    Returns:
        ``records`` with, for each check of MCP behaviour: the strongest weight the negotiated
        revisions' sets give it; or, when none of them names it, a failure turned into a warning
        whose detail says it is not scored. Unchanged when no known revision was negotiated.
    """
    claimed = sorted({r for r in revisions.values() if r in REVISIONS})
    if not claimed:
        return list(records)
    frozen = sets if sets is not None else load_sets(revisions=claimed)
    judged: list[CheckRecord] = []
    for record in records:
        chk = checks.get(record.name)
        if chk is None or not any(applies(chk, r) for r in REVISIONS) or record.not_run:
            judged.append(record)
            continue
        weights = [frozen[r].checks[record.name] for r in claimed if r in frozen and record.name in frozen[r].checks]
        if weights:
            judged.append(replace(record, weight=Weight(_strongest(weights))))
        elif record.judged == Verdict.FAIL:
            note = f" (not scored: not in the frozen requirement set of {' or '.join(claimed)})"
            judged.append(replace(record, verdict=Verdict.WARN, detail=record.detail + note))
        else:
            judged.append(record)
    return judged


def main(argv: Sequence[str] | None = None) -> int:
    """``--check``: report drift, exit 1 on a problem; ``--freeze R``: write R's set if none is frozen."""
    summary = (__doc__ or "").splitlines()[0]
    parser = argparse.ArgumentParser(prog="python -m shadowcode_conformance.revision_sets", description=summary)
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--check", action="store_true", help="report drift between the registry and the frozen sets")
    action.add_argument("--freeze", metavar="REVISION", choices=REVISIONS, help="write a revision's set, once")
    args = parser.parse_args(argv)
    checks = load_checks().values()
    if args.freeze:
        path = FOLDER / f"{args.freeze}.yml"
        if path.exists():
            sys.stderr.write(f"{path.name} is frozen already; it is never rewritten\n")
            return 1
        FOLDER.mkdir(exist_ok=True)
        path.write_text(render(args.freeze, checks), encoding="utf-8")
        sys.stdout.write(f'"{args.freeze}": "{_digest(path)}",\n')
        return 0
    problems, added = drift(checks)
    for line in added:
        sys.stdout.write(line + "\n")
    for line in problems:
        sys.stderr.write(line + "\n")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
