"""Running one registered conformance check in-process, for the tests of the checks themselves.

``SUITE`` is this distribution's package folder (``conformance/shadowcode_conformance/``, or the
same in a copy of ``conformance/`` anywhere): the tests read its ``fixtures/``, ``node_probes/``
and ``baselines/`` from there, never from a checkout.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import anyio
import pytest

import shadowcode_conformance
from shadowcode_conformance.registry import CHECKS, load_checks
from shadowcode_conformance.report import CheckRecord
from shadowcode_conformance.runner import run_one

SUITE = Path(__file__).resolve().parents[1] / "shadowcode_conformance"

needs_product = pytest.mark.skipif(
    importlib.util.find_spec("shadowcode") is None,
    reason="starts the ShadowCode implementation (python -m shadowcode), which is not installed here: "
    "the product's checkout runs this test",
)
"""For the few tests that run the suite against the implementation it was written for."""


IN_CHECKOUT = (SUITE.parents[1] / "ci" / "setup").is_file()
"""Whether this folder sits in the product's checkout, whose ``bash ci/setup`` installs the peers."""


def peer_missing(what: str) -> NoReturn:
    """A pinned peer server the test needs is not installed: in the product's checkout a failure
    (``bash ci/setup`` installs it), in a copy of this folder alone a skip saying what is missing."""
    if IN_CHECKOUT:
        pytest.fail(f"needs {what}: bash ci/setup")
    pytest.skip(f"needs {what}, which this copy of the suite does not have installed beside it")


def conformance_env() -> dict[str, str]:
    """This process's environment, with ``PYTHONPATH`` set so that a child ``python -m shadowcode_conformance``
    imports the same package as this process (a checkout's ``conformance/`` folder or an install)."""
    return dict(os.environ, PYTHONPATH=str(Path(shadowcode_conformance.__file__).resolve().parents[1]))


def wait_for(condition: Callable[[], Any], seconds: float = 30.0) -> Any:
    """Poll ``condition`` until it returns something true, and return that; TimeoutError after
    ``seconds`` (generous: a loaded 2-core machine starts Python slowly)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    raise TimeoutError("condition not met in time")


def stand_in_project(dest: Path) -> Path:
    """A project of one README: enough for a check that never gets past its set-up."""
    dest.mkdir(parents=True)
    (dest / "README.md").write_text("# stand-in\n", encoding="utf-8")
    return dest.resolve()


def sample_project(dest: Path) -> Path:
    """The real sample project's files (no database needed here)."""
    shutil.copytree(SUITE / "fixtures" / "projects" / "sample", dest)
    return dest.resolve()


def run_check(
    name: str,
    target: list[str],
    project_factory: Callable[[Path], Path] = stand_in_project,
    *,
    bound_seconds: float | None = None,
) -> list[CheckRecord]:
    """Run the registered check ``name`` against ``target``; its record, then its sub-records.

    The run is bounded by ``bound_seconds`` (default: the check's own bound plus 10 s).
    """
    load_checks()
    chk = CHECKS[name]
    bound = chk.timeout_seconds + 10 if bound_seconds is None else bound_seconds

    async def go() -> tuple[list[CheckRecord], dict[str, str]]:
        with anyio.fail_after(bound):
            return await run_one(
                chk, target=target, cwd=Path.cwd(), repo_root=SUITE, project_factory=project_factory
            )

    records, _ = anyio.run(go)
    return records
