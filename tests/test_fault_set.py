"""The fault set of ci/faults.yml still applies to the product (each `find` occurs exactly once), and
``--pyz`` puts a fault into a copy of the archive and nothing else."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest

from shadowcode_conformance.requirements import requirement_ids

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


# --- --pyz: the fault applied to its entry in a copy of the built archive ----------------------------

SHEBANG = b"#!/usr/bin/env python3\n"


def _zipapp(path: Path, entries: dict[str, bytes], shebang: bytes = SHEBANG) -> Path:
    """A small zipapp: a shebang line, then entries with their own dates, modes and compression."""
    with path.open("wb") as f:
        f.write(shebang)
        with zipfile.ZipFile(f, "w") as zf:
            for n, (name, data) in enumerate(entries.items()):
                info = zipfile.ZipInfo(name, date_time=(2020, 1 + n % 12, 2, 3, 4, 6))
                info.external_attr = (0o100755 if name.endswith(".so") else 0o100644) << 16
                stored = name.endswith((".so", ".zip"))
                zf.writestr(info, data, compress_type=zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED)
    path.chmod(0o755)
    return path


def _fault_and_text() -> tuple[dict, bytes]:
    fault = _harness().load_faults(REPO / "ci" / "faults.yml")[0]
    return fault, (REPO / fault["file"]).read_bytes()


@pytest.mark.req("CONF-01")
def test_the_archive_copy_holds_the_faulted_text_and_every_other_entry_unchanged(tmp_path: Path) -> None:
    harness = _harness()
    fault, text = _fault_and_text()
    member = "site-packages/" + fault["file"]
    entries = {
        "__main__.py": b"import sys\nsys.stdout.write('ran ' + sys.argv[0])\n",
        "site-packages/shadowcode/__init__.py": b'"""ShadowCode."""\n' * 40,
        member: text,
        "site-packages/shadowcode/limits.py": text,  # the same text elsewhere stays as it was
        "_platlib/x/mod.so": bytes(range(256)) * 8,
    }
    archive = _zipapp(tmp_path / "shadowcode.pyz", entries)
    before = archive.read_bytes()
    dest = tmp_path / "copy.pyz"

    faulted = harness.faulted_member(archive, fault)
    harness.rewrite_member(archive, dest, member, faulted)

    assert archive.read_bytes() == before
    assert faulted == text.decode("utf-8").replace(fault["find"], fault["replace"]).encode("utf-8")
    assert fault["find"].encode() not in faulted and fault["replace"].encode() in faulted
    assert dest.read_bytes().startswith(SHEBANG) and dest.stat().st_mode & 0o777 == 0o755
    with zipfile.ZipFile(archive) as old, zipfile.ZipFile(dest) as new:
        assert new.namelist() == old.namelist()
        for a, b in zip(old.infolist(), new.infolist(), strict=True):
            assert (b.date_time, b.compress_type, b.external_attr) == (a.date_time, a.compress_type, a.external_attr)
            if a.filename == member:
                assert new.read(b) == faulted
            else:
                assert new.read(b) == old.read(a), a.filename
                assert harness.raw_entry(dest, b) == harness.raw_entry(archive, a), a.filename
    # Still a zipapp the interpreter runs, through the shebang's offset.
    done = subprocess.run([sys.executable, str(dest)], capture_output=True, text=True, encoding="utf-8", timeout=60)
    assert done.returncode == 0 and done.stdout == f"ran {dest}", done.stderr


@pytest.mark.req("CONF-01")
def test_a_file_that_is_not_a_direct_entry_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    harness = _harness()
    fault, text = _fault_and_text()
    inner = tmp_path / "inner.zip"
    with zipfile.ZipFile(inner, "w") as zf:
        zf.writestr("site-packages/" + fault["file"], text)
    archive = _zipapp(
        tmp_path / "shadowcode.pyz", {"__main__.py": b"pass\n", "_packed.zip": inner.read_bytes()}
    )  # fmt: skip
    with pytest.raises(SystemExit, match=r"not a direct entry .*_packed\.zip"):
        harness.faulted_member(archive, fault)
    with pytest.raises(SystemExit, match="not a direct entry"):
        harness.rewrite_member(archive, tmp_path / "copy.pyz", "site-packages/" + fault["file"], b"x")
    # pyz_copy removes its temporary folder when it refuses, and so does the command line.
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    with pytest.raises(SystemExit, match="not a direct entry"):
        harness.pyz_copy(archive, fault)
    assert list(scratch.iterdir()) == []
    argv = ["--pyz", "--archive", str(archive), "--only", fault["name"], "--out", str(tmp_path / "out")]
    with pytest.raises(SystemExit, match="not a direct entry"):
        harness.main(argv)
    assert list(scratch.iterdir()) == []


@pytest.mark.req("CONF-01")
def test_a_find_missing_from_the_archive_is_refused(tmp_path: Path) -> None:
    harness = _harness()
    fault, _ = _fault_and_text()
    archive = _zipapp(tmp_path / "shadowcode.pyz", {"site-packages/" + fault["file"]: b"# another tree\n"})
    with pytest.raises(SystemExit, match="occurs 0 times .*rebuild"):
        harness.faulted_member(archive, fault)


def test_module_names_and_the_packaged_target() -> None:
    harness = _harness()
    assert harness.module_name("shadowcode/engine/state.py") == "shadowcode.engine.state"
    assert harness.module_name("shadowcode/engine/__init__.py") == "shadowcode.engine"
    argv = harness.pyz_argv(Path("/t/shadowcode.pyz"), Path("/t/root"))
    assert argv[:2] == ["env", "SHIV_ROOT=/t/root"] and argv[-1] == "/t/shadowcode.pyz"
    assert not argv[2].startswith(sys.prefix) or sys.prefix == sys.base_prefix  # not the venv's python
