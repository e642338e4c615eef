"""Where the checks find their fixtures, helper servers and the pinned Node probes (CONF-01).

Checks read ``<root>/fixtures/...`` (the sample project, the helper servers, client configs,
scripted model replies) and ``<root>/node_probes/...`` (the TypeScript SDK probes and the
pinned Node peers in ``node_modules``). Both folders live inside this package. The root is one of:

* **the source folder**: run from ``conformance/shadowcode_conformance/`` itself (in the
  ShadowCode checkout, or ``conformance/`` copied anywhere), recognised by the distribution's
  ``pyproject.toml`` in the folder above it; the root is this package's folder. Its
  Node peers are set up by ``npm ci`` in ``node_probes/`` (``bash ci/setup`` in the checkout);
  this module never installs into a source folder.
* **the installed package** (``pip install ./conformance`` or ``conformance.pyz``): the build
  takes ``fixtures/`` and the Node manifest, lock file and probe scripts of ``node_probes/`` as
  package data. That folder may be read-only, so a run copies them once into a cache folder
  keyed by their content,
  ``$SHADOWCODE_CONFORMANCE_CACHE`` (default ``$XDG_CACHE_HOME/shadowcode-conformance`` or
  ``~/.cache/shadowcode-conformance``) ``/root-<sha256 prefix>``, and uses that copy. When a
  selected check needs the Node probes and ``node_modules`` is missing there, it runs
  ``npm ci`` in the copy's ``node_probes/`` (only when ``node`` and ``npm`` are on ``PATH``);
  otherwise it says on stderr which checks will fail and the exact command that sets them up.

The helper servers are Python scripts that import the ``mcp`` SDK. :func:`helper_python`
names an interpreter that can import it: ``sys.executable`` when that interpreter finds this
package's dependencies by itself, otherwise (inside a zipapp, whose dependencies live in an
unpacked folder) a small wrapper in the cache root that sets ``PYTHONPATH`` to that folder.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import site
import subprocess
import sys
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path

from shadowcode_conformance.errors import ConformanceError

__all__ = [
    "NODE_GROUPS",
    "NODE_SETUP_ARGV",
    "PACKAGE",
    "bundled_baseline",
    "bundled_baseline_names",
    "cache_dir",
    "helper_python",
    "resource_root",
]

PACKAGE = Path(__file__).resolve().parent
DATA = ("fixtures", "node_probes")
"""The folders of this package the checks read; an installed copy's are copied into the cache root."""
BASELINES = PACKAGE / "baselines"
"""Baselines of known failures of other MCP servers under ``--profile generic``."""

NODE_GROUPS = frozenset(
    {
        "client_options",
        "delegation",
        "external_helpers",
        "external_servers",
        "gateway",
        "host_approvals_claude",
        "hosts",
        "hosts_headless",
        "node_stdio",
        "official",
        "registration",
        "stdio_discovery",
    }
)
"""Check modules some of whose checks need ``node_probes/node_modules`` (SDK clients, server-everything, hosts)."""

NODE_SETUP_ARGV = ("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
"""The command that installs the pinned Node peers, run in ``node_probes/``."""

_COMPLETE = ".complete"


def cache_dir() -> Path:
    """``$SHADOWCODE_CONFORMANCE_CACHE``, else ``$XDG_CACHE_HOME/shadowcode-conformance``, else ``~/.cache/...``."""
    if chosen := os.environ.get("SHADOWCODE_CONFORMANCE_CACHE"):
        return Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "shadowcode-conformance"


def _in_source() -> bool:
    """Whether this is the source folder: the distribution's ``pyproject.toml`` beside the package.

    An installed copy has none there (site-packages or an unpacked zipapp holds no ``pyproject.toml``).
    """
    return (PACKAGE.parent / "pyproject.toml").is_file()


def _files() -> list[Path]:
    """The data files an installed copy carries, ``node_modules`` and bytecode left out."""
    skip = {"__pycache__", "node_modules"}
    return sorted(p for name in DATA for p in (PACKAGE / name).rglob("*") if p.is_file() and not skip & set(p.parts))


@cache
def _bundle_key() -> str:
    digest = hashlib.sha256()
    for path in _files():
        digest.update(path.relative_to(PACKAGE).as_posix().encode("utf-8") + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _cache_root() -> Path:
    return cache_dir() / f"root-{_bundle_key()}"


def _locked(folder: Path, work: Callable[[], None]) -> None:
    """Run ``work`` while holding an exclusive lock beside ``folder`` (other runs wait)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder.parent / f".{folder.name}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        work()
    finally:
        os.close(fd)


def _copy_bundle(root: Path) -> None:
    """Copy the data folders into ``root`` once; an interrupted copy is redone (temporary folder, then rename)."""
    if (root / _COMPLETE).is_file():
        return
    partial = root.with_name(root.name + ".tmp")
    shutil.rmtree(partial, ignore_errors=True)
    for path in _files():
        target = partial / path.relative_to(PACKAGE)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    (partial / _COMPLETE).write_text(_bundle_key() + "\n", encoding="utf-8")
    shutil.rmtree(root, ignore_errors=True)
    partial.rename(root)


def _node_ready(probes: Path) -> bool:
    """Whether ``npm ci`` completed in ``probes``: npm writes its hidden lock file last.

    The cache root is keyed by the data files, lock file included, so what is installed there
    always matches the pinned versions.
    """
    return (probes / "node_modules" / ".package-lock.json").is_file()


def _setup_command(probes: Path) -> str:
    return f"cd {_quote(probes)} && {' '.join(NODE_SETUP_ARGV)}"


def _quote(path: Path) -> str:
    import shlex

    return shlex.quote(str(path))


def _set_up_node(probes: Path, needing: list[str], say: Callable[[str], object]) -> None:
    """``npm ci`` in ``probes`` when node and npm are on PATH; else say what will fail and how to fix it."""
    if _node_ready(probes):
        return
    names = ", ".join(needing)
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        say(
            f"the pinned Node probes are not set up and {' and '.join(missing)} "
            f"{'are' if len(missing) > 1 else 'is'} not on PATH: "
            f"checks needing them will fail ({names}); set them up with: {_setup_command(probes)}"
        )
        return
    say(f"setting up the pinned Node probes in {probes} (npm ci, once) for: {names}")

    def install() -> None:
        if _node_ready(probes):
            return  # another run installed them while this one waited
        done = subprocess.run(
            list(NODE_SETUP_ARGV), cwd=probes, capture_output=True, text=True, encoding="utf-8", check=False
        )
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
            say(
                f"npm ci failed (exit {done.returncode}): {' / '.join(tail)}; checks needing the Node probes "
                f"will fail ({names}); retry with: {_setup_command(probes)}"
            )
            return

    _locked(probes, install)


def resource_root(groups: Iterable[str] = (), say: Callable[[str], None] | None = None) -> Path:
    """The folder holding ``fixtures/`` and ``node_probes/`` for this run (CONF-01).

    Args:
        groups: the modules of the selected checks; when one is in :data:`NODE_GROUPS` and the
            Node peers are missing from an installed package's cache root, they are set up.
        say: where notes for a person go (default: a ``conformance:`` line on stderr).

    Returns:
        The source folder, or the cache copy of the installed package's data folders.

    Raises:
        ConformanceError: the installed package has no fixtures, or the cache cannot be written.
    """
    tell: Callable[[str], object] = say or (lambda line: sys.stderr.write(f"conformance: {line}\n"))
    needing = sorted(set(groups) & NODE_GROUPS)
    if _in_source():
        if needing and not (PACKAGE / "node_probes" / "node_modules").exists():
            setup = PACKAGE.parents[1] / "ci" / "setup"
            command = f"bash {_quote(setup)}" if setup.is_file() else _setup_command(PACKAGE / "node_probes")
            tell(
                f"node_probes/node_modules is missing: checks needing it will fail ({', '.join(needing)}); "
                f"set it up with: {command}"
            )
        return PACKAGE
    if not (PACKAGE / "fixtures").is_dir():
        raise ConformanceError(
            f"this installation has no fixtures: {PACKAGE / 'fixtures'} is missing (reinstall the package)"
        )
    root = _cache_root()
    try:
        _locked(root, lambda: _copy_bundle(root))
        if needing:
            _set_up_node(root / "node_probes", needing, tell)
        _write_helper_python(root)
    except OSError as exc:
        raise ConformanceError(
            f"cannot prepare the fixtures in {root}: {exc.strerror or exc} "
            "(set SHADOWCODE_CONFORMANCE_CACHE to a writable folder)"
        ) from exc
    return root


def _finds_dependencies_itself() -> bool:
    """Whether a plain ``sys.executable`` child imports this package and its dependencies without help."""
    if _in_source():
        return True
    home = str(PACKAGE.parent)
    return home in {*site.getsitepackages(), site.getusersitepackages()}


def helper_python() -> str:
    """An interpreter for the Python helper servers: it imports ``mcp`` and this package (CONF-01).

    ``sys.executable`` when it finds them by itself; otherwise the wrapper
    ``<cache root>/bin/python-<hash>`` (written by :func:`resource_root`) that sets ``PYTHONPATH``.
    """
    if _finds_dependencies_itself():
        return sys.executable
    return str(_wrapper(_cache_root()))


def _wrapper(root: Path) -> Path:
    """``<root>/bin/python-<hash of the dependencies' folder>``: one per unpacked copy of the package."""
    return root / "bin" / f"python-{hashlib.sha256(str(PACKAGE.parent).encode('utf-8')).hexdigest()[:12]}"


def _write_helper_python(root: Path) -> None:
    if _finds_dependencies_itself():
        return
    wrapper = _wrapper(root)
    text = (
        "#!/bin/sh\n"
        "# Runs a helper server with this conformance package's dependencies importable.\n"
        f"PYTHONPATH={_quote(PACKAGE.parent)}${{PYTHONPATH:+:$PYTHONPATH}} exec {_quote(Path(sys.executable))} "
        '"$@"\n'
    )
    if wrapper.is_file() and wrapper.read_text(encoding="utf-8") == text:
        return
    wrapper.parent.mkdir(parents=True, exist_ok=True)
    partial = wrapper.with_name(f"{wrapper.name}.{os.getpid()}")
    partial.write_text(text, encoding="utf-8")
    partial.chmod(0o755)
    partial.replace(wrapper)


def bundled_baseline_names() -> list[str]:
    """The names ``--expected-failures`` takes for the baselines of ``shadowcode_conformance/baselines/``, sorted."""
    return sorted(path.stem for path in BASELINES.glob("*.yml"))


def bundled_baseline(value: str) -> Path:
    """The baseline file ``--expected-failures VALUE`` names: a path, or a bundled baseline's name.

    A bundled name is a file stem of ``shadowcode_conformance/baselines/`` (see
    :func:`bundled_baseline_names`); an existing file of that name in the current folder wins.
    """
    given = Path(value)
    if given.exists() or os.sep in value:
        return given
    bundled = BASELINES / f"{value.removesuffix('.yml')}.yml"
    return bundled if bundled.is_file() else given
