"""The fault set of ci/faults.yml still applies to the product: each `find` occurs exactly once."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

from conformance.requirements import requirement_ids

REPO = Path(__file__).resolve().parents[1]


def _harness():
    spec = importlib.util.spec_from_file_location("ci_faults", REPO / "ci" / "faults.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["ci_faults"] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.req("CONF-01")
def test_every_fault_applies_once_and_names_known_ids() -> None:
    faults = _harness().load_faults(REPO / "ci" / "faults.yml")
    assert len(faults) >= 25
    known = set(requirement_ids())
    for fault in faults:
        assert fault["file"].startswith("shadowcode/"), fault["name"]
        assert fault["covers"] and set(fault["covers"]) <= known, fault["name"]
        assert fault["find"] != fault["replace"], fault["name"]


@pytest.mark.req("CONF-01")
def test_a_copy_carries_the_fault_and_the_checkout_does_not() -> None:
    harness = _harness()
    fault = harness.load_faults(REPO / "ci" / "faults.yml")[0]
    copy = harness.make_copy(fault)
    try:
        text = (copy / fault["file"]).read_text(encoding="utf-8")
        assert fault["replace"] in text and fault["find"] not in text
        assert (REPO / fault["file"]).read_text(encoding="utf-8").count(fault["find"]) == 1
    finally:
        shutil.rmtree(copy)


@pytest.mark.req("CONF-01")
def test_a_find_that_is_not_unique_is_refused(tmp_path: Path) -> None:
    listing = tmp_path / "faults.yml"
    listing.write_text(
        '- {name: x, covers: [SRV-01], file: shadowcode/limits.py, find: "Final", replace: "Final"}\n',
        encoding="utf-8",
    )
    with pytest.raises(SystemExit, match="occurs .* times"):
        _harness().load_faults(listing)
