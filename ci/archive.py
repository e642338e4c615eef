"""Lock and lay out the dependencies of ``dist/shadowcode.pyz`` for every interpreter it carries (PKG-01).

Usage (from the repository root, with the project's virtualenv):

- ``python ci/archive.py lock``: pin the run-time dependencies of ``shadowcode`` (the versions
  installed in the virtualenv) and record the sha256 of every wheel the archive takes from the
  package registry, for every carried interpreter and platform, in ``ci/archive.lock``.
- ``python ci/archive.py layout SITE PLATLIB [PROJECT]``: download exactly the wheels
  ``ci/archive.lock`` names (``pip download --require-hashes``), unpack the pure-Python ones
  the project needs and the project itself into ``SITE`` (shiv's site-packages) and each
  compiled wheel it needs into ``PLATLIB/<wheel>/``, and write ``PLATLIB/manifest.json``: for
  each tag (``cp312-manylinux_x86_64``) the wheels it takes and the oldest glibc they run on.
  Prints the build id, a sha256 over everything laid out. ``PROJECT`` is ``shadowcode`` (the
  default, ``dist/shadowcode.pyz``) or ``conformance`` (``dist/conformance.pyz``, built from
  ``conformance/pyproject.toml``; its dependencies are a subset of the same lock).

A compiled wheel built for the stable ABI (``abi3``, e.g. cryptography) is stored once per
platform and shared by the tags that can load it. PyYAML ships no pure wheel, but its pure
modules fall back when its compiled module is missing, so the archive takes one of its wheels
without the compiled module.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "ci" / "archive.lock"
WHEELS = ROOT / "build-wheels"
"""pip's download folder; outside ``build/``, which ``ci/build`` empties, so wheels are fetched once."""

PYTHONS = ("3.11", "3.12", "3.13", "3.14")
"""The CPython versions the archive carries compiled modules for."""
MACHINES = ("x86_64", "aarch64")
"""The Linux machines (glibc, manylinux wheels) the archive carries compiled modules for."""
PURE_FALLBACK = frozenset({"pyyaml"})
"""Packages whose pure-Python modules run without their compiled module: taken once, without it."""
PROJECT = "shadowcode"
FIRST = (
    "annotated_types",
    "anyio",
    "mcp_types",
    "pydantic",
    "pydantic_core",
    "shadowcode",
    "typing_extensions",
    "typing_inspection",
)
"""The top-level packages the stdio server's first read-only tool call imports (issue 32).

``manifest.json`` names them as ``first``: a first run unpacks these (and every distribution's
metadata) before it serves; every other package is written after the start, or when a process
first imports it (``ci/zipapp_entry.py``). The conformance archive has no such list: it unpacks
everything at once. ``tests/packaging/test_archive.py`` serves a first tool call from these alone."""
PROJECTS = {"shadowcode": ROOT, "conformance": ROOT / "conformance"}
"""Each archive's project folder (holding its ``pyproject.toml``)."""


def tags() -> list[tuple[str, str, str]]:
    """Every carried ``(tag, python, machine)``, tag as ``cp312-manylinux_x86_64``."""
    return [(f"cp{p.replace('.', '')}-manylinux_{m}", p, m) for p in PYTHONS for m in MACHINES]


def _platforms(machine: str) -> list[str]:
    # Most preferred first: the oldest glibc a wheel exists for, so the archive runs on the most systems.
    return [f"manylinux_2_17_{machine}", f"manylinux2014_{machine}", f"manylinux_2_28_{machine}"]


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pip(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", "--quiet", *args], check=True)


def _download(python: str, machine: str, requirements: list[str], dest: Path, *extra: str) -> None:
    abi = "cp" + python.replace(".", "")
    platforms = [a for p in _platforms(machine) for a in ("--platform", p)]
    _pip(
        "download", "--no-deps", "--only-binary=:all:", "--implementation", "cp", "--python-version", python,
        "--abi", abi, "--abi", "abi3", "--abi", "none", *platforms, "--dest", str(dest), *extra, *requirements,
    )  # fmt: skip


# --- lock -----------------------------------------------------------------------------------


def _requirements(project: str) -> list[str]:
    """The ``[project] dependencies`` of ``PROJECTS[project]/pyproject.toml``."""
    with (PROJECTS[project] / "pyproject.toml").open("rb") as f:
        return list(tomllib.load(f)["project"]["dependencies"])


def _runtime_closure(project: str = PROJECT) -> dict[str, str]:
    """``{canonical name: version}`` of everything ``project`` needs at run time, on any carried Python."""
    from packaging.requirements import Requirement

    seen: dict[str, str] = {}
    todo: list[tuple[str | None, frozenset[str]]] = [(None, frozenset())]
    while todo:
        name, extras = todo.pop()
        if name is None:
            requires = _requirements(project)
        else:
            dist = metadata.distribution(name)
            seen[_canonical(dist.metadata["Name"])] = dist.version
            requires = dist.requires or []
        for line in requires:
            req = Requirement(line)
            wanted = any(
                req.marker is None
                or req.marker.evaluate({"python_version": p, "python_full_version": p + ".0", "extra": e})
                for p in PYTHONS
                for e in sorted(extras) or [""]
            )
            if wanted and _canonical(req.name) not in seen:
                todo.append((req.name, frozenset(req.extras)))
    return dict(sorted(seen.items()))


def lock() -> None:
    """Write ``ci/archive.lock`` from the virtualenv's versions and the registry's wheels (every project's)."""
    closure: dict[str, str] = {}
    for project in PROJECTS:
        closure.update(_runtime_closure(project))
    pins = [f"{name}=={version}" for name, version in sorted(closure.items())]
    folder = WHEELS / "lock"
    shutil.rmtree(folder, ignore_errors=True)
    for _tag, python, machine in tags():
        _download(python, machine, pins, folder)
    hashes: dict[str, set[str]] = {}
    for wheel in sorted(folder.glob("*.whl")):
        name = _canonical(wheel.name.split("-", 1)[0])
        hashes.setdefault(name, set()).add(hashlib.sha256(wheel.read_bytes()).hexdigest())
    lines = [
        "# The run-time dependencies of dist/shadowcode.pyz, one wheel hash per carried interpreter and platform.",
        "# Written by `python ci/archive.py lock`; ci/build downloads with --require-hashes.",
    ]
    for pin in pins:
        name = pin.split("==")[0]
        lines.append(pin + "".join(f" \\\n    --hash=sha256:{h}" for h in sorted(hashes[name])))
    LOCK.write_text("\n".join(lines) + "\n", encoding="utf-8")


# --- layout ---------------------------------------------------------------------------------


def _is_pure(wheel: zipfile.ZipFile) -> bool:
    info = next(n for n in wheel.namelist() if n.endswith(".dist-info/WHEEL"))
    return "Root-Is-Purelib: true" in wheel.read(info).decode("utf-8")


def _unpack(wheel_path: Path, dest: Path, *, drop_compiled: bool = False) -> None:
    """Unpack a wheel as pip would into a ``--target`` folder (purelib/platlib data only)."""
    with zipfile.ZipFile(wheel_path) as wheel:
        for info in wheel.infolist():
            name = info.filename
            if info.is_dir() or (drop_compiled and name.endswith(".so")):
                continue
            if name.split("/", 1)[0].endswith(".data"):
                _data, kind, rest = name.split("/", 2)
                if kind not in ("purelib", "platlib"):
                    continue
                name = rest
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(wheel.read(info))
            target.chmod(0o755 if (info.external_attr >> 16) & 0o111 else 0o644)


def _oldest_glibc(wheel_name: str) -> tuple[int, int]:
    """The oldest glibc a manylinux wheel runs on, from its platform tags."""
    found = []
    for platform in wheel_name.removesuffix(".whl").split("-")[-1].split("."):
        if platform.startswith("manylinux2014_"):
            found.append((2, 17))
        elif m := re.match(r"manylinux_(\d+)_(\d+)_", platform):
            found.append((int(m[1]), int(m[2])))
    return min(found) if found else (0, 0)


def _tree_digest(folder: Path, digest: hashlib._Hash) -> None:
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode("utf-8") + b"\0")
        digest.update(path.read_bytes())


def _locked_hashes() -> set[str]:
    return set(re.findall(r"--hash=sha256:([0-9a-f]{64})", LOCK.read_text("utf-8")))


def _fetch(python: str, machine: str, folder: Path) -> None:
    """Download the locked wheels for one tag into ``folder``, unless the same lock filled it already.

    Either way every wheel in ``folder`` must have a hash the lock lists.
    """
    stamp = folder / ".lock-sha256"
    wanted = hashlib.sha256(LOCK.read_bytes()).hexdigest()
    if not stamp.is_file() or stamp.read_text("utf-8") != wanted:
        shutil.rmtree(folder, ignore_errors=True)
        _download(python, machine, ["-r", str(LOCK)], folder, "--require-hashes")
        stamp.write_text(wanted, "utf-8")
    allowed = _locked_hashes()
    for wheel in folder.glob("*.whl"):
        if hashlib.sha256(wheel.read_bytes()).hexdigest() not in allowed:
            sys.exit(f"archive: {wheel.name} has a hash ci/archive.lock does not list")


def layout(site: Path, platlib: Path, project: str = PROJECT) -> str:
    """Lay out one archive's dependencies and project; returns the build id (hex sha256 of all of it).

    Args:
        site: shiv's site-packages folder to fill.
        platlib: the folder for the compiled wheels and ``manifest.json``.
        project: a key of :data:`PROJECTS`; only the locked wheels its closure needs are laid out.

    Raises:
        subprocess.CalledProcessError: pip refused (a hash mismatch, a wheel missing from the registry).
        SystemExit: a pure wheel differs between interpreters, a tag lacks a locked package, or the
            project needs a package the lock lacks.
    """
    for folder in (site, platlib):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
    locked = {_canonical(line.split("==")[0]) for line in LOCK.read_text("utf-8").splitlines() if "==" in line}
    if project != PROJECT:
        needed = set(_runtime_closure(project))
        if unlocked := needed - locked:
            sys.exit(f"archive: ci/archive.lock lacks {', '.join(sorted(unlocked))}; run python ci/archive.py lock")
        locked = needed
    manifest: dict[str, dict[str, object]] = {}
    pure_done: set[str] = set()
    for tag, python, machine in tags():
        folder = WHEELS / tag
        _fetch(python, machine, folder)
        by_name = {_canonical(w.name.split("-", 1)[0]): w for w in folder.glob("*.whl")}
        if missing := locked - by_name.keys():
            sys.exit(f"archive: no wheel for {tag}: {', '.join(sorted(missing))}")
        compiled: list[str] = []
        glibc = (2, 17)
        for name in sorted(locked):
            wheel = by_name[name]
            with zipfile.ZipFile(wheel) as z:
                pure = _is_pure(z)
            if pure or name in PURE_FALLBACK:
                if name not in pure_done:
                    _unpack(wheel, site, drop_compiled=not pure)
                    pure_done.add(name)
                continue
            stem = wheel.name.removesuffix(".whl")
            if not (platlib / stem).exists():
                _unpack(wheel, platlib / stem)
            compiled.append(stem)
            glibc = max(glibc, _oldest_glibc(wheel.name))
        manifest[tag] = {"python": python, "machine": machine, "glibc": f"{glibc[0]}.{glibc[1]}", "wheels": compiled}
    source = PROJECTS[project]
    if source != ROOT:
        # setuptools builds in place and reuses build/lib: a deleted module would still reach the wheel.
        shutil.rmtree(source / "build", ignore_errors=True)
    _pip("install", "--no-deps", "--no-compile", "--target", str(site), str(source))
    if source != ROOT:
        shutil.rmtree(source / "build", ignore_errors=True)
        for egg_info in source.glob("*.egg-info"):
            shutil.rmtree(egg_info)
    # PEP 610 metadata records the folder the project was built from: not an input of the build.
    for direct_url in site.glob("*.dist-info/direct_url.json"):
        direct_url.unlink()
        record = direct_url.with_name("RECORD")
        kept = [ln for ln in record.read_text("utf-8").splitlines() if "/direct_url.json," not in ln]
        record.write_text("\n".join(kept) + "\n", encoding="utf-8")
    shutil.rmtree(site / "bin", ignore_errors=True)  # console scripts with this machine's shebang
    written: dict[str, object] = {"tags": manifest}
    if project == PROJECT:
        written["first"] = list(FIRST)
    (platlib / "manifest.json").write_text(json.dumps(written, indent=1, sort_keys=True) + "\n", "utf-8")
    digest = hashlib.sha256()
    _tree_digest(site, digest)
    _tree_digest(platlib, digest)
    return digest.hexdigest()


if __name__ == "__main__":
    if sys.argv[1:2] == ["lock"] and len(sys.argv) == 2:
        lock()
    elif sys.argv[1:2] == ["layout"] and len(sys.argv) in (4, 5) and sys.argv[4:5] in ([], *[[p] for p in PROJECTS]):
        sys.stdout.write(layout(Path(sys.argv[2]), Path(sys.argv[3]), *sys.argv[4:5]) + "\n")
    else:
        sys.exit(f"usage: python ci/archive.py lock | layout SITE PLATLIB [{' | '.join(PROJECTS)}]")
