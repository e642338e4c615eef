"""One archive for every carried interpreter and platform (PKG-01).

``dist/shadowcode.pyz`` carries its pure-Python dependencies in shiv's ``site-packages/`` and
the compiled ones per wheel under ``_platlib/``; ``_platlib/manifest.json`` maps each tag
(``cp312-manylinux_x86_64``) to its wheels. Tags this machine cannot run (aarch64, 3.14) are
checked by reading the archive: the right compiled module, built for the right machine, is
there for each. The interpreters that are installed run it; an older one, or a platform the
archive lacks, gets one line on stderr and exit status 2. The unpack cache is keyed per
interpreter, survives an interrupted first run, refuses an unwritable folder with one clear
line, and takes two interpreters starting at once.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest

from shadowcode.mcp.server import READY_FD_ENV
from tests.packaging.test_zipapp_entry import ZIPAPP, _archive, _engine_mode, _put, _serve
from tests.support.engine import REPO, cli_env, headless_engine
from tests.support.interpreters import ARCHIVE_PYTHONS, default_python_version, find_python
from tests.support.process import wait_for
from tests.support.zipapp import PACKED, ZipappFiles

pytestmark = pytest.mark.req("PKG-01")

MACHINES = {"x86_64": 62, "aarch64": 183}
"""The carried Linux machines and their ELF ``e_machine`` numbers."""
RUN_TIMEOUT_SECONDS = 120
COMPILED = (
    "pydantic_core/_pydantic_core.cpython-{v}-{m}-linux-gnu.so",
    "rpds/rpds.cpython-{v}-{m}-linux-gnu.so",
    "_cffi_backend.cpython-{v}-{m}-linux-gnu.so",
    "cryptography/hazmat/bindings/_rust.abi3.so",
)
"""Every compiled module the product loads, per tag (``v`` = ``312``, ``m`` = machine)."""
INSTALLED = [v for v in ARCHIVE_PYTHONS if v != "3.14"]
"""The carried versions that may be installed here (3.14 is checked by reading the archive only)."""


def _built() -> Path:
    if not ZIPAPP.is_file():
        pytest.fail("build it first: bash ci/build")
    return ZIPAPP


def _python(version: str) -> str:
    found = find_python(version)
    if found is None:
        pytest.skip(f"no CPython {version} on this machine (looked for python{version} on PATH and under pyenv)")
    return found


def _run(
    python: str,
    *args: str,
    shiv_root: Path,
    home: Path,
    archive: Path | None = None,
    flags: tuple[str, ...] = (),
    stdin: str | None = None,
    **env: str,
):
    """Run the archive under ``python`` (with interpreter ``flags``) on a private HOME and shiv cache."""
    return subprocess.run(
        [python, *flags, str(archive or _built()), *args],
        input=stdin,
        env=dict(cli_env(home), SHIV_ROOT=str(shiv_root), **env),
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=RUN_TIMEOUT_SECONDS,
        check=False,
    )


def _tag(version: str) -> str:
    return f"cp{version.replace('.', '')}-manylinux_x86_64"


def _folder_tag(folder: Path) -> str:
    """``cp312-manylinux_x86_64`` from ``shadowcode.pyz_<build id>_cp312-manylinux_x86_64``."""
    return folder.name.split("_", 2)[2]


# --- the archive's contents -----------------------------------------------------------------


def test_every_carried_tag_has_each_compiled_module_built_for_its_machine() -> None:
    files = ZipappFiles(_built())
    tags = json.loads(files.read("_platlib/manifest.json"))["tags"]
    expected = {f"cp{v.replace('.', '')}-manylinux_{m}" for v in ARCHIVE_PYTHONS for m in MACHINES}
    assert set(tags) == expected
    for tag, entry in tags.items():
        version, machine = tag.split("-")[0][2:], tag.split("_", 1)[1]
        assert entry["glibc"] == "2.17", tag
        for module in COMPILED:
            path = module.format(v=version, m=machine)
            found = [f"_platlib/{w}/{path}" for w in entry["wheels"] if f"_platlib/{w}/{path}" in files.names]
            assert len(found) == 1, f"{tag} lacks {path}"
            elf = files.read(found[0])[:20]
            assert elf[:4] == b"\x7fELF" and int.from_bytes(elf[18:20], "little") == MACHINES[machine], found


def test_shiv_site_packages_holds_no_compiled_module_and_yaml_runs_pure() -> None:
    site = [n for n in ZipappFiles(_built()).names if n.startswith("site-packages/")]
    assert [n for n in site if n.endswith(".so")] == []
    assert "site-packages/yaml/__init__.py" in site
    assert "site-packages/cryptography/__init__.py" not in site  # compiled: under _platlib/, per machine


def test_a_start_reads_only_our_package_and_the_entry_the_rest_is_packed() -> None:
    # Python reads the archive's whole zip directory on every start and keeps it: the stdio
    # front and the relay need only our package, so every dependency sits in _packed.zip.
    files = ZipappFiles(_built())
    outside = [n for n in files.direct if not n.startswith("site-packages/shadowcode/")]
    assert sorted(outside) == sorted(
        ["__main__.py", "_shadowcode_unpack.py", "_shadowcode_unpack.pyc", "environment.json"]
        + ["_platlib/manifest.json", PACKED]
        + [n for n in files.direct if n.startswith("_bootstrap/")]
    )
    assert "site-packages/shadowcode/mcp/server/front.py" in files.direct
    assert "site-packages/shadowcode/mcp/server/front.pyc" in files.direct  # not compiled at each start
    assert "site-packages/pydantic/__init__.py" in files.packed
    assert not [n for n in files.packed if n.startswith("site-packages/shadowcode/")]


def test_a_stable_abi_wheel_is_stored_once_per_machine() -> None:
    rust = [n for n in ZipappFiles(_built()).names if n.endswith("/cryptography/hazmat/bindings/_rust.abi3.so")]
    assert len(rust) == len(MACHINES)


# --- running it -------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("version", INSTALLED)
def test_each_installed_interpreter_runs_help_and_status_from_its_own_cache(version: str, tmp_path: Path) -> None:
    python = _python(version)
    project = tmp_path / "project"
    project.mkdir()
    shiv_root = tmp_path / "shiv"

    helped = _run(python, "--help", shiv_root=shiv_root, home=tmp_path / "home")
    status = _run(python, "--workspace", str(project), "status", shiv_root=shiv_root, home=tmp_path / "home")

    assert helped.returncode == 0, helped.stderr
    assert "mcp" in helped.stdout
    assert status.returncode == 0, status.stderr
    assert status.stdout.strip()
    (folder,) = [p for p in shiv_root.iterdir() if p.is_dir()]
    assert _folder_tag(folder) == _tag(version)
    assert (folder / "complete").is_file()
    so = list((folder / "site-packages" / "pydantic_core").glob("*.so"))
    assert [p.name for p in so] == [f"_pydantic_core.cpython-{version.replace('.', '')}-x86_64-linux-gnu.so"]


@pytest.mark.slow
@pytest.mark.req("PKG-01", "SRV-21")
@pytest.mark.parametrize("version", INSTALLED)
def test_the_attached_fast_path_relays_without_unpacking_under_each_installed_interpreter(
    version: str, tmp_path: Path
) -> None:
    python = _python(version)
    home, project, shiv_root = tmp_path / "home", tmp_path / "project", tmp_path / "shiv"
    project.mkdir()
    shiv_root.mkdir()
    with headless_engine(home):
        answers = _serve(home, project, shiv_root, python=python)

    assert _engine_mode(answers) == "attached"
    assert list(shiv_root.iterdir()) == []


@pytest.mark.parametrize("args", [["--help"], ["status"], ["mcp", "serve"]])
def test_an_interpreter_older_than_the_archive_gets_one_line_and_exit_2(args: list[str], tmp_path: Path) -> None:
    python = _python("3.10")
    shiv_root = tmp_path / "shiv"

    done = _run(python, *args, shiv_root=shiv_root, home=tmp_path / "home")

    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert "CPython 3.10." in lines[0] and "x86_64" in lines[0]
    assert "CPython 3.11, 3.12, 3.13, 3.14 on Linux aarch64, x86_64" in lines[0]
    assert not shiv_root.exists()


def test_a_platform_the_archive_lacks_gets_one_line_and_exit_2(tmp_path: Path) -> None:
    archive = tmp_path / "other.pyz"
    manifest = {"tags": {"cp311-manylinux_riscv64": {"python": "3.11", "machine": "riscv64", "glibc": "2.31"}}}
    _archive(archive, {"__main__.py": b"", "_platlib/manifest.json": json.dumps(manifest).encode()})
    assert _put(archive).returncode == 0

    done = _run(sys.executable, "--help", shiv_root=tmp_path / "shiv", home=tmp_path / "home", archive=archive)

    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.count("\n") == 1
    version = ".".join(map(str, sys.version_info[:3]))
    assert f"does not run on CPython {version} on Linux x86_64 with glibc" in done.stderr
    assert "it runs on CPython 3.11 on Linux riscv64 with glibc 2.31 or newer" in done.stderr


# --- the unpack cache -----------------------------------------------------------------------


def test_an_interrupted_first_run_is_unpacked_again_never_imported(tmp_path: Path) -> None:
    shiv_root = tmp_path / "shiv"
    first = _run(sys.executable, "--help", shiv_root=shiv_root, home=tmp_path / "home")
    assert first.returncode == 0, first.stderr
    (folder,) = [p for p in shiv_root.iterdir() if p.is_dir()]
    site = folder / "site-packages"
    assert (site / "pydantic" / "__init__.py").is_file()  # from the inner _packed.zip
    assert (site / "shadowcode" / "mcp" / "server" / "front.py").is_file()  # an entry of the archive
    assert [p for p in site.rglob("*.pyc") if p.parent.name != "__pycache__"] == []  # archive bytecode stays
    assert not (folder / "_packed.zip").exists()
    # What a run killed half way leaves: a partial temporary folder, and (from an older writer)
    # a folder in place without the marker, holding a module that must never be imported.
    (folder / "complete").unlink()
    poisoned = folder / "site-packages" / "pydantic_core" / "__init__.py"
    poisoned.write_text("raise SystemExit('a half-written cache was imported')\n", encoding="utf-8")
    partial = folder.with_name(folder.name + ".tmp")
    (partial / "site-packages").mkdir(parents=True)
    (partial / "site-packages" / "stray.py").write_text("x = 1\n", encoding="utf-8")

    again = _run(sys.executable, "--workspace", str(tmp_path), "status", shiv_root=shiv_root, home=tmp_path / "home")

    assert again.returncode == 0, again.stderr
    assert (folder / "complete").is_file()
    assert "half-written" not in poisoned.read_text(encoding="utf-8")
    assert not partial.exists()
    assert not (folder / "site-packages" / "stray.py").exists()


def _serve_until(marker: str, shiv_root: Path, home: Path, project: Path, **env: str) -> Path:
    """Keep one ``mcp serve`` session open until the cache folder holds ``marker``; returns the folder.

    The deferred packages and the bytecode are written by a low-priority child of the process
    that unpacked, which ends with it: the session is kept open (an ``initialize`` sent, stdin
    left open) until that child has written ``marker`` or the bound passes.
    """
    project.mkdir(exist_ok=True)
    server = subprocess.Popen(
        [sys.executable, str(_built()), "--workspace", str(project), "mcp", "serve"],
        env=dict(cli_env(home), SHIV_ROOT=str(shiv_root), **env),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    try:
        assert server.stdin is not None
        server.stdin.write(json.dumps(initialize).encode("utf-8") + b"\n")  # a session kept open meanwhile
        server.stdin.flush()
        deadline = time.monotonic() + 3 * RUN_TIMEOUT_SECONDS  # a child at nice 19 on a loaded machine
        while not list(shiv_root.glob("*/" + marker)) and time.monotonic() < deadline and server.poll() is None:
            time.sleep(0.1)
        found = list(shiv_root.glob("*/" + marker))
    finally:
        _out, err = server.communicate(timeout=RUN_TIMEOUT_SECONDS)  # closes stdin: the session ends
    assert server.returncode == 0, err
    assert len(found) == 1, err
    return found[0].parent


@pytest.mark.timeout(4 * RUN_TIMEOUT_SECONDS)  # waits for the low-priority child: slow on a loaded machine
def test_the_bytecode_is_compiled_beside_the_first_run_even_with_bytecode_writing_off(tmp_path: Path) -> None:
    # Many container images set PYTHONDONTWRITEBYTECODE: without bytecode written once for the
    # whole copy, every later start would compile each module it imports again. It is written
    # by a low-priority child of the first run, not before its first answer.
    shiv_root = tmp_path / "shiv"
    folder = _serve_until("bytecode", shiv_root, tmp_path / "home", tmp_path / "project", PYTHONDONTWRITEBYTECODE="1")
    assert (folder / "complete.rest").is_file()  # the deferred packages are written before it compiles
    sources = list((folder / "site-packages").rglob("*.py"))
    assert len(sources) > 1000
    missing = [p for p in sources if not Path(importlib.util.cache_from_source(str(p))).is_file()]
    assert missing == []


def test_the_record_holds_every_unpacked_file_and_a_changed_one_is_unpacked_again(tmp_path: Path) -> None:
    shiv_root = tmp_path / "shiv"
    first = _run(sys.executable, "--help", shiv_root=shiv_root, home=tmp_path / "home")
    assert first.returncode == 0, first.stderr
    (folder,) = [p for p in shiv_root.iterdir() if p.is_dir()]
    record = (folder / "record.sha256").read_bytes()
    assert (folder / "complete").read_text(encoding="ascii").strip() == hashlib.sha256(record).hexdigest()
    tag, *lines = record.decode("utf-8").splitlines()
    assert tag == _folder_tag(folder)
    listed = {}
    for line in lines:
        digest, size, _mtime, path = line.split(" ", 3)
        listed[path] = (digest, int(size))
    unpacked = {
        p.relative_to(folder).as_posix()
        for p in (folder / "site-packages").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    deferred = set((folder / "deferred").read_text(encoding="utf-8").split())
    assert {"mcp", "typer", "rich", "cryptography"} <= deferred  # written after the start, or on first import
    assert set(listed) == {p for p in unpacked if p.split("/")[1] not in deferred} | {"deferred"}
    target = "site-packages/pydantic/__init__.py"
    data = (folder / target).read_bytes()
    assert listed[target] == (hashlib.sha256(data).hexdigest(), len(data))
    # A module rewritten after the unpack (same size, so only the time and digest differ) is
    # never imported: the copy is unpacked again, with one line saying so.
    (folder / target).write_bytes(b"raise SystemExit('a changed copy was imported')\n".ljust(len(data), b"#"))

    again = _run(sys.executable, "--workspace", str(tmp_path), "status", shiv_root=shiv_root, home=tmp_path / "home")

    assert again.returncode == 0, again.stderr
    assert "no longer matches its record; unpacking again" in again.stderr
    assert (folder / target).read_bytes() == data
    # A record rewritten with its marker (the marker matches, a line does not parse) is no
    # reason for a traceback either: the copy is unpacked again.
    garbled = (folder / "record.sha256").read_text(encoding="utf-8").replace(f" {len(data)} ", " many ", 1)
    (folder / "record.sha256").write_text(garbled, encoding="utf-8")
    digest = hashlib.sha256(garbled.encode("utf-8")).hexdigest()
    (folder / "complete").write_text(digest + "\n", encoding="ascii")

    third = _run(sys.executable, "--help", shiv_root=shiv_root, home=tmp_path / "home")

    assert third.returncode == 0, third.stderr
    assert "Traceback" not in third.stderr and "unpacking again" in third.stderr

    def files(text: bytes) -> list[tuple[str, str, str]]:  # digest, size and path: the times are new
        rows = [line.split(" ", 3) for line in text.decode("utf-8").splitlines()[1:]]
        return [(digest, size, path) for digest, size, _mtime, path in rows]

    assert files((folder / "record.sha256").read_bytes()) == files(record)


def _started(flags: list[str], shiv_root: Path, home: Path, **env: str) -> dict[str, Any]:
    """``sys.path`` and whether shiv's bootstrap module was imported, as the archive's command ran with them."""
    probe = "import json, sys; print('STARTED ' + json.dumps([sys.path, '_bootstrap' in sys.modules]))\n"
    # -i: the probe runs after the command
    done = _run(
        sys.executable,
        "--version",
        shiv_root=shiv_root,
        home=home,
        archive=_built(),
        flags=(*flags, "-i"),
        stdin=probe,
        **env,
    )
    (line,) = [ln for ln in done.stdout.splitlines() if "STARTED " in ln]
    path, shiv = json.loads(line.split("STARTED ", 1)[1])
    return {"path": path, "shiv": shiv}


@pytest.mark.parametrize("flags", [[], ["-S"]], ids=["host", "front-child"])
def test_a_checked_copy_starts_without_shivs_bootstrap_on_shivs_path_any_other_shiv_setting_through_it(
    flags: list[str], tmp_path: Path
) -> None:
    # issue 32: shiv's bootstrap module costs 20 to 30 ms of CPU per start (the stdio front's
    # child runs with -S); the copy is checked the same way either way (the test above).
    shiv_root, home = tmp_path / "shiv", tmp_path / "home"
    first = _run(sys.executable, "--help", shiv_root=shiv_root, home=home)
    assert first.returncode == 0, first.stderr

    direct = _started(flags, shiv_root, home)
    through = _started(flags, shiv_root, home, SHIV_COMPILE_WORKERS="1")  # no effect on a copy in place

    assert direct["shiv"] is False and through["shiv"] is True
    assert direct["path"] == through["path"]
    (folder,) = [p for p in shiv_root.iterdir() if p.is_dir()]
    assert str(folder / "site-packages") in direct["path"]


def test_an_unwritable_cache_folder_gets_one_clear_line(tmp_path: Path) -> None:
    blocker = tmp_path / "not a folder"
    blocker.write_text("", encoding="utf-8")  # works as root too, where permission bits do not stop writes
    shiv_root = blocker / "shiv"

    done = _run(sys.executable, "--help", shiv_root=shiv_root, home=tmp_path / "home")

    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.count("\n") == 1, done.stderr
    assert "cannot unpack the archive into" in done.stderr and "SHIV_ROOT" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through permission bits")
def test_a_read_only_cache_folder_gets_one_clear_line(tmp_path: Path) -> None:
    shiv_root = tmp_path / "shiv"
    shiv_root.mkdir(mode=0o555)
    try:
        done = _run(sys.executable, "--help", shiv_root=shiv_root, home=tmp_path / "home")
    finally:
        shiv_root.chmod(0o755)

    assert (done.returncode, done.stdout) == (1, "")
    assert "cannot unpack the archive into" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
def test_two_interpreters_starting_at_once_on_an_empty_cache_each_get_their_own(tmp_path: Path) -> None:
    other = next((v for v in INSTALLED if v != default_python_version() and find_python(v)), None)
    if other is None:
        pytest.skip("a second carried CPython is needed; only the default one is installed")
    pythons = [sys.executable, sys.executable, _python(other)]  # the same one twice, and another
    shiv_root = tmp_path / "shiv"
    env = dict(cli_env(tmp_path / "home"), SHIV_ROOT=str(shiv_root))
    procs = [
        subprocess.Popen(
            [p, str(_built()), "--workspace", str(tmp_path), "status"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        for p in pythons
    ]
    results = [p.communicate(timeout=RUN_TIMEOUT_SECONDS) for p in procs]

    assert [p.returncode for p in procs] == [0, 0, 0], [err for _out, err in results]
    folders = sorted(p for p in shiv_root.iterdir() if p.is_dir())
    assert [_folder_tag(f) for f in folders] == sorted({_tag(default_python_version()), _tag(other)})
    for folder in folders:
        assert (folder / "complete").is_file()
        found = {m[1] for p in (folder / "site-packages").rglob("*.so") if (m := re.search(r"cpython-(\d+)", p.name))}
        assert found == {_folder_tag(folder).split("-")[0][2:]}


# --- the two parts: what the first tool call needs, then the rest (issue 32) -------------------


def _unpack_module() -> Any:
    """``ci/zipapp_unpack.py`` as a module (the archive's ``_shadowcode_unpack``)."""
    spec = importlib.util.spec_from_file_location("zipapp_unpack", REPO / "ci" / "zipapp_unpack.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _first_call(project: Path, home: Path, argv: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    """Start ``argv`` serving stdio and send it initialize and a ``shadow_status`` call (stdin left open)."""
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
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "shadow_status", "arguments": {}}},
    ]
    project.mkdir(exist_ok=True)
    proc = subprocess.Popen(
        argv,
        env=dict(cli_env(home), **env),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    )
    assert proc.stdin is not None
    proc.stdin.write("".join(json.dumps(f) + "\n" for f in frames))
    proc.stdin.flush()
    return proc


def _status_answer(proc: subprocess.Popen[str]) -> dict[str, Any]:
    """The ``shadow_status`` result of a :func:`_first_call` process; closes its stdin and waits for its end."""
    try:
        out, err = proc.communicate(timeout=RUN_TIMEOUT_SECONDS)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    answers = {a.get("id"): a for a in (json.loads(line) for line in out.splitlines())}
    assert "result" in answers[2], (answers, err)
    assert answers[2]["result"].get("isError") is not True, answers[2]
    return answers[2]["result"]


def test_the_first_part_alone_serves_a_first_read_only_tool_call(tmp_path: Path) -> None:
    # What a first run unpacks before it serves must be all the stdio server's first shadow_status
    # call imports: its child's code runs here with only that on the path (no interpreter
    # site-packages, no finder writing deferred packages), and answers.
    unpack = _unpack_module()
    with zipfile.ZipFile(_built()) as archive:
        manifest = json.loads(archive.read("_platlib/manifest.json"))
        wheels = manifest["tags"][_tag(default_python_version())]["wheels"]
        deferred: set[str] = set()
        (tmp_path / "first").mkdir()
        unpack._extract(archive, str(tmp_path / "first"), wheels, first=frozenset(manifest["first"]), deferred=deferred)
    assert {"mcp", "typer", "rich", "pygments", "cryptography", "uvicorn", "starlette"} <= deferred
    site = tmp_path / "first" / "site-packages"
    assert not (site / "mcp").exists() and list(site.glob("mcp-*.dist-info"))  # metadata: all of it, first
    # Our modules' bytecode from the archive, where this interpreter's version built it: not compiled again.
    shipped = ZipappFiles(_built()).read("site-packages/shadowcode/__init__.pyc")
    cached = site / "shadowcode" / "__pycache__" / f"__init__.{sys.implementation.cache_tag}.pyc"
    if shipped[:4] == importlib.util.MAGIC_NUMBER:
        assert cached.read_bytes() == shipped
    else:
        assert not cached.exists()
    code = "import sys; sys.path.insert(0, sys.argv.pop(1)); from shadowcode.__main__ import main; main()"
    argv = [sys.executable, "-I", "-S", "-c", code, str(site), "--workspace", str(tmp_path / "project"), "mcp", "serve"]

    result = _status_answer(_first_call(tmp_path / "project", tmp_path / "home", argv, {READY_FD_ENV: "none"}))

    assert result["structuredContent"]["engine"]["mode"]


@pytest.mark.timeout(4 * RUN_TIMEOUT_SECONDS)  # waits for the low-priority child: slow on a loaded machine
def test_after_a_cold_server_start_a_deferred_package_is_written_when_needed_and_a_killed_rest_redone(
    tmp_path: Path,
) -> None:
    shiv_root, home, project = tmp_path / "shiv", tmp_path / "home", tmp_path / "project"
    argv = [sys.executable, str(_built()), "--workspace", str(project), "mcp", "serve"]
    _status_answer(_first_call(project, home, argv, {"SHIV_ROOT": str(shiv_root)}))
    (folder,) = [p for p in shiv_root.iterdir() if p.is_dir()]
    site = folder / "site-packages"
    # What a writer of the deferred packages killed half way leaves (or one that never ran):
    # no marker, some packages missing, and its own folder holding a partial package.
    for name in ("complete.rest", "record.rest.sha256"):
        (folder / name).unlink(missing_ok=True)
    for key in ("typer", "click", "rich", "mcp"):
        shutil.rmtree(site / key, ignore_errors=True)
    stale = folder / ".partial-999999999-x" / "site-packages" / "typer"
    stale.mkdir(parents=True)
    (stale / "__init__.py").write_text("raise SystemExit('a partial package was imported')\n", encoding="utf-8")

    helped = _run(sys.executable, "--help", shiv_root=shiv_root, home=home)  # typer and rich, at once

    assert helped.returncode == 0, helped.stderr
    assert "Usage" in helped.stdout and "Traceback" not in helped.stderr
    assert (site / "typer" / "__init__.py").is_file()
    # A session kept open: the low-priority child writes what is still missing, then the marker.
    assert _serve_until("complete.rest", shiv_root, home, project) == folder
    assert not stale.parent.parent.exists()
    assert (site / "mcp" / "__init__.py").is_file()
    tag = _folder_tag(folder)
    assert unpack_state(folder, tag) == "full"
    # A deferred file changed after its record was written is noticed like any other.
    target = site / "mcp" / "__init__.py"
    data = target.read_bytes()
    target.write_bytes(b"raise SystemExit('a changed copy was imported')\n".ljust(len(data), b"#"))

    again = _run(sys.executable, "--workspace", str(project), "status", shiv_root=shiv_root, home=home)

    assert again.returncode == 0, again.stderr
    assert "no longer matches its record; unpacking again" in again.stderr
    assert not target.exists() or target.read_bytes() == data


def test_a_copy_unpacked_again_while_a_writer_of_the_old_one_is_at_work_is_whole(tmp_path: Path) -> None:
    # A start finds the copy changed and unpacks it again while the low-priority writer of an
    # earlier start still writes deferred packages into the old copy, or removes its own folder
    # on being ended: the removal of the old copy never fails half way, and nothing is left
    # beside the new copy.
    unpack = _unpack_module()
    tag = _tag(default_python_version())
    folder = tmp_path / "shiv" / f"copy_{tag}"
    with zipfile.ZipFile(_built()) as archive:
        manifest = json.loads(archive.read("_platlib/manifest.json"))
        wheels, first = manifest["tags"][tag]["wheels"], frozenset(manifest["first"])
        assert unpack.unpack(archive, folder, tag, wheels, first, force=False) == "first"
        stop, errors = threading.Event(), []

        def writer() -> None:
            while not stop.is_set():
                try:
                    unpack._write_keys(str(_built()), str(folder), wheels, ["typer", "click"])
                    for key in ("typer", "click"):
                        shutil.rmtree(folder / "site-packages" / key, ignore_errors=True)
                except OSError:
                    pass  # the copy it wrote into was removed: what an old writer meets
                except Exception as exc:  # noqa: BLE001 - anything else is the test's failure
                    errors.append(exc)
                    return

        thread = threading.Thread(target=writer, daemon=True)
        thread.start()
        try:
            for _again in range(4):
                assert unpack.unpack(archive, folder, tag, wheels, first, force=True) == "first"
        finally:
            stop.set()
            thread.join(timeout=RUN_TIMEOUT_SECONDS)
    assert not errors and not thread.is_alive()
    for key in ("typer", "click"):
        shutil.rmtree(folder / "site-packages" / key, ignore_errors=True)  # the writer's last, if any
    assert unpack_state(folder, tag) == "first"
    assert sorted(p.name for p in folder.parent.iterdir()) == sorted([folder.name, f".{folder.name}_lock"])


def unpack_state(folder: Path, tag: str) -> str | None:
    """``"full"``, ``"first"`` or None: what the entry finds in ``folder`` at a start."""
    return _unpack_module()._state(str(folder), tag)


def _partials(folder: Path) -> list[str]:
    """The folders writers of deferred packages are writing into (``.partial-<pid>-...``)."""
    return [p.name for p in folder.iterdir() if p.name.startswith(".partial-")]


@pytest.mark.slow
@pytest.mark.timeout(8 * RUN_TIMEOUT_SECONDS)  # waits for the low-priority child: slow on a loaded machine
def test_a_writer_of_the_deferred_packages_ended_half_way_removes_its_own_folder(tmp_path: Path) -> None:
    # The session ends (its host killed it) while its low-priority child writes the rest: the
    # child ends too (SIGTERM) and takes the folder it was writing into with it.
    shiv_root, home, project = tmp_path / "shiv", tmp_path / "home", tmp_path / "project"
    argv = [sys.executable, str(_built()), "--workspace", str(project), "mcp", "serve"]
    _status_answer(_first_call(project, home, argv, {"SHIV_ROOT": str(shiv_root)}))
    (folder,) = [p for p in shiv_root.iterdir() if p.is_dir()]
    for _attempt in range(5):
        wait_for(lambda: not _partials(folder))  # the first session's writer, ended with it
        for name in ("complete.rest", "record.rest.sha256"):
            (folder / name).unlink(missing_ok=True)
        for key in ("typer", "rich", "click", "pygments", "cryptography"):
            shutil.rmtree(folder / "site-packages" / key, ignore_errors=True)
        server = _first_call(project, home, argv, {"SHIV_ROOT": str(shiv_root)})
        try:
            seen = wait_for(lambda: _partials(folder) or (folder / "complete.rest").exists())
        finally:
            server.kill()
            server.communicate(timeout=RUN_TIMEOUT_SECONDS)
        if seen is True:
            continue  # the writer finished before it was seen at work: again
        wait_for(lambda: not _partials(folder))
        assert unpack_state(folder, _folder_tag(folder)) == "first"
        return
    pytest.fail("the writer of the deferred packages was never seen at work")


@pytest.mark.slow
@pytest.mark.timeout(4 * RUN_TIMEOUT_SECONDS)  # waits for the low-priority child: slow on a loaded machine
def test_two_cold_starts_at_once_both_answer_and_share_one_copy(tmp_path: Path) -> None:
    # Two hosts starting the server under the same new HOME at the same moment; then two
    # commands at once that both need the same deferred package (each writes it, one rename wins).
    shiv_root, project = tmp_path / "shiv", tmp_path / "project"
    argv = [sys.executable, str(_built()), "--workspace", str(project), "mcp", "serve"]
    servers = [_first_call(project, tmp_path / f"home{i}", argv, {"SHIV_ROOT": str(shiv_root)}) for i in (1, 2)]
    for server in servers:
        _status_answer(server)
    (folder,) = [p for p in shiv_root.iterdir() if p.is_dir()]
    for name in ("complete.rest", "record.rest.sha256"):
        (folder / name).unlink(missing_ok=True)
    for key in ("typer", "rich", "click"):
        shutil.rmtree(folder / "site-packages" / key, ignore_errors=True)
    env = dict(cli_env(tmp_path / "home1"), SHIV_ROOT=str(shiv_root))
    helps = [
        subprocess.Popen(
            [sys.executable, str(_built()), "--help"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        for _ in (1, 2)
    ]
    results = [p.communicate(timeout=RUN_TIMEOUT_SECONDS) for p in helps]

    assert [p.returncode for p in helps] == [0, 0], [err for _out, err in results]
    assert results[0][0] == results[1][0] and "Usage" in results[0][0]
    # Each low-priority writer ends with its command (SIGTERM) and removes its own folder.
    wait_for(lambda: not _partials(folder))
    assert _serve_until("complete.rest", shiv_root, tmp_path / "home1", project) == folder
    assert unpack_state(folder, _folder_tag(folder)) == "full"
