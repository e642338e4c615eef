"""Keep the Node probes' package-lock.json whole: every optional platform package a host names is listed.

The lock is ``conformance/shadowcode_conformance/node_probes/package-lock.json``.

Hosts such as Kilo, Cline and Qwen Code ship their binaries (and native helpers) as optional
packages, one per platform. When the registry `npm install` asks cannot serve some of them (a
mirror carrying only some platforms), npm leaves them out of the lock, and `npm ci` then
refuses the lock ("Missing: ... from lock file"). This adds an entry for each missing optional
package, at the place npm would look for it, with the platform read from its name (``os``,
``cpu``, ``libc``), so `npm ci` skips it on every other platform and tries it (an optional
package: a failure is not an error) on its own.

    python3 ci/node_lock.py           # add the missing entries
    python3 ci/node_lock.py --check   # exit 1, naming them, when some are missing
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

LOCK = Path(__file__).resolve().parents[1] / "conformance/shadowcode_conformance/node_probes" / "package-lock.json"

_OS = {"darwin": "darwin", "linux": "linux", "win32": "win32", "windows": "win32", "freebsd": "freebsd"}
_CPU = ("arm64", "x64", "ia32", "arm")


def _platform(name: str) -> dict[str, list[str]]:
    """``os``, ``cpu`` and ``libc`` fields read from a platform package's name (empty when it names none)."""
    words = name.rsplit("/", 1)[-1].replace("_", "-").split("-")
    fields: dict[str, list[str]] = {}
    for word in words:
        if word in _OS:
            fields["os"] = [_OS[word]]
        elif word in _CPU:
            fields["cpu"] = [word]
    if "musl" in words:
        fields["libc"] = ["musl"]
    elif fields.get("os") == ["linux"] and "gnu" in words:
        fields["libc"] = ["glibc"]
    return fields


def _resolves(packages: dict[str, dict], parent: str, name: str) -> str | None:
    """The lock path npm finds ``name`` at from ``parent`` (nested folders first), or None."""
    base = parent
    while True:
        candidate = f"{base}/node_modules/{name}" if base else f"node_modules/{name}"
        if candidate in packages:
            return candidate
        if not base:
            return None
        cut = base.rfind("/node_modules/")
        base = base[:cut] if cut != -1 else ""


_EXACT = re.compile(r"\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?")


def missing(packages: dict[str, dict]) -> list[tuple[str, str, str]]:
    """``(parent path, name, version)`` of each optional dependency with no entry the parent resolves to."""
    found = []
    for path, entry in packages.items():
        for name, version in (entry.get("optionalDependencies") or {}).items():
            at = _resolves(packages, path, name)
            if at is None or (_EXACT.fullmatch(version) and packages[at].get("version") != version):
                found.append((path, name, version))
    return found


def fix(packages: dict[str, dict]) -> list[str]:
    """Add an entry for each missing optional package (hoisted when that place is free); the paths added."""
    added = []
    for parent, name, version in missing(packages):
        if not _EXACT.fullmatch(version):
            continue  # a range: which version npm would take is the registry's to say
        at = _resolves(packages, parent, name)
        if at is not None and packages[at].get("version") == version:
            continue  # an entry added for an earlier parent serves this one too
        hoisted = f"node_modules/{name}"
        place = hoisted if hoisted not in packages else f"{parent}/node_modules/{name}"
        packages[place] = {"version": version, "optional": True, **_platform(name)}
        added.append(place)
    return added


def main(argv: list[str]) -> int:
    lock = json.loads(LOCK.read_text(encoding="utf-8"))
    packages = lock["packages"]
    if argv[1:] == ["--check"]:
        gaps = missing(packages)
        for parent, name, version in gaps:
            where = parent or "the root"
            sys.stderr.write(f"{LOCK.name}: {where} names optional {name}@{version}, not in the lock\n")
        if gaps:
            sys.stderr.write("run python3 ci/node_lock.py to add them\n")
        return 1 if gaps else 0
    if argv[1:]:
        sys.stderr.write("usage: python3 ci/node_lock.py [--check]\n")
        return 2
    added = fix(packages)
    LOCK.write_text(json.dumps(lock, indent=2) + "\n", encoding="utf-8")
    sys.stderr.write(f"added {len(added)} entries\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
