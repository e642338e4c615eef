"""``python -m bench.importtime``: where the import time of ``mcp serve`` goes.

Spawns ``python -X importtime -m shadowcode --workspace P mcp serve`` (or any other command
given after ``--``, e.g. ``-- python3 dist/shadowcode.pyz --workspace {workspace} mcp serve``)
on a sample project with a fresh profile and closes its stdin at once,
so it starts, serves nothing and exits. The first start is untimed (it creates the store and
writes bytecode); the second prints the most expensive imports: by cumulative time (a
package with everything it pulled in) and by self time (the module's own body).

With ``--attached`` the profile's headless engine (``python -m shadowcode engine`` from
source) runs during both starts, so ``mcp serve`` takes the relay path; the engine is
stopped afterwards. The report then also says whether the ``mcp`` SDK was imported (the
relay should need none of it).

The notes in ``bench/README.md`` were made with it.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = ["ImportRecord", "main", "parse_importtime", "top_imports"]

_LINE: Final = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)\s*$")
_DEADLINE_SECONDS: Final = 120.0


@dataclass(frozen=True)
class ImportRecord:
    """One line of ``-X importtime`` output.

    Attributes:
        module: dotted module name.
        self_us: microseconds in the module's own body.
        cumulative_us: microseconds including the imports it triggered.
        depth: nesting depth (0 for an import made by the program itself).
    """

    module: str
    self_us: int
    cumulative_us: int
    depth: int


def parse_importtime(text: str) -> list[ImportRecord]:
    """The records in ``-X importtime`` stderr output; other lines are skipped.

    Args:
        text: stderr of a ``python -X importtime`` run.

    Returns:
        Records in output order (a module appears after the modules it imported).
    """
    records = []
    for line in text.splitlines():
        m = _LINE.match(line)
        if m:
            depth = (len(m.group(3)) - 1) // 2
            records.append(ImportRecord(m.group(4), int(m.group(1)), int(m.group(2)), depth))
    return records


def top_imports(records: list[ImportRecord], n: int, *, by: str) -> list[ImportRecord]:
    """The ``n`` most expensive records.

    Args:
        records: parsed records.
        n: how many to return.
        by: ``"cumulative"`` or ``"self"``.

    Returns:
        Records sorted by the chosen time, largest first.

    Raises:
        ValueError: ``by`` is neither.
    """
    if by not in ("cumulative", "self"):
        raise ValueError(f"unknown ordering {by!r}")
    key = (lambda r: r.cumulative_us) if by == "cumulative" else (lambda r: r.self_us)
    return sorted(records, key=key, reverse=True)[:n]


def _table(records: list[ImportRecord]) -> str:
    rows = [f"{'cumulative ms':>14} {'self ms':>8}  module"]
    rows += [f"{r.cumulative_us / 1000:14.1f} {r.self_us / 1000:8.1f}  {'  ' * r.depth}{r.module}" for r in records]
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    """Print the top imports of one start-up; see ``python -m bench.importtime --help``.

    Returns:
        0 on success, 1 when the command produced no import records.
    """
    p = argparse.ArgumentParser(prog="python -m bench.importtime", description=__doc__.splitlines()[0])
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--attached", action="store_true", help="run the profile's headless engine during both starts")
    p.add_argument(
        "command",
        nargs="*",
        help="command to run instead of `mcp serve` from source (after --); `{workspace}` is replaced by the "
        "sample project's path",
    )
    args = p.parse_args(argv)
    repo = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(repo))
    from bench.engine import headless_engine

    with tempfile.TemporaryDirectory(prefix="shadowcode-importtime-") as tmp, ExitStack() as stack:
        sys.path.insert(0, str(repo / "conformance/shadowcode_conformance/fixtures"))
        from sample_project import make_sample_project

        workspace = make_sample_project(Path(tmp) / "project")
        default = [sys.executable, "-m", "shadowcode", "--workspace", "{workspace}", "mcp", "serve"]
        command = [a.replace("{workspace}", str(workspace)) for a in (args.command or default)]
        env = {**os.environ, "SHADOWCODE_HOME": str(Path(tmp) / "home"), "SHIV_ROOT": str(Path(tmp) / "shiv")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        if args.attached:
            engine = [sys.executable, "-m", "shadowcode", "engine"]
            stack.enter_context(headless_engine(engine, env=env, cwd=repo, stderr_path=Path(tmp) / "engine.stderr"))
        # The first start creates the profile's store and writes bytecode; the second is measured.
        for extra in ({}, {"PYTHONPROFILEIMPORTTIME": "1"}):
            done = subprocess.run(
                command,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                encoding="utf-8",
                env={**env, **extra},
                cwd=repo,
                timeout=_DEADLINE_SECONDS,
                check=False,
            )
    records = parse_importtime(done.stderr)
    if not records:
        sys.stderr.write(f"no import records; exit {done.returncode}; stderr tail:\n{done.stderr[-2000:]}\n")
        return 1
    total = sum(r.self_us for r in records)
    sys.stdout.write(f"{len(records)} modules imported, {total / 1000:.0f} ms in module bodies in all\n")
    sdk = any(r.module == "mcp" or r.module.startswith("mcp.") for r in records)
    sys.stdout.write(f"exit status {done.returncode}; the mcp SDK was {'' if sdk else 'not '}imported\n\n")
    sys.stdout.write("by cumulative time:\n" + _table(top_imports(records, args.top, by="cumulative")) + "\n\n")
    sys.stdout.write("by self time:\n" + _table(top_imports(records, args.top, by="self")) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
