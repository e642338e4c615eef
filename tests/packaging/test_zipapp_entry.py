"""The zipapp's own entry: relay from inside the archive, else shiv's bootstrap (PKG-01, SRV-21, issue 7).

``ci/build`` swaps shiv's ``__main__.py`` for ``ci/zipapp_entry.py`` with
``ci/put_zipapp_entry.py``, which also packs every file no start reads into an inner zip.
These tests check the swap and the packing on small archives, then the built
``dist/shadowcode.pyz``: with a headless engine running, ``mcp serve`` answers through the
engine and unpacks nothing into shiv's cache; without one (or with a stale socket file) it
unpacks and serves in-process as before.
"""

from __future__ import annotations

import importlib.util
import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.support.engine import REPO, cli_env, headless_engine
from tests.support.zipapp import PACKED, ZipappFiles

ZIPAPP = REPO / "dist" / "shadowcode.pyz"
PUT_ENTRY = REPO / "ci" / "put_zipapp_entry.py"
ENTRY = REPO / "ci" / "zipapp_entry.py"
UNPACK = REPO / "ci" / "zipapp_unpack.py"
SERVE_TIMEOUT_SECONDS = 60


def _archive(path: Path, names: dict[str, bytes], shebang: bytes = b"#!/usr/bin/env python3\n") -> None:
    with path.open("wb") as out:
        out.write(shebang)
        with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as z:
            for name, data in names.items():
                z.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data, zipfile.ZIP_DEFLATED)
    path.chmod(0o755)


def _put(archive: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(PUT_ENTRY), str(archive), *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
        check=False,
    )


@pytest.mark.req("PKG-01")
def test_put_entry_replaces_main_keeps_shebang_dates_and_mode_and_packs_what_no_start_reads(tmp_path: Path) -> None:
    archive = tmp_path / "app.pyz"
    names = {
        "_bootstrap/__init__.py": b"x = 1\n",
        "__main__.py": b"import _bootstrap\n",
        "environment.json": b"{}",
        "site-packages/a.py": b"a\n",
        "site-packages/ours/m.py": b"m = 1\n",
    }
    _archive(archive, names, shebang=b"#!/usr/bin/env python3\n")
    before = {i.filename: i for i in zipfile.ZipFile(archive).infolist()}

    done = _put(archive, "--keep", "site-packages/ours/")

    assert done.returncode == 0, done.stderr
    assert archive.read_bytes().startswith(b"#!/usr/bin/env python3\n")
    assert archive.stat().st_mode & 0o777 == 0o755
    files = ZipappFiles(archive)
    kept = ["_bootstrap/__init__.py", "__main__.py", "environment.json", "site-packages/ours/m.py"]
    unpack = ["_shadowcode_unpack.py", "_shadowcode_unpack.pyc"]  # imported by the entry only to unpack
    assert files.direct == [*kept, "site-packages/ours/m.pyc", *unpack, PACKED]
    assert files.packed == ["site-packages/a.py"]
    assert files.read("__main__.py") == ENTRY.read_bytes()
    assert files.read("_shadowcode_unpack.py") == UNPACK.read_bytes()
    # The kept module's bytecode: this interpreter's magic number, checked against the source's hash.
    pyc = files.read("site-packages/ours/m.pyc")
    assert pyc[:4] == importlib.util.MAGIC_NUMBER
    assert int.from_bytes(pyc[4:8], "little") == 0b11
    assert pyc[8:16] == importlib.util.source_hash(b"m = 1\n")
    with zipfile.ZipFile(archive) as z:
        assert z.getinfo(PACKED).compress_type == zipfile.ZIP_STORED
        infos = [i for i in z.infolist()[:-1] if not i.filename.startswith("_shadowcode_unpack.")]
        infos = [i for i in infos if not i.filename.endswith(".pyc")]
        infos += zipfile.ZipFile(io.BytesIO(z.read(PACKED))).infolist()
    for info in infos:
        assert info.date_time == before[info.filename].date_time
        assert info.compress_type == before[info.filename].compress_type
        if info.filename != "__main__.py":
            assert files.read(info.filename) == names[info.filename]
    assert list(tmp_path.iterdir()) == [archive]


@pytest.mark.req("PKG-01")
def test_put_entry_adds_the_platlib_files_sorted_with_fixed_dates_and_modes_and_packs_all_but_the_manifest(
    tmp_path: Path,
) -> None:
    archive = tmp_path / "app.pyz"
    names = {"__main__.py": b"import _bootstrap\n", "site-packages/a.py": b"a\n"}
    _archive(archive, names)
    platlib = tmp_path / "platlib"
    (platlib / "w-1-cp312" / "pkg").mkdir(parents=True)
    (platlib / "w-1-cp312" / "pkg" / "m.so").write_bytes(b"\x7fELF")
    (platlib / "w-1-cp312" / "pkg" / "m.so").chmod(0o700)
    (platlib / "manifest.json").write_text("{}", encoding="utf-8")

    done = _put(archive, str(platlib))

    assert done.returncode == 0, done.stderr
    files = ZipappFiles(archive)
    unpack = ["_shadowcode_unpack.py", "_shadowcode_unpack.pyc"]
    assert files.direct == ["__main__.py", *unpack, "_platlib/manifest.json", PACKED]
    assert files.packed == ["site-packages/a.py", "_platlib/w-1-cp312/pkg/m.so"]
    assert files.read("_platlib/w-1-cp312/pkg/m.so") == b"\x7fELF"
    with zipfile.ZipFile(archive) as z:
        inner = zipfile.ZipFile(io.BytesIO(z.read(PACKED))).infolist()
        infos = [*z.infolist(), *inner]
    assert {i.date_time for i in infos} == {(1980, 1, 1, 0, 0, 0)}
    assert [i.external_attr >> 16 for i in (infos[3], inner[1])] == [0o100644, 0o100755]


@pytest.mark.req("PKG-01")
def test_put_entry_gives_the_same_bytes_twice(tmp_path: Path) -> None:
    built = []
    for name in ("one", "two"):
        archive = tmp_path / name / "app.pyz"
        archive.parent.mkdir()
        _archive(archive, {"__main__.py": b"import _bootstrap\n", "site-packages/a.py": b"a\n"})
        assert _put(archive).returncode == 0
        built.append(archive.read_bytes())
    assert built[0] == built[1]


@pytest.mark.req("PKG-01")
@pytest.mark.parametrize(
    ("names", "shebang", "said"),
    [
        ({"a.py": b"a\n"}, b"#!/usr/bin/env python3\n", "has no __main__.py"),
        ({"__main__.py": b"pass\n"}, b"", "does not start with a shebang"),
    ],
)
def test_put_entry_refuses_an_archive_it_cannot_fix_and_leaves_it_alone(
    tmp_path: Path, names: dict[str, bytes], shebang: bytes, said: str
) -> None:
    archive = tmp_path / "app.pyz"
    _archive(archive, names, shebang=shebang)
    original = archive.read_bytes()

    done = _put(archive)

    assert done.returncode != 0
    assert said in done.stderr
    assert archive.read_bytes() == original
    assert list(tmp_path.iterdir()) == [archive]


# --- the built archive ----------------------------------------------------------------------


def _built() -> Path:
    if not ZIPAPP.is_file():
        pytest.fail("build it first: bash ci/build")
    return ZIPAPP


def _serve(home: Path, project: Path, shiv_root: Path, python: str = sys.executable) -> list[dict[str, Any]]:
    """``python shadowcode.pyz mcp serve`` for one initialize, tools/list and shadow_status; the answers."""
    frames = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "shadow_status", "arguments": {}}},
    ]
    done = subprocess.run(
        [python, str(_built()), "--workspace", str(project), "mcp", "serve"],
        input="".join(json.dumps(f) + "\n" for f in frames),
        env=dict(cli_env(home), SHIV_ROOT=str(shiv_root)),
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=SERVE_TIMEOUT_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    # JSON-RPC answers in any order: the tool call may be answered before the listing.
    answers = sorted((json.loads(line) for line in done.stdout.splitlines()), key=lambda a: str(a.get("id")))
    assert [a.get("id") for a in answers] == [1, 2, 3], done.stdout
    return answers


def _engine_mode(answers: list[dict[str, Any]]) -> str:
    return answers[2]["result"]["structuredContent"]["engine"]["mode"]


@pytest.mark.req("PKG-01", "SRV-21")
def test_with_an_engine_the_archive_relays_without_unpacking_anything(tmp_path: Path) -> None:
    home, project, shiv_root = tmp_path / "home", tmp_path / "project", tmp_path / "shiv"
    project.mkdir()
    shiv_root.mkdir()
    with headless_engine(home):
        answers = _serve(home, project, shiv_root)

    assert len(answers[1]["result"]["tools"]) > 0
    assert _engine_mode(answers) == "attached"
    assert list(shiv_root.iterdir()) == []


@pytest.mark.req("PKG-01")
def test_without_an_engine_the_archive_unpacks_and_serves_in_process(tmp_path: Path) -> None:
    home, project, shiv_root = tmp_path / "home", tmp_path / "project", tmp_path / "shiv"
    project.mkdir()
    shiv_root.mkdir()

    answers = _serve(home, project, shiv_root)

    assert _engine_mode(answers) == "temporary"
    assert list(shiv_root.iterdir()) != []


@pytest.mark.req("PKG-01")
def test_a_stale_socket_file_falls_back_to_the_in_process_server(tmp_path: Path) -> None:
    home, project, shiv_root = tmp_path / "home", tmp_path / "project", tmp_path / "shiv"
    project.mkdir()
    shiv_root.mkdir()
    stale = home / "profiles" / "default" / "run" / "control.sock"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"")  # a path that exists but accepts no connection

    answers = _serve(home, project, shiv_root)

    assert _engine_mode(answers) == "temporary"
    assert list(shiv_root.iterdir()) != []
