"""``mcp import`` seen from outside: other hosts' configs become definitions that still need review (CW-01).

Covers CW-01.

The target is driven only through its command line, with ``HOME`` and ``CODEX_HOME`` pointed at
a scratch folder holding the Claude Code and Codex configs their own CLIs wrote
(``fixtures/configs/``), plus a generic ``mcp.json`` whose server would leave a marker file if
anything started it.

* ``import_twice_enables_nothing``: without FILE, ``--dry-run`` lists both host files and writes
  nothing; importing the Claude Code file registers its three servers and reports the SSE-only
  one as not importable (exit 1); importing it again reports every server unchanged with the
  same hashes; the catalog shows each imported server disabled; no server was started; a TOML
  file with a syntax error exits 2 naming the line and column, and imports nothing.
"""

from __future__ import annotations

import json
import shutil
from typing import Any, cast

from shadowcode_conformance.context import Context
from shadowcode_conformance.processes import run_command, tail
from shadowcode_conformance.registry import CheckResult, check

__all__ = ["import_twice_enables_nothing"]


async def _cli(ctx: Context, env: dict[str, str], *args: str) -> tuple[int, str, str]:
    argv = ctx.target_argv(*args, workspace=ctx.project)
    done = await run_command(argv, env=env, cwd=ctx.cwd, timeout_seconds=min(60.0, ctx.remaining()), stdin=b"")
    code = -999 if done.returncode is None else done.returncode
    return code, done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")


def _json(out: str) -> dict[str, Any]:
    try:
        doc = json.loads(out)
    except ValueError:
        return {}
    return cast("dict[str, Any]", doc) if isinstance(doc, dict) else {}


def _outcomes(out: str) -> list[tuple[str, str]]:
    try:
        servers: list[dict[str, Any]] = _json(out).get("servers", [])
        return [(s["source_name"], s["outcome"]) for s in servers]
    except (KeyError, TypeError):
        return []


async def _catalog(ctx: Context, env: dict[str, str], problems: list[str]) -> dict[str, Any]:
    code, out, err = await _cli(ctx, env, "--json", "mcp")
    if code != 0:
        problems.append(f"`--json mcp` exited {code}: {tail(err)}")
        return {}
    found = _json(out).get("servers")
    if not isinstance(found, list):
        problems.append(f"`--json mcp` printed no catalog: {tail(out)}")
        return {}
    servers = [cast("dict[str, Any]", s) for s in cast("list[object]", found) if isinstance(s, dict)]
    return {s["id"]: s for s in servers if str(s.get("id")).startswith("config:")}


@check("config_import:import_twice_enables_nothing", covers=["CW-01"], timeout_seconds=240)
async def import_twice_enables_nothing(ctx: Context) -> CheckResult:
    """Dry run, import, import again: the same definitions, none enabled, nothing started, bad TOML refused."""
    home = ctx.scratch / "home"
    (home / ".codex").mkdir(parents=True)
    configs = ctx.repo_root / "fixtures" / "configs"
    shutil.copyfile(configs / "claude.mcp.json", home / ".claude.json")
    shutil.copyfile(configs / "codex.config.toml", home / ".codex" / "config.toml")
    env = dict(ctx.env, HOME=str(home), CODEX_HOME=str(home / ".codex"))
    problems: list[str] = []
    claude = str(home / ".claude.json")

    code, out, err = await _cli(ctx, env, "--json", "mcp", "import", "--dry-run")
    listed = [f.get("host") for f in _json(out).get("files", [])]
    if code != 1 or listed != ["claude", "codex"]:
        problems.append(f"dry run without FILE: exit {code}, files {listed} (expected exit 1, claude and codex)")
    if await _catalog(ctx, env, problems):
        problems.append("a dry run registered definitions")

    expected = [("everything", "imported"), ("fetch", "imported"), ("remote", "imported"), ("legacy", "skipped")]
    code, out, err = await _cli(ctx, env, "--json", "mcp", "import", claude, "--from", "claude")
    first = _json(out)
    if code != 1 or _outcomes(out) != expected:
        problems.append(f"import: exit {code}, {_outcomes(out)} (expected exit 1 and {expected}); {tail(err)}")
    legacy = [s for s in first.get("servers", []) if s.get("source_name") == "legacy"]
    if not legacy or "HTTP+SSE" not in str(legacy[0].get("reason")):
        problems.append("the SSE-only server was not reported as not importable with the reason")
    hashes = {s["id"]: s["hash"] for s in first.get("servers", []) if s.get("id")}
    catalog = await _catalog(ctx, env, problems)
    if {k: v.get("hash") for k, v in catalog.items()} != hashes or not hashes:
        problems.append(f"catalog after import {sorted(catalog)} does not hold the reported ids and hashes")

    code, out, err = await _cli(ctx, env, "--json", "mcp", "import", claude, "--from", "claude")
    again = [(n, "imported" if o == "unchanged" else o) for n, o in _outcomes(out)]
    if code != 1 or again != expected or any(o == "imported" for _, o in _outcomes(out)):
        problems.append(f"import again: exit {code}, {_outcomes(out)} (expected every server unchanged)")
    after = await _catalog(ctx, env, problems)
    if after != catalog:
        problems.append("importing the same file again changed the catalog")
    states = {k: v.get("grant", {}).get("state") for k, v in after.items()}
    if set(states.values()) - {"disabled"}:
        problems.append(f"import enabled something: {states}")

    marker = ctx.scratch / "started"
    generic = ctx.scratch / "mcp.json"
    generic.write_text(
        json.dumps({"servers": {"marker": {"command": "/bin/sh", "args": ["-c", f"touch {marker}"]}}}),
        encoding="utf-8",
    )
    code, out, err = await _cli(ctx, env, "mcp", "import", str(generic))
    if code != 0 or marker.exists():
        problems.append(f"generic import: exit {code}, started: {marker.exists()}; {tail(err)}")

    bad = ctx.scratch / "config.toml"
    bad.write_text('[mcp_servers.late]\ncommand = "npx"\nargs = ["-y",\n  oops]\n', encoding="utf-8")
    code, out, err = await _cli(ctx, env, "mcp", "import", str(bad))
    if code != 2 or out or "line 4, column 3" not in err:
        problems.append(f"bad TOML: exit {code}, stderr {tail(err, 200)!r} (expected exit 2, line 4, column 3)")
    if "config:late" in await _catalog(ctx, env, problems):
        problems.append("a TOML file with a syntax error imported something")

    if problems:
        return CheckResult(False, "; ".join(problems))
    return CheckResult(
        True,
        f"dry run listed 2 host files and wrote nothing; {len(hashes)} servers imported disabled, the SSE-only one "
        "refused with its reason; importing again changed nothing; nothing started; bad TOML refused (line 4, col 3)",
    )
