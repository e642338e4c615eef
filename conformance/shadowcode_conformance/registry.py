"""The check registry: ``@check`` functions, their results, and how they are found.

A check is an ``async`` function taking a :class:`~shadowcode_conformance.context.Context` and
returning a :class:`CheckResult`. It names the requirement ids it proves; every id must be
in :mod:`shadowcode_conformance.requirements`. It states the weight of the rule it proves and where that
rule is written (:mod:`shadowcode_conformance.verdicts`): ShadowCode's contract by default, and for a
check of the generic profile a section of the MCP or JSON-RPC specification. A check may also
return sub-results (for example the inner checks of an external probe); the runner reports
each of them as a check of its own.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any

from shadowcode_conformance.limits import CHECK_TIMEOUT_SECONDS
from shadowcode_conformance.requirements import requirement_ids
from shadowcode_conformance.verdicts import Verdict, Weight

if TYPE_CHECKING:
    from shadowcode_conformance.context import Context

__all__ = [
    "CHECKS",
    "NEEDS",
    "PROFILES",
    "Check",
    "CheckFn",
    "CheckResult",
    "SubResult",
    "check",
    "contract_source",
    "load_checks",
    "select",
]


@dataclass(frozen=True)
class SubResult:
    """One inner check reported by a check, e.g. one line of a probe's output.

    Attributes:
        name: full report name, ``"<probe>:<name>"``.
        covers: requirement ids it proves.
        ok: whether it passed.
        detail: one line for a person (for a verdict other than pass, its reason).
        verdict: one of :class:`~shadowcode_conformance.verdicts.Verdict`, or ``""`` to judge ``ok`` by the weight.
        weight: one of :class:`~shadowcode_conformance.verdicts.Weight`, or ``""`` for the reporting check's.
        source: where its rule is written (a section URL), or ``""`` for the reporting check's.
    """

    name: str
    covers: tuple[str, ...]
    ok: bool
    detail: str
    verdict: str = ""
    weight: str = ""
    source: str = ""


@dataclass
class CheckResult:
    """What a check found.

    Attributes:
        ok: True when every expectation held.
        detail: a short explanation; on failure, what differed.
        data: free JSON-able facts for debugging (not copied into the report).
        subresults: inner checks to report as checks of their own.
        not_run: ``""`` when the check ran, else why not: ``"not_asked"`` (:meth:`not_asked`)
            or ``"unavailable"`` (:meth:`unavailable`).
        verdict: ``""`` to judge ``ok`` by the check's weight (pass, or fail for a ``must`` rule
            and warn otherwise); or a :class:`~shadowcode_conformance.verdicts.Verdict` the check decided
            itself: ``"not_applicable"`` (:meth:`not_applicable`) or ``"warn"`` (:meth:`warned`).
    """

    ok: bool
    detail: str
    data: dict[str, Any] = field(default_factory=dict[str, Any])
    subresults: list[SubResult] = field(default_factory=list[SubResult])
    not_run: str = ""
    verdict: str = ""

    @classmethod
    def not_applicable(cls, reason: str) -> CheckResult:
        """The rule does not apply to this server (a revision or extension it does not claim, a
        fixture or transport it does not have): reported with ``reason``, proving nothing, never
        a pass and never a failure (CONF-01)."""
        return cls(False, reason, verdict=Verdict.NOT_APPLICABLE)

    @classmethod
    def warned(cls, detail: str) -> CheckResult:
        """A finding that is reported but does not fail the run, whatever the check's weight
        (e.g. the official package's WARNING) (CONF-01)."""
        return cls(False, detail, verdict=Verdict.WARN)

    @classmethod
    def not_asked(cls, detail: str) -> CheckResult:
        """A check the run was not given what it needs for (``--url``, ``--target``): reported
        "not run"; it proves nothing and does not fail the run (CONF-01)."""
        return cls(False, detail, not_run="not_asked")

    @classmethod
    def unavailable(cls, detail: str) -> CheckResult:
        """A check that was asked for but could not run (e.g. Node 22 missing): reported "not run",
        and the run fails, since what it was asked to prove stays unproven (CONF-01).

        Args:
            detail: why, and the command that installs what is missing.
        """
        return cls(False, detail, not_run="unavailable")

    @classmethod
    def tallied(cls, subs: list[SubResult], held: str) -> CheckResult:
        """A pass when every one of ``subs`` passed, carrying them as its sub-results (CONF-01).

        Args:
            subs: the inner checks.
            held: what a passing one proves, as the detail counts it: ``"3/4 {held}"``, then
                ``"; failed: NAME, ..."`` with the failed ones' names.
        """
        failed = [s.name for s in subs if not s.ok]
        detail = f"{len(subs) - len(failed)}/{len(subs)} {held}" + (f"; failed: {', '.join(failed)}" if failed else "")
        return cls(not failed, detail, subresults=subs)


CheckFn = Callable[["Context"], Awaitable[CheckResult]]
"""The signature of a check function."""


@dataclass(frozen=True)
class Check:
    """A registered check.

    Attributes:
        name: unique name, ``"<group>:<what>"``.
        group: the module it lives in (``"cli_usage"``), matched by ``--only``.
        covers: requirement ids it proves.
        fn: the check function.
        timeout_seconds: its time bound.
        own_engine: True when the check's subject is the engine's own lifecycle or the
            temporary engine: it starts ``<target> engine`` itself or needs none to run, so
            an ``--attached`` run starts no engine for it.
        profiles: the profiles that run it: ``"shadowcode"`` (the contract, the default) and/or
            ``"generic"`` (rules every MCP server keeps; the target is any server command or URL).
        needs: what the run must have been given for the check to run: ``"target"`` (a command,
            ``--target``), ``"url"`` (a Streamable HTTP endpoint, ``--url``) or ``"either"``.
            Without it the check is reported "not run" and counts for nothing.
        official: the check runs the official ``@modelcontextprotocol/conformance`` package;
            it is selected only with ``--official``.
        weight: the weight of the rule it proves (:class:`~shadowcode_conformance.verdicts.Weight`).
        source: where that rule is written: a specification section's URL, or ShadowCode's
            contract and the ids (:func:`contract_source`).
        revisions: the protocol revisions the rule belongs to; empty when it holds for every
            revision. The check reports itself not applicable to a server claiming none of them.
    """

    name: str
    group: str
    covers: tuple[str, ...]
    fn: CheckFn
    timeout_seconds: float
    own_engine: bool = False
    profiles: tuple[str, ...] = ("shadowcode",)
    needs: str = "target"
    official: bool = False
    weight: str = Weight.MUST
    source: str = ""
    revisions: tuple[str, ...] = ()

    @property
    def profile(self) -> str:
        """The first profile that runs the check."""
        return self.profiles[0]


CHECKS: dict[str, Check] = {}
"""Every registered check by name, in registration order."""


PROFILES = ("shadowcode", "generic")
"""Check profiles: the ShadowCode contract (default) and the rules of any MCP server."""

NEEDS = ("target", "url", "either")
"""What a check needs from the command line: ``--target``, ``--url``, or one of them."""


def contract_source(covers: Sequence[str]) -> str:
    """The source of a rule of ShadowCode's contract: ``"ShadowCode contract: SRV-01, SRV-03"``."""
    return "ShadowCode contract: " + (", ".join(covers) or "-")


def check(
    name: str,
    *,
    covers: Sequence[str],
    timeout_seconds: float = CHECK_TIMEOUT_SECONDS,
    own_engine: bool = False,
    profile: str | Sequence[str] = "shadowcode",
    needs: str = "target",
    official: bool = False,
    weight: str = Weight.MUST,
    source: str = "",
    revisions: Sequence[str] = (),
) -> Callable[[CheckFn], CheckFn]:
    """Register an async check function under ``name`` (CONF-01).

    Args:
        name: unique report name, conventionally ``"<module>:<what>"``.
        covers: requirement ids the check proves; each must be in the manifest.
        timeout_seconds: wall-clock bound; the check fails when it runs out.
        own_engine: the check starts ``<target> engine`` itself or needs the profile to
            have none, so ``--attached`` must not start one for it.
        profile: one of :data:`PROFILES`, or several.
        needs: ``"target"``, ``"url"`` or ``"either"`` (see :class:`Check`).
        official: the check runs the official conformance package (``--official`` only).
        weight: ``"must"`` (default), ``"should"`` or ``"robustness"``: a failure of a ``must``
            check fails the run, of the others warns.
        source: where the rule is written; default :func:`contract_source` of ``covers``. A
            check of the generic profile (rules of every MCP server) names its section's URL
            (conformance/tests/test_verdicts.py holds every shipped one to that).
        revisions: the protocol revisions the rule belongs to (empty: all of them).

    Returns:
        A decorator that registers the function and returns it unchanged.

    Raises:
        ValueError: an unknown requirement id, profile or weight, or a name registered twice.
    """
    profiles = (profile,) if isinstance(profile, str) else tuple(profile)
    for one in profiles:
        if one not in PROFILES:
            raise ValueError(f"check {name!r} names unknown profile {one!r}")
    if weight not in tuple(Weight):
        raise ValueError(f"check {name!r} has weight {weight!r}, not one of {', '.join(Weight)}")
    if needs not in NEEDS:
        raise ValueError(f"check {name!r} needs {needs!r}, not one of {', '.join(NEEDS)}")
    known = set(requirement_ids())
    unknown = [c for c in covers if c not in known]
    if unknown:
        raise ValueError(f"check {name!r} covers unknown requirement ids: {', '.join(unknown)}")

    def register(fn: CheckFn) -> CheckFn:
        if name in CHECKS:
            raise ValueError(f"check {name!r} is registered twice")
        group = fn.__module__.rsplit(".", 1)[-1]
        CHECKS[name] = Check(
            name,
            group,
            tuple(covers),
            fn,
            float(timeout_seconds),
            own_engine,
            profiles,
            needs,
            official,
            Weight(weight),
            source or contract_source(covers),
            tuple(revisions),
        )
        return fn

    return register


def load_checks() -> dict[str, Check]:
    """Import every module of :mod:`shadowcode_conformance.checks` so their checks register.

    Returns:
        :data:`CHECKS`, name to :class:`Check`, in module then definition order.
    """
    import shadowcode_conformance.checks as package

    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if not info.name.startswith("_"):
            importlib.import_module(f"{package.__name__}.{info.name}")
    return CHECKS


def select(checks: Iterable[Check], patterns: Sequence[str]) -> list[Check]:
    """The checks whose name or group matches any pattern (``--only``).

    A pattern matches a check when it equals its group, is a shell-style wildcard matching
    its name or group, or is a substring of its name. No patterns selects everything.

    Args:
        checks: candidates, in order.
        patterns: patterns as typed; empty strings are ignored.

    Returns:
        The matching checks, order preserved.
    """
    wanted = [p for p in patterns if p]
    if not wanted:
        return list(checks)
    return [c for c in checks if any(fnmatchcase(c.name, p) or fnmatchcase(c.group, p) or p in c.name for p in wanted)]
