"""Runs the measurement rounds, interleaving targets so that drift hits every server alike.

Order: one untimed warm-up spawn per target (page cache, warm shiv cache, the profile's
store created), then ``rounds`` start-up rounds, then ``call_rounds`` call rounds. Each
round visits every target once, starting one place further along the list than the round
before. A failed measurement is recorded against its target and the run goes on.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.driver import BenchError, CallOptions, run_calls, run_startup
from bench.targets import Target

__all__ = ["BenchOptions", "Samples", "run_rounds"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class BenchOptions:
    """Repetition counts of one benchmark run.

    Attributes:
        rounds: start-up rounds (one timed spawn per target per round).
        cold_rounds: how many of those rounds also time the empty-cache zipapp (slow).
        call_rounds: call rounds (one connection per target per round).
        call: what each call round measures.
        timeout_seconds: deadline of one driver run.
    """

    rounds: int
    cold_rounds: int
    call_rounds: int
    call: CallOptions
    timeout_seconds: float


@dataclass
class Samples:
    """What was measured for one target.

    Attributes:
        startup: one driver record per timed spawn (see ``bench.driver.run_startup``).
        calls: one driver report per call round (see ``bench.driver.run_calls``).
        errors: messages of failed measurements, in order.
    """

    startup: list[dict[str, Any]] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _rotated(items: Sequence[Target], by: int) -> list[Target]:
    if not items:
        return []
    k = by % len(items)
    return [*items[k:], *items[:k]]


def run_rounds(
    repo: Path, node: str, targets: Sequence[Target], env: dict[str, str], options: BenchOptions
) -> dict[str, Samples]:
    """Measure every available target.

    Args:
        repo: repository root.
        node: the node executable.
        targets: what to measure; those with ``unavailable`` set are skipped.
        env: environment of the drivers and servers.
        options: repetition counts.

    Returns:
        Samples by target name, for the available targets only.
    """
    live = [t for t in targets if t.unavailable is None]
    samples = {t.name: Samples() for t in live}
    timeout = options.timeout_seconds

    def record_error(target: Target, exc: BenchError) -> None:
        samples[target.name].errors.append(exc.message)
        logger.warning("%s", exc.message)

    logger.info("warm-up: one untimed spawn per target")
    for target in live:
        try:
            run_startup(repo, node, target, env, runs=0, warmup=1, timeout=timeout)
        except BenchError as exc:
            record_error(target, exc)

    for r in range(options.rounds):
        logger.info("start-up round %d/%d", r + 1, options.rounds)
        for target in _rotated(live, r):
            if target.fresh_dir_env and r >= options.cold_rounds:
                continue
            try:
                samples[target.name].startup += run_startup(repo, node, target, env, runs=1, warmup=0, timeout=timeout)
            except BenchError as exc:
                record_error(target, exc)

    callers = [t for t in live if t.measure_calls]
    for r in range(options.call_rounds):
        logger.info("call round %d/%d", r + 1, options.call_rounds)
        for target in _rotated(callers, r):
            try:
                samples[target.name].calls.append(run_calls(repo, node, target, env, options.call, timeout=timeout))
            except BenchError as exc:
                record_error(target, exc)
    return samples
