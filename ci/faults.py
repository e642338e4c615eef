"""Inject faults into a copy of ``shadowcode/`` one at a time and see whether the conformance suite catches each.

Usage (through ``bash ci/faults``)::

    ci/faults                 every fault in ci/faults.yml
    ci/faults --only NAME     one fault (repeatable)
    ci/faults --verify        the checks each fault is tried with first, against the unmodified tree
    ci/faults --ids-only      skip the whole run for a fault the checks of its ids miss
    ci/faults --suite COMMIT  run the conformance suite as it was at COMMIT (to measure before new checks)
    ci/faults --pyz           the same faults, each in a copy of the built archive (dist/shadowcode.pyz)
    ci/faults --pyz --archive PATH   ... of another archive
    ci/faults --attached      every check (but those with their own engine) beside the target's engine

A fault is ``{name, covers: [ids], file: shadowcode/..., find: "...", replace: "..."}``; ``find``
must occur exactly once in ``file``. For each fault ``shadowcode/`` is copied into a fresh
temporary folder, the replacement applied there, and the suite run against
``env PYTHONPATH=<copy> <this python> -m shadowcode``: first only the checks covering the fault's
ids (``python -m shadowcode_conformance --list``), and when none of them fails, the whole default run. A
fault is caught when a run exits non-zero with at least one failing check.

The runner itself runs in a temporary folder with the suite's folder on its PYTHONPATH: the suite
starts targets in its own working directory, and ``python -m`` puts that directory first on
``sys.path``, so a run from the checkout would import the checkout's ``shadowcode`` and never
the copy. The runner leaves PYTHONPATH out of every target's environment; the target command
sets its own. Each copy is checked to be the one imported before the suite runs.

With ``--pyz`` nothing is rebuilt: for each fault the archive is copied into a fresh temporary
folder with the one entry ``site-packages/shadowcode/<path>`` replaced by the faulted text (every
other entry, the shebang, dates, compression and mode kept; see :func:`rewrite_member`), and the
suite runs against ``env SHIV_ROOT=<fresh empty folder> <base python3> <copy>``: the interpreter
behind the virtualenv, so nothing outside the archive satisfies an import, and an unpack folder
of its own, so no unpacked copy of another fault or of the unmodified archive (they share the
build id that names shiv's folder) is used. ``SHIV_ROOT`` is also set for the runner, so a
process a client starts from a registered command (which names the copy without ``env``) unpacks
into the same folder. Before the suite runs, the faulted entry is read back from the copy, the
target command must run from the run's folder, and the copy's interpreter must import the
faulted module from the unpacked copy with the faulted text in it. A fault whose file is not a
direct entry of the archive (say, inside a nested zip) is refused.

Writes a Markdown table to stdout and ``faults-out/faults.json`` (``--out`` to change the folder;
``--pyz`` writes into ``faults-out/pyz/``, ``--attached`` into ``faults-out/attached/`` or
``faults-out/pyz-attached/``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
FAULTS = REPO / "ci" / "faults.yml"
KEYS = {"name", "covers", "file", "find", "replace"}
SUITE = REPO
"""The folder whose conformance suite runs: the checkout, or an older suite (``--suite``)."""
PACKAGE = "shadowcode_conformance"
"""The suite's import name; an older suite (before it had a name of its own) is ``conformance``."""


def suite_layout(folder: Path) -> tuple[Path, str]:
    """The folder ``folder``'s suite imports from (for ``PYTHONPATH``) and its import name."""
    if (folder / "conformance" / PACKAGE).is_dir():
        return folder / "conformance", PACKAGE
    return folder, "conformance"  # a suite from before conformance/shadowcode_conformance/


def load_faults(path: Path) -> list[dict]:
    """The fault list, each entry checked for its keys and a ``find`` occurring exactly once."""
    faults = yaml.safe_load(path.read_text(encoding="utf-8")) or []
    names = set()
    for fault in faults:
        if set(fault) != KEYS:
            raise SystemExit(f"{fault.get('name', fault)}: keys must be exactly {sorted(KEYS)}")
        if fault["name"] in names:
            raise SystemExit(f"{fault['name']}: listed twice")
        names.add(fault["name"])
        text = (REPO / fault["file"]).read_text(encoding="utf-8")
        count = text.count(fault["find"])
        if count != 1:
            raise SystemExit(f"{fault['name']}: `find` occurs {count} times in {fault['file']}, not once")
    return faults


def checks_by_id(run_dir: Path) -> dict[str, list[str]]:
    """Requirement id to the registered checks covering it, from ``python -m shadowcode_conformance --list``."""
    done = subprocess.run(
        [sys.executable, "-m", suite_layout(SUITE)[1], "--list"],
        cwd=run_dir, env=runner_env(), capture_output=True, text=True, encoding="utf-8", check=True,
    )  # fmt: skip
    index: dict[str, list[str]] = {}
    for line in done.stdout.splitlines():
        name, ids, *_ = line.split("\t")  # then its links
        for rid in filter(None, ids.split(",")):
            index.setdefault(rid, []).append(name)
    return index


def runner_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = str(suite_layout(SUITE)[0])
    return env


def export_suite(commit: str) -> Path:
    """The suite as of ``commit`` in a temporary folder: ``conformance/`` (and, before they moved into it,
    ``fixtures/`` and ``node_probes/``), with the checkout's installed Node peers linked in."""
    installed = REPO / "conformance" / PACKAGE / "node_probes" / "node_modules"
    folder = Path(tempfile.mkdtemp(prefix="faults-suite-"))
    paths = ["conformance"] + [
        old
        for old in ("fixtures", "node_probes")
        if subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{commit}:{old}"], capture_output=True).returncode
        == 0
    ]
    archive = subprocess.run(["git", "-C", str(REPO), "archive", commit, *paths], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    if "node_probes" in paths:
        probes = folder / "node_probes"
    else:
        home, name = suite_layout(folder)
        probes = home / name / "node_probes"
    (probes / "node_modules").symlink_to(installed)
    return folder


@dataclass
class Copy:
    """A faulted (or unmodified) copy of the product and the command line that runs it."""

    folder: Path
    """The temporary folder holding the copy, removed after the fault."""
    argv: list[str]
    """The target command."""
    check: Callable[[Path], None]
    """Raises SystemExit unless the command, run from the given folder, runs this copy."""
    env: dict[str, str] = field(default_factory=dict)
    """Added to the runner's environment (and so to every process it starts)."""


def applied(fault: dict, text: str, where: str) -> str:
    """``text`` with the fault's ``find`` replaced; raises SystemExit unless ``find`` occurs exactly once."""
    count = text.count(fault["find"])
    if count != 1:
        raise SystemExit(f"{fault['name']}: `find` occurs {count} times in {where}, not once")
    return text.replace(fault["find"], fault["replace"])


def make_copy(fault: dict | None) -> Path:
    """A fresh ``<tmp>/shadowcode`` copy with the fault applied (none for None); returns ``<tmp>``."""
    parent = Path(tempfile.mkdtemp(prefix="faults-src-"))
    shutil.copytree(REPO / "shadowcode", parent / "shadowcode", ignore=shutil.ignore_patterns("__pycache__"))
    if fault is not None:
        path = parent / fault["file"]
        path.write_text(applied(fault, path.read_text(encoding="utf-8"), fault["file"]), encoding="utf-8")
    return parent


def target_argv(copy: Path) -> list[str]:
    return ["env", f"PYTHONPATH={copy}", sys.executable, "-m", "shadowcode"]


def target_env() -> dict[str, str]:
    """The environment the runner gives a target: its own, less PYTHONPATH (as the suite's runner.py does)."""
    return {k: v for k, v in runner_env().items() if k != "PYTHONPATH"}


def assert_copy_imported(copy: Path, run_dir: Path) -> None:
    """Refuse to go on unless the target command, run where the suite runs it, imports the copy."""
    probe = [*target_argv(copy)[:-2], "-c", "import shadowcode; print(shadowcode.__file__)"]
    out = subprocess.run(probe, cwd=run_dir, env=target_env(), capture_output=True, text=True, encoding="utf-8").stdout
    if not out.strip().startswith(str(copy)):
        raise SystemExit(f"the target imports {out.strip()!r}, not the copy in {copy}")


def source_copy(fault: dict | None) -> Copy:
    """The fault applied to a copy of ``shadowcode/``, run as ``env PYTHONPATH=<copy> <python> -m shadowcode``."""
    folder = make_copy(fault)
    return Copy(folder, target_argv(folder), lambda run_dir: assert_copy_imported(folder, run_dir))


# --- the packaged target (--pyz) ------------------------------------------------------------------


def base_python() -> str:
    """The interpreter behind this virtualenv (not the venv's, whose site-packages hold the checkout)."""
    base = getattr(sys, "_base_executable", "") or sys.executable
    if sys.prefix != sys.base_prefix and Path(base).parent == Path(sys.executable).parent:
        base = str(Path(sys.executable).resolve())  # an older interpreter naming the venv's own link
    return base


def archive_member(fault: dict) -> str:
    """The archive entry holding the fault's file: ``site-packages/shadowcode/...``."""
    return "site-packages/" + fault["file"]


def module_name(path: str) -> str:
    """``shadowcode/engine/state.py`` -> ``shadowcode.engine.state`` (a package's ``__init__.py`` -> the package)."""
    parts = path.removesuffix(".py").split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _refuse_not_direct(archive: Path, member: str, names: list[str]) -> SystemExit:
    nested = [n for n in names if n.endswith((".zip", ".pyz", ".whl"))]
    where = f"; it may be inside {', '.join(nested[:3])}, which this harness does not rewrite" if nested else ""
    return SystemExit(f"{member} is not a direct entry of {archive}{where}")


def faulted_member(archive: Path, fault: dict) -> bytes:
    """The fault applied to the text of its file as the archive holds it.

    Raises:
        SystemExit: the file is not a direct entry, or ``find`` does not occur exactly once in it.
    """
    member = archive_member(fault)
    with zipfile.ZipFile(archive) as zf:
        names = zf.namelist()
        if member not in names:
            raise _refuse_not_direct(archive, member, names)
        text = zf.read(member).decode("utf-8")
    where = f"{member} of {archive} (an archive built from another tree? rebuild it with bash ci/build)"
    return applied(fault, text, where).encode("utf-8")


def raw_entry(path: Path, info: zipfile.ZipInfo) -> bytes:
    """An entry's stored bytes (compressed as in the file), read after its local header."""
    with path.open("rb") as f:
        f.seek(info.header_offset)
        header = f.read(30)
        if header[:4] != b"PK\x03\x04":
            raise SystemExit(f"{path}: no local header for {info.filename} at {info.header_offset}")
        name_len, extra_len = struct.unpack("<HH", header[26:30])
        f.seek(info.header_offset + 30 + name_len + extra_len)
        return f.read(info.compress_size)


def rewrite_member(archive: Path, dest: Path, member: str, data: bytes) -> None:
    """Write ``dest``: ``archive`` with the entry ``member``'s bytes replaced by ``data``.

    The bytes before the zip (the shebang line), the entries' order, names, dates, modes and
    compression, and the archive's comment and file mode are kept; every other entry is written
    again from its content and then compared, stored bytes and CRC, with the original.

    Raises:
        SystemExit: ``member`` is not a direct entry of ``archive``, or another entry did not
            come out byte for byte (so ``dest`` would not be the same archive).
    """
    with zipfile.ZipFile(archive) as src:
        infos = src.infolist()
        names = [i.filename for i in infos]
        if member not in names:
            raise _refuse_not_direct(archive, member, names)
        start = min((i.header_offset for i in infos), default=0)
        with archive.open("rb") as f:
            prefix = f.read(start)
        with dest.open("wb") as out:
            out.write(prefix)
            with zipfile.ZipFile(out, "w") as dst:
                dst.comment = src.comment
                for info in infos:
                    content = data if info.filename == member else src.read(info)
                    copy = zipfile.ZipInfo(info.filename, date_time=info.date_time)
                    for attr in ("compress_type", "comment", "extra", "create_system", "external_attr"):
                        setattr(copy, attr, getattr(info, attr))
                    dst.writestr(copy, content, compress_type=info.compress_type)
    os.chmod(dest, archive.stat().st_mode & 0o7777)
    with zipfile.ZipFile(archive) as before, zipfile.ZipFile(dest) as after:
        old, new = before.infolist(), after.infolist()
        if [i.filename for i in old] != [i.filename for i in new]:
            raise SystemExit(f"{dest}: the entries are not those of {archive}")
        for a, b in zip(old, new, strict=True):
            same = (a.date_time, a.compress_type, a.external_attr) == (b.date_time, b.compress_type, b.external_attr)
            if a.filename == member:
                same = same and after.read(b) == data
            else:
                same = same and a.CRC == b.CRC and raw_entry(archive, a) == raw_entry(dest, b)
            if not same:
                raise SystemExit(f"{dest}: entry {a.filename} did not come out as intended")


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def assert_pyz_runs_copy(copy: Path, root: Path, module: str, expected: bytes, run_dir: Path) -> None:
    """Refuse unless the target runs ``copy`` and imports ``module`` with ``expected`` as its text.

    Two probes, from the folder the suite runs in, with the target's environment: the target
    command itself (``--help``, exit 0, which unpacks the copy into ``root``); then shiv's own
    interpreter mode of the same archive imports ``module`` and prints its file, which must lie
    in the one unpacked folder under ``root`` and hold ``expected``.
    """
    env = {**target_env(), "SHIV_ROOT": str(root)}
    argv = pyz_argv(copy, root)
    done = subprocess.run([*argv, "--help"], cwd=run_dir, env=env, capture_output=True, text=True, encoding="utf-8")
    if done.returncode != 0:
        raise SystemExit(f"`{shlex.join(argv)} --help` exited {done.returncode}: {done.stderr.strip()[-500:]}")
    show = "import importlib, sys; print(importlib.import_module(sys.argv[1]).__file__)"
    env_shell = {**env, "SHIV_INTERPRETER": "1"}
    done = subprocess.run(
        [*argv, "-c", show, module], cwd=run_dir, env=env_shell, capture_output=True, text=True, encoding="utf-8"
    )  # fmt: skip
    imported = done.stdout.strip().splitlines()[-1:] or [""]
    # shiv names the folder <archive name>_<build id>, the entry adds the interpreter's tag
    unpacked = [p for p in root.iterdir() if p.name.startswith(copy.name + "_") and (p / "complete").is_file()]
    if done.returncode != 0 or len(unpacked) != 1:
        raise SystemExit(
            f"{copy}: importing {module} exited {done.returncode} ({done.stderr.strip()[-300:]}); "
            f"unpacked into {root}: {sorted(p.name for p in unpacked)}"
        )
    path = Path(imported[0])
    if not path.is_relative_to(unpacked[0]) or not path.is_file() or path.read_bytes() != expected:
        raise SystemExit(f"{copy}: {module} was imported from {imported[0]!r}, not the faulted copy in {unpacked[0]}")


def pyz_argv(copy: Path, root: Path) -> list[str]:
    return ["env", f"SHIV_ROOT={root}", base_python(), str(copy)]


def pyz_copy(archive: Path, fault: dict | None) -> Copy:
    """The fault applied to its entry in a copy of ``archive`` (an unchanged copy for None)."""
    folder = Path(tempfile.mkdtemp(prefix="faults-pyz-"))
    try:
        copy, root = folder / archive.name, folder / "shiv-root"
        root.mkdir()
        if fault is None:
            shutil.copyfile(archive, copy)
            os.chmod(copy, archive.stat().st_mode & 0o7777)
            if _digest(copy) != _digest(archive):
                raise SystemExit(f"{copy} is not a byte-for-byte copy of {archive}")
            module = "shadowcode"
            with zipfile.ZipFile(archive) as zf:
                expected = zf.read("site-packages/shadowcode/__init__.py")
        else:
            member, expected = archive_member(fault), faulted_member(archive, fault)
            rewrite_member(archive, copy, member, expected)  # reads the faulted entry back
            module = module_name(fault["file"])
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return Copy(
        folder,
        pyz_argv(copy, root),
        lambda run_dir: assert_pyz_runs_copy(copy, root, module, expected, run_dir),
        {"SHIV_ROOT": str(root)},
    )


def assert_nothing_outside(run_dir: Path) -> None:
    """Refuse when the base interpreter imports ``shadowcode`` without the archive."""
    probe = [base_python(), "-c", "import shadowcode; print(shadowcode.__file__)"]
    done = subprocess.run(probe, cwd=run_dir, env=target_env(), capture_output=True, text=True, encoding="utf-8")
    if done.returncode == 0:
        raise SystemExit(f"{base_python()} imports shadowcode from {done.stdout.strip()} without the archive")


# --- running ----------------------------------------------------------------------------------------


def _stop(proc: subprocess.Popen, interrupted: BaseException) -> None:
    """Let the runner stop its checks and remove its folders (it got the same Ctrl-C), then make sure."""
    if not isinstance(interrupted, KeyboardInterrupt):
        proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def run_suite(copy: Copy, only: list[str] | None, out: Path, jobs: int, attached: bool = False) -> dict:
    """One conformance run; returns ``{exit, failed: [{name, detail}], seconds}``."""
    run_dir = Path(tempfile.mkdtemp(prefix="faults-run-"))
    out.mkdir(parents=True, exist_ok=True)
    try:
        copy.check(run_dir)
        argv = [sys.executable, "-m", suite_layout(SUITE)[1], "--target", shlex.join(copy.argv)]
        argv += ["--out", str(out), "--jobs", str(jobs)]
        if only:
            argv += ["--only", ",".join(only)]
        if attached:
            argv.append("--attached")
        (out / "report.json").unlink(missing_ok=True)  # never read an earlier run's report
        started = time.monotonic()
        with (out / "runner.log").open("w", encoding="utf-8") as log:
            proc = subprocess.Popen(argv, cwd=run_dir, env={**runner_env(), **copy.env}, stdout=log, stderr=log)
            try:
                code = proc.wait()
            except BaseException as exc:
                _stop(proc, exc)
                raise
        seconds = time.monotonic() - started
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    failed = []
    report = out / "report.json"
    if report.exists():
        data = json.loads(report.read_text(encoding="utf-8"))
        if data.get("target") != copy.argv:
            raise SystemExit(f"{report}: the run's target was {data.get('target')!r}, not {copy.argv!r}")
        failed = [{"name": c["name"], "detail": c["detail"]} for c in data["checks"] if c["status"] == "fail"]
    return {"exit": code, "failed": failed, "seconds": seconds}


def try_fault(
    fault: dict,
    index: dict[str, list[str]],
    out: Path,
    jobs: int,
    full: bool = True,
    make: Callable[[dict | None], Copy] = source_copy,
    attached: bool = False,
) -> dict:
    """Run the id-first checks, then (when nothing failed) the whole default run."""
    first = sorted({name for rid in fault["covers"] for name in index.get(rid, [])})
    started = time.monotonic()
    copy = make(fault)
    try:
        stages = [("ids", first)] if first else []
        if full:
            stages.append(("full", None))
        stage, result, caught = "none", {"exit": None, "failed": []}, False
        for stage, only in stages:
            result = run_suite(copy, only, out / fault["name"] / stage, jobs, attached)
            caught = result["exit"] != 0 and bool(result["failed"])
            if caught:
                break
    finally:
        shutil.rmtree(copy.folder, ignore_errors=True)
    return {
        "name": fault["name"],
        "covers": fault["covers"],
        "caught": caught,
        "stage": stage,
        "exit": result["exit"],
        "failed": result["failed"],
        "seconds": round(time.monotonic() - started, 1),
    }


def verify(
    faults: list[dict],
    index: dict[str, list[str]],
    out: Path,
    jobs: int,
    make: Callable[[dict | None], Copy] = source_copy,
    attached: bool = False,
) -> int:
    """Run every fault's id-first checks against the unmodified tree (or archive), once; they must all pass."""
    names = sorted({name for f in faults for rid in f["covers"] for name in index.get(rid, [])})
    copy = make(None)
    try:
        result = run_suite(copy, names, out / "verify", jobs, attached)
    finally:
        shutil.rmtree(copy.folder, ignore_errors=True)
    sys.stdout.write(f"verify: {len(names)} checks, exit {result['exit']}, {result['seconds']:.0f} s" + "\n")
    for f in result["failed"]:
        sys.stdout.write(f"  FAILED {f['name']}: {f['detail'][:300]}" + "\n")
    return 0 if result["exit"] == 0 and not result["failed"] else 1


def short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def table(results: list[dict], target: str = "") -> str:
    rows = [f"Target: {target}", ""] if target else []
    rows += ["| Fault | Ids | Caught by | What the check said | Seconds |", "|---|---|---|---|---|"]
    for r in results:
        by = ", ".join(f"`{f['name']}`" for f in r["failed"][:3]) or "**missed**"
        if r["caught"] and r["stage"] == "full":
            by += " (whole run)"
        if r["failed"]:
            detail = short(r["failed"][0]["detail"])
        elif r["stage"] == "none":
            detail = "no check covers its ids (whole run skipped)"
        else:
            detail = f"every check passed ({'whole run' if r['stage'] == 'full' else 'checks of its ids'})"
        rows.append(f"| {r['name']} | {', '.join(r['covers'])} | {by} | {detail} | {r['seconds']:.0f} |")
    caught = sum(r["caught"] for r in results)
    rows.append("")
    rows.append(f"Caught {caught} of {len(results)} ({100 * caught / max(len(results), 1):.0f} %).")
    return "\n".join(rows)


def describe_target(archive: Path | None, attached: bool) -> str:
    """The target in words, for the table and faults.json."""
    if archive is None:
        what = f"`env PYTHONPATH=<copy of shadowcode/> {sys.executable} -m shadowcode`"
    else:
        what = f"`env SHIV_ROOT=<fresh empty folder> {base_python()} <copy of {archive}>` (the fault inside the copy)"
    return what + (", checks run with `--attached`" if attached else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", action="append", metavar="NAME", help="run only this fault (repeatable)")
    parser.add_argument("--verify", action="store_true", help="run the id-first checks against the unmodified tree")
    parser.add_argument("--faults", type=Path, default=FAULTS, help="the fault list (default: ci/faults.yml)")
    parser.add_argument("--out", type=Path, default=REPO / "faults-out", help="folder for reports")
    parser.add_argument("--suite", metavar="COMMIT", help="run the conformance suite as of this commit")
    parser.add_argument("--ids-only", action="store_true", help="skip the whole run for a fault its ids' checks miss")
    parser.add_argument("--jobs", type=int, default=3, help="checks run at once (default: 3)")
    parser.add_argument("--pyz", action="store_true", help="inject each fault into a copy of the built archive")
    parser.add_argument(
        "--archive", type=Path, default=REPO / "dist" / "shadowcode.pyz", help="the archive for --pyz (default: dist/)"
    )
    parser.add_argument("--attached", action="store_true", help="run the suite with --attached")
    args = parser.parse_args(argv)
    faults = load_faults(args.faults)
    if args.only:
        unknown = set(args.only) - {f["name"] for f in faults}
        if unknown:
            raise SystemExit(f"no such fault: {', '.join(sorted(unknown))}")
        faults = [f for f in faults if f["name"] in args.only]
    out = args.out.resolve()
    make: Callable[[dict | None], Copy] = source_copy
    archive = None
    if args.pyz:
        archive = args.archive.resolve()
        if not archive.is_file():
            raise SystemExit(f"no archive at {archive}: build it with bash ci/build")
        for fault in faults:  # refuse before anything runs: every fault's entry, find once
            faulted_member(archive, fault)
            with zipfile.ZipFile(archive) as zf:
                if zf.read(archive_member(fault)) != (REPO / fault["file"]).read_bytes():
                    sys.stderr.write(f"faults: warning: {archive} holds another {fault['file']} than the checkout\n")
        make = lambda fault: pyz_copy(archive, fault)  # noqa: E731
    if args.pyz or args.attached:  # apart from the source tree's reports
        out = out / "-".join(["pyz"] * args.pyz + ["attached"] * args.attached)
    target = describe_target(archive, args.attached)
    if args.suite:
        global SUITE
        SUITE = export_suite(args.suite)
    scratch = Path(tempfile.mkdtemp(prefix="faults-list-"))
    try:
        index = checks_by_id(scratch)
        if args.pyz:
            assert_nothing_outside(scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    sys.stderr.write(f"faults: target {target}\n")
    if args.verify:
        return verify(faults, index, out, args.jobs, make, args.attached)
    results = []
    started = time.monotonic()
    for fault in faults:
        result = try_fault(fault, index, out, args.jobs, full=not args.ids_only, make=make, attached=args.attached)
        results.append(result)
        verdict = "caught" if result["caught"] else "MISSED"
        sys.stderr.write(f"faults: {fault['name']}: {verdict} ({result['stage']}, {result['seconds']:.0f} s)\n")
        out.mkdir(parents=True, exist_ok=True)
        (out / "partial.json").write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    out.mkdir(parents=True, exist_ok=True)
    total = round(time.monotonic() - started, 1)
    caught = sum(r["caught"] for r in results)
    summary = {"target": target, "faults": results, "caught": caught, "total": len(results), "seconds": total}
    (out / "faults.json").write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    sys.stdout.write(table(results, target) + "\n")
    sys.stdout.write(f"\nTook {total / 60:.1f} min." + "\n")
    return 0 if all(r["caught"] for r in results) else 1


def _terminated(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # run every `finally`: the copies and folders are removed


def _main() -> int:
    signal.signal(signal.SIGTERM, _terminated)
    try:
        return main()
    finally:
        if SUITE != REPO:
            shutil.rmtree(SUITE, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(_main())
