"""Command-line refusals around ``mcp serve``: each must exit 2, explain on stderr, print nothing.

stdin is closed at once, so a target that wrongly starts serving sees end of input and
stops rather than waiting for a client.
"""

from __future__ import annotations

from pathlib import Path

from shadowcode_conformance.context import Context
from shadowcode_conformance.processes import Completed, tail
from shadowcode_conformance.registry import CheckResult, check

__all__ = ["bad_profile_refused", "file_workspace_refused", "json_serve_refused", "missing_workspace_refused"]

_TIMEOUT_SECONDS = 30.0


def _expect_usage_error(done: Completed, what: str) -> CheckResult:
    """Exit 2, something on stderr, nothing on stdout."""
    data = {"argv": list(done.argv), "returncode": done.returncode}
    problems: list[str] = []
    if done.timed_out:
        problems.append(f"did not exit within {_TIMEOUT_SECONDS:g} s")
    elif done.returncode != 2:
        problems.append(f"exit status {done.returncode}, expected 2")
    if done.stdout:
        problems.append(f"stdout was not empty: {tail(done.stdout, 200)!r}")
    if not done.stderr.strip():
        problems.append("stderr was empty; a message was expected")
    if problems:
        return CheckResult(False, f"{what}: " + "; ".join(problems) + f" (stderr: {tail(done.stderr)})", data)
    return CheckResult(True, f"{what}: exit 2, stderr: {tail(done.stderr, 160)}", data)


@check("cli_usage:json_serve_refused", covers=["SRV-02", "SRV-01"], timeout_seconds=40)
async def json_serve_refused(ctx: Context) -> CheckResult:
    """``<target> --json --workspace P mcp serve`` is refused (SRV-02)."""
    done = await ctx.run(
        [*ctx.target, "--json", "--workspace", str(ctx.project), "mcp", "serve"], timeout_seconds=_TIMEOUT_SECONDS
    )
    return _expect_usage_error(done, "--json with mcp serve")


@check("cli_usage:missing_workspace_refused", covers=["ENG-02", "SRV-01"], timeout_seconds=40)
async def missing_workspace_refused(ctx: Context) -> CheckResult:
    """A workspace that does not exist is refused before serving (ENG-02)."""
    missing = ctx.scratch / "no-such-project"
    done = await ctx.run(ctx.target_argv("mcp", "serve", workspace=missing), timeout_seconds=_TIMEOUT_SECONDS)
    return _expect_usage_error(done, "non-existent workspace")


@check("cli_usage:file_workspace_refused", covers=["ENG-02", "SRV-01"], timeout_seconds=40)
async def file_workspace_refused(ctx: Context) -> CheckResult:
    """A workspace that is a regular file is refused before serving (ENG-02)."""
    a_file = ctx.scratch / "not-a-directory.txt"
    a_file.write_text("a file, not a project\n", encoding="utf-8")
    done = await ctx.run(ctx.target_argv("mcp", "serve", workspace=a_file), timeout_seconds=_TIMEOUT_SECONDS)
    return _expect_usage_error(done, "workspace that is a file")


BAD_PROFILE_NAMES = ("a/b", "..", ".hidden")
"""Profile names that would leave or hide in the profiles folder: a separator, the parent, a dot name."""


def _home_listing(home: Path) -> list[str]:
    return sorted(str(p.relative_to(home)) for p in home.rglob("*")) if home.exists() else []


@check("cli_usage:bad_profile_refused", covers=["ENG-01", "SRV-01"], timeout_seconds=60)
async def bad_profile_refused(ctx: Context) -> CheckResult:
    """Profile names holding a path separator, ``..`` or a leading dot are refused, creating nothing (ENG-01)."""
    before = _home_listing(ctx.home)
    verdicts: list[CheckResult] = []
    for name in BAD_PROFILE_NAMES:
        done = await ctx.run(
            [*ctx.target, "--profile", name, *ctx.target_argv("mcp", "serve")[len(ctx.target) :]],
            timeout_seconds=_TIMEOUT_SECONDS,
        )
        verdicts.append(_expect_usage_error(done, f"--profile {name}"))
    created = sorted(set(_home_listing(ctx.home)) - set(before))
    failed = [v.detail for v in verdicts if not v.ok]
    if created:
        failed.append(f"the refused names created {created[:5]} under the profiles root")
    if failed:
        return CheckResult(False, "; ".join(failed))
    return CheckResult(True, "; ".join(v.detail for v in verdicts) + "; nothing created")
