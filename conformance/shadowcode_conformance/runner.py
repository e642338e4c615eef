"""Running selected checks concurrently, each bounded in time and isolated on disk.

Each check gets fresh temporary directories and a deadline; a failure, an exception or a
timeout becomes a failed record and never stops the run. When a check ends, every process
that still carries its private ``SHADOWCODE_HOME`` is killed and its directories are
removed (CONF-01).

In an attached run (:attr:`EngineMode.ATTACHED`, ``--attached``) the runner first starts
``<target> engine`` in the check's ``SHADOWCODE_HOME`` and waits until it reports itself
running, so every stdio server the check starts finds the engine and attaches to it; the
check's own time starts once the engine is ready. After the check ``<target> engine
status`` must still report it running; then it is stopped (SIGTERM, a bounded wait, then
its process group is killed) before the straggler sweep. An engine that never gets ready,
or that is gone before the check ends, fails the check.
Checks registered with ``own_engine=True`` run without the pre-started engine.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import anyio
import anyio.to_thread

from shadowcode_conformance.context import Context, EngineMode
from shadowcode_conformance.engine import engine_running, headless_engine
from shadowcode_conformance.fixture import ProjectFactory
from shadowcode_conformance.limits import ENGINE_READY_SECONDS, ENGINE_STATUS_TIMEOUT_SECONDS
from shadowcode_conformance.links import check_links
from shadowcode_conformance.processes import kill_marked
from shadowcode_conformance.registry import Check, CheckResult
from shadowcode_conformance.report import NOT_ASKED, CheckRecord
from shadowcode_conformance.requirements import requirement_ids
from shadowcode_conformance.verdicts import Verdict

__all__ = ["RunOutcome", "run_checks", "run_one"]

logger = logging.getLogger(__name__)


@dataclass
class RunOutcome:
    """Everything a run produced.

    Attributes:
        records: check records in selection order, each followed by its sub-results.
        revisions: label to negotiated protocol revision, from every check.
    """

    records: list[CheckRecord] = field(default_factory=list[CheckRecord])
    revisions: dict[str, str] = field(default_factory=dict[str, str])


def _describe(exc: BaseException) -> str:
    """``Type: message`` for an exception; groups are flattened to their leaves."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in cast("BaseExceptionGroup[BaseException]", exc).exceptions)
    return f"{type(exc).__name__}: {exc}"


async def _run_bounded(chk: Check, ctx: Context) -> CheckResult:
    """Run the check function within its time bound; a crash or a timeout is a failed result."""
    result = CheckResult(False, f"timed out after {chk.timeout_seconds:g} s")
    with anyio.move_on_after(chk.timeout_seconds):
        try:
            result = await chk.fn(ctx)
        except Exception as exc:  # top-level handler: a crashing check is a failed check
            logger.debug("check %s raised", chk.name, exc_info=True)
            result = CheckResult(False, f"the check raised {_describe(exc)}")
    return result


async def _run_attached(chk: Check, ctx: Context) -> CheckResult:
    """Run the check while ``<target> engine`` runs in its profile (ENG-03, CONF-03)."""
    problems: list[str] = []
    async with headless_engine(ctx, problems, ready_seconds=ENGINE_READY_SECONDS) as engine:
        if engine is None:
            return CheckResult(False, "the headless engine started for this check: " + "; ".join(problems))
        ctx.deadline = time.monotonic() + chk.timeout_seconds
        result = await _run_bounded(chk, ctx)
        ctx.deadline = time.monotonic() + ENGINE_STATUS_TIMEOUT_SECONDS
        if engine.returncode is None and not await engine_running(ctx):
            problems.append("the headless engine started for this check no longer ran when the check ended")
        elif engine.returncode == 0:
            problems.append("the headless engine started for this check exited 0 before the check ended")
    if not problems:
        return result
    return CheckResult(False, "; ".join([result.detail, *problems]), result.data, result.subresults)


HARNESS_VARIABLES: tuple[str, ...] = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONSAFEPATH")
"""How the harness's own Python finds its code; a target never inherits them, or a packaged target
could import the checkout's modules instead of its own (PKG-01, CONF-04)."""


def target_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment a target runs in: the harness's, less :data:`HARNESS_VARIABLES`."""
    return {name: value for name, value in environ.items() if name not in HARNESS_VARIABLES}


async def run_one(
    chk: Check,
    *,
    target: Sequence[str],
    cwd: Path,
    repo_root: Path,
    project_factory: ProjectFactory,
    engine: EngineMode = EngineMode.TEMPORARY,
    url: str | None = None,
    bearer: str | None = None,
    profile: str = "shadowcode",
) -> tuple[list[CheckRecord], dict[str, str]]:
    """Run one check in private directories within its time bound (CONF-01).

    Args:
        chk: the check.
        target: target argv.
        cwd: working directory for started processes.
        repo_root: folder holding ``node_probes/`` and ``fixtures/``.
        project_factory: ``make_sample_project``.
        engine: :attr:`EngineMode.ATTACHED` to run the check while ``<target> engine`` runs
            in its profile (unless the check has ``own_engine``); the readiness wait, at most
            ``ENGINE_READY_SECONDS``, does not count against the check's time.
        url: the Streamable HTTP endpoint under test (``--url``), or None.
        bearer: a bearer token for ``url``, or None.
        profile: the profile being run, passed on in the context.

    Returns:
        The check's record followed by one record per sub-result, and the revisions it
        recorded. Never raises for a failing, crashing or slow check, nor for an engine
        that does not start. A check whose :attr:`~shadowcode_conformance.registry.Check.needs` the run
        was not given is reported "not run" without starting anything.
    """
    missing = _missing(chk, target, url)
    if missing:
        return [CheckRecord(chk.name, chk.covers, False, missing, 0.0, not_run=NOT_ASKED)], {}
    started = time.monotonic()
    attached = engine is EngineMode.ATTACHED and not chk.own_engine
    scratch = Path(tempfile.mkdtemp(prefix="conformance-" + re.sub(r"[^A-Za-z0-9_.-]", "_", chk.name) + "-"))
    home = scratch / "home"
    home.mkdir()
    work = scratch / "scratch"
    work.mkdir()
    env = target_environment(os.environ)
    env["SHADOWCODE_HOME"] = str(home)
    revisions: dict[str, str] = {}
    leftovers: list[int] = []
    try:
        try:
            project = await anyio.to_thread.run_sync(project_factory, scratch / "project")
            project = Path(project).resolve()
        except Exception as exc:  # the factory is foreign code: any failure is a failed check
            result = CheckResult(False, f"could not create the sample project: {_describe(exc)}")
        else:
            ctx = Context(
                target=list(target),
                home=home,
                project=project,
                scratch=work,
                env=env,
                cwd=cwd,
                repo_root=repo_root,
                deadline=started + chk.timeout_seconds + (ENGINE_READY_SECONDS if attached else 0.0),
                engine=EngineMode.ATTACHED if attached else EngineMode.TEMPORARY,
                url=url,
                bearer=bearer,
                profile=profile,
            )
            try:
                result = await (_run_attached(chk, ctx) if attached else _run_bounded(chk, ctx))
            except OSError as exc:
                result = CheckResult(False, f"could not start the headless engine: {_describe(exc)}")
            revisions = dict(ctx.revisions)
    finally:
        with anyio.CancelScope(shield=True):  # a run stopped from outside still sweeps (SIGTERM, Ctrl-C)
            leftovers = await anyio.to_thread.run_sync(kill_marked, f"SHADOWCODE_HOME={home}")
            shutil.rmtree(scratch, ignore_errors=True)
    seconds = time.monotonic() - started
    detail = result.detail
    if leftovers:
        detail += f" (killed {len(leftovers)} process(es) still running after the check)"
    records = [
        CheckRecord(
            chk.name,
            chk.covers,
            result.ok,
            detail,
            seconds,
            not_run=result.not_run,
            verdict=_verdict(result.verdict),
            weight=chk.weight,
            source=chk.source,
            links=check_links(chk),
        )
    ]
    known = set(requirement_ids())
    for sub in result.subresults:
        unknown = [c for c in sub.covers if c not in known]
        covers = tuple(c for c in sub.covers if c in known)
        weight, source = sub.weight or chk.weight, sub.source or chk.source
        if unknown:
            records.append(
                CheckRecord(
                    sub.name,
                    covers,
                    False,
                    f"{sub.detail} (unknown requirement ids: {', '.join(unknown)})",
                    seconds,
                    verdict=Verdict.FAIL,
                    weight=weight,
                    source=source,
                    links=check_links(chk, sub.source, covers),
                )
            )
        else:
            verdict = _verdict(sub.verdict)
            links = check_links(chk, sub.source, covers)
            record = CheckRecord(sub.name, covers, sub.ok, sub.detail, seconds, "", verdict, weight, source, links)
            records.append(record)
    return records, revisions


def _verdict(given: str) -> str:
    """The verdict a check decided itself (``""`` when it left it to its weight); one that is not a
    :class:`~shadowcode_conformance.verdicts.Verdict` is a broken check, so a failure."""
    return given if not given or given in tuple(Verdict) else Verdict.FAIL


def _missing(chk: Check, target: Sequence[str], url: str | None) -> str:
    """Why the run cannot run ``chk`` as given (empty when it can)."""
    if chk.needs == "target" and not target:
        return "not run: needs --target (the server command); only --url was given"
    if chk.needs == "url" and not url:
        return "not run: needs --url (the server's Streamable HTTP endpoint)"
    if chk.needs == "either" and not target and not url:
        return "not run: needs --target or --url"
    return ""


async def run_checks(
    checks: Sequence[Check],
    *,
    target: Sequence[str],
    cwd: Path,
    repo_root: Path,
    project_factory: ProjectFactory,
    jobs: int,
    engine: EngineMode = EngineMode.TEMPORARY,
    url: str | None = None,
    bearer: str | None = None,
    profile: str = "shadowcode",
) -> RunOutcome:
    """Run ``checks`` with at most ``jobs`` at a time (CONF-01).

    Args:
        checks: the selection, in report order.
        target: target argv.
        cwd: working directory for started processes.
        repo_root: folder holding ``node_probes/`` and ``fixtures/``.
        project_factory: ``make_sample_project``.
        jobs: concurrency, at least 1.
        engine: :attr:`EngineMode.ATTACHED` to give each check (but those with
            ``own_engine``) a running ``<target> engine``; see :func:`run_one`.
        url: the Streamable HTTP endpoint under test (``--url``), or None.
        bearer: a bearer token for ``url``, or None.
        profile: the profile being run.

    Returns:
        A :class:`RunOutcome` whose records keep the order of ``checks``.
    """
    limiter = anyio.CapacityLimiter(max(1, jobs))
    slots: list[tuple[list[CheckRecord], dict[str, str]] | None] = [None] * len(checks)

    async def one(index: int, chk: Check) -> None:
        async with limiter:
            slots[index] = await run_one(
                chk,
                target=target,
                cwd=cwd,
                repo_root=repo_root,
                project_factory=project_factory,
                engine=engine,
                url=url,
                bearer=bearer,
                profile=profile,
            )

    async with anyio.create_task_group() as tg:
        for index, chk in enumerate(checks):
            tg.start_soon(one, index, chk)
    outcome = RunOutcome()
    for slot in slots:
        assert slot is not None
        records, revisions = slot
        outcome.records.extend(records)
        outcome.revisions.update(revisions)
    return outcome
