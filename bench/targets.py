"""The servers the benchmark runs side by side, and how each one is spawned.

A :class:`Target` is one spawn recipe. One that cannot be measured in a run (its archive is
missing, the headless engine did not start) carries the reason in ``unavailable``; the
report then shows ``null`` for its figures with that reason.

The attached targets spawn ``mcp serve`` with ``SHADOWCODE_HOME`` pointing at the profile
root whose headless engine the benchmark runs (:attr:`Layout.attached_home`), so they take
the relay path; every other ShadowCode target uses a profile root without an engine and
serves behind the stdio front (issue 15): the spawned process answers discovery itself and
runs the full server, with its temporary engine, as its child. Each ShadowCode target names
the engine mode its ``shadow_status`` must report (``expect_text``) and a library the spawned
process must never map (``forbid_mapped``: the SDK's pydantic core), which neither the relay
nor the front loads; so a relay that fell back to serving in its own process (attached to the
engine or not), or an in-process row served without the front, fails the figure instead of
skewing it.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

__all__ = [
    "ATTACHED_EXPECT_TEXT",
    "ATTACHED_TARGETS",
    "COLD_DIR_ENV",
    "ECHO_TOOL",
    "FRONT_FORBIDDEN_MAPPING",
    "IN_PROCESS_EXPECT_TEXT",
    "Layout",
    "RELAY_FORBIDDEN_MAPPING",
    "STATUS_TOOL",
    "Target",
    "attached_targets",
    "base_python",
    "build_targets",
    "engine_argv",
]

ATTACHED_TARGETS: Final = ("shadowcode_pyz_attached", "shadowcode_source_attached")
"""Targets that need the headless engine running."""

ATTACHED_EXPECT_TEXT: Final = "engine attached"
"""What ``shadow_status`` says when the session reaches the running headless engine."""

RELAY_FORBIDDEN_MAPPING: Final = "_pydantic_core"
"""Part of a library path the stdlib-only relay never maps (the SDK's models need it)."""

IN_PROCESS_EXPECT_TEXT: Final = "engine temporary"
"""What ``shadow_status`` says when ``mcp serve`` serves with its own temporary engine (behind the front)."""

FRONT_FORBIDDEN_MAPPING: Final = RELAY_FORBIDDEN_MAPPING
"""What the stdio front never maps either: the SDK loads in its child, never in the front."""

COLD_DIR_ENV: Final = ("HOME", "SHADOWCODE_HOME")
"""What the cold row points at a new empty folder per spawn: a HOME the archive never ran in (so
an empty ``~/.shiv``, ``SHIV_ROOT`` being unset) and a new profile root, as a sandboxed host starts it."""

STATUS_TOOL: Final = "shadow_status"
"""ShadowCode's cheapest read-only tool, the one timed on ShadowCode."""

ECHO_TOOL: Final = "echo"
"""The trivial tool of every peer (bare, server-everything, floor)."""

_ECHO_ARGS: Final = {"message": "ping"}


@dataclass(frozen=True)
class Layout:
    """Where things are for one benchmark run.

    Attributes:
        repo: the repository root.
        workspace: the sample project served by ShadowCode.
        home: the SHADOWCODE_HOME of the in-process targets (a fresh profile root, no engine).
        attached_home: the SHADOWCODE_HOME whose headless engine the attached targets use.
        shiv_warm: the SHIV_ROOT kept between warm zipapp spawns.
        pyz: the zipapp under test (the run's private copy, so a rebuild meanwhile cannot
            pull it away).
        venv_python: the interpreter with the project's dependencies.
        pyz_python: the interpreter that runs the zipapp (no virtualenv, as on a host).
        node: the node executable.
    """

    repo: Path
    workspace: Path
    home: Path
    attached_home: Path
    shiv_warm: Path
    pyz: Path
    venv_python: Path
    pyz_python: Path
    node: str

    def display(self, argv: tuple[str, ...]) -> list[str]:
        """``argv`` with machine paths replaced by placeholders.

        The placeholders are ``<pyz>``, ``<venv-python>``, ``<python>``, ``<workspace>`` and ``<repo>``.
        """
        names = [
            (str(self.pyz), "<pyz>"),
            (str(self.venv_python), "<venv-python>"),
            (str(self.pyz_python), "<python>"),
            (str(self.workspace), "<workspace>"),
            (str(self.repo), "<repo>"),
        ]
        shown = []
        for arg in argv:
            for path, name in names:
                if arg == path or arg.startswith(path + os.sep):
                    arg = name + arg[len(path) :]
                    break
            shown.append(arg)
        return shown


@dataclass(frozen=True)
class Target:
    """One server to measure.

    Attributes:
        name: key in the results (``shadowcode_pyz_warm``, ``bare`` ...).
        label: the table's row label.
        argv: the command; spawned without a shell.
        tool: the tool timed in the call figures.
        tool_args: its arguments (a JSON object).
        env: variables added to the benchmark's environment for this server.
        fresh_dir_env: variables pointed at one new empty folder for every spawn (``HOME``
            and ``SHADOWCODE_HOME``: a user the archive never ran for); empty for none.
        measure_calls: False when only start-up is measured (the cold zipapp and the
            attached source entry: their calls are those of the warm archive's rows).
        expect_text: text the timed tool's first answer must contain (checked once per spawn,
            outside the timed part), or None.
        forbid_mapped: part of a file path the server process must not map (checked with
            the memory reading), or None.
        unavailable: why this target cannot be measured in this run, or None.
    """

    name: str
    label: str
    argv: tuple[str, ...]
    tool: str = ECHO_TOOL
    tool_args: dict[str, Any] = field(default_factory=lambda: dict(_ECHO_ARGS))
    env: dict[str, str] = field(default_factory=dict)
    fresh_dir_env: tuple[str, ...] = ()
    measure_calls: bool = True
    expect_text: str | None = None
    forbid_mapped: str | None = None
    unavailable: str | None = None


def base_python() -> Path:
    """The interpreter behind the current virtualenv (the current one outside a virtualenv).

    The zipapp runs on it so no virtualenv site-packages can satisfy its imports, as on a
    host that only has python3.
    """
    base = getattr(sys, "_base_executable", None) or sys.executable
    return Path(os.path.realpath(base))


def _serve_args(layout: Layout) -> tuple[str, ...]:
    return ("--workspace", str(layout.workspace), "mcp", "serve")


def engine_argv(layout: Layout) -> tuple[str, ...]:
    """The command that runs the profile's headless engine: from the archive when it is there.

    Args:
        layout: paths of this run.

    Returns:
        ``(<python>, <pyz>, "engine")``, or ``(<venv-python>, "-m", "shadowcode", "engine")``
        when the archive is missing.
    """
    if layout.pyz.is_file():
        return (str(layout.pyz_python), str(layout.pyz), "engine")
    return (str(layout.venv_python), "-m", "shadowcode", "engine")


def attached_targets(layout: Layout) -> list[Target]:
    """The warm archive and the source entry spawned while the headless engine runs.

    Args:
        layout: paths of this run.

    Returns:
        ``shadowcode_pyz_attached`` (start-up and calls: the relay's latency and per-session
        memory) and ``shadowcode_source_attached`` (start-up only).
    """
    env = {"SHADOWCODE_HOME": str(layout.attached_home)}
    return [
        Target(
            name="shadowcode_pyz_attached",
            label="shadowcode.pyz warm, engine running",
            argv=(str(layout.pyz_python), str(layout.pyz), *_serve_args(layout)),
            tool=STATUS_TOOL,
            tool_args={},
            env={**env, "SHIV_ROOT": str(layout.shiv_warm)},
            expect_text=ATTACHED_EXPECT_TEXT,
            forbid_mapped=RELAY_FORBIDDEN_MAPPING,
        ),
        Target(
            name="shadowcode_source_attached",
            label="shadowcode (source), engine running",
            argv=(str(layout.venv_python), "-m", "shadowcode", *_serve_args(layout)),
            tool=STATUS_TOOL,
            tool_args={},
            env=env,
            measure_calls=False,
            expect_text=ATTACHED_EXPECT_TEXT,
            forbid_mapped=RELAY_FORBIDDEN_MAPPING,
        ),
    ]


def build_targets(layout: Layout) -> list[Target]:
    """Every target, in table order: ShadowCode's variants, then the peers.

    Args:
        layout: paths of this run.

    Returns:
        Targets named ``shadowcode_source``, ``shadowcode_pyz_cold``, ``shadowcode_pyz_warm``,
        ``shadowcode_pyz_attached``, ``shadowcode_source_attached``, ``bare``, ``everything``,
        ``floor``.
    """
    modules = layout.repo / "conformance" / "shadowcode_conformance" / "node_probes" / "node_modules"
    everything = modules / "@modelcontextprotocol/server-everything/dist/index.js"
    pyz_argv = (str(layout.pyz_python), str(layout.pyz), *_serve_args(layout))
    return [
        Target(
            name="shadowcode_source",
            label="shadowcode (source)",
            argv=(str(layout.venv_python), "-m", "shadowcode", *_serve_args(layout)),
            tool=STATUS_TOOL,
            tool_args={},
            expect_text=IN_PROCESS_EXPECT_TEXT,
            forbid_mapped=FRONT_FORBIDDEN_MAPPING,
        ),
        Target(
            name="shadowcode_pyz_cold",
            label="shadowcode.pyz, new HOME",
            argv=pyz_argv,
            tool=STATUS_TOOL,
            tool_args={},
            fresh_dir_env=COLD_DIR_ENV,
            measure_calls=False,
            expect_text=IN_PROCESS_EXPECT_TEXT,
            forbid_mapped=FRONT_FORBIDDEN_MAPPING,
        ),
        Target(
            name="shadowcode_pyz_warm",
            label="shadowcode.pyz, warm shiv cache",
            argv=pyz_argv,
            tool=STATUS_TOOL,
            tool_args={},
            env={"SHIV_ROOT": str(layout.shiv_warm)},
            expect_text=IN_PROCESS_EXPECT_TEXT,
            forbid_mapped=FRONT_FORBIDDEN_MAPPING,
        ),
        *attached_targets(layout),
        Target(
            name="bare",
            label="bare mcp 2.3 SDK server",
            argv=(str(layout.venv_python), str(layout.repo / "bench" / "bare_server.py")),
        ),
        Target(
            name="everything",
            label="server-everything (TS, stdio)",
            argv=(layout.node, str(everything), "stdio"),
        ),
        Target(
            name="floor",
            label="no-SDK floor (stdlib)",
            # The interpreter the archive runs on: both pay the same interpreter start-up (its
            # site and .pth files), so a ratio to the floor is what the archive adds over it.
            argv=(str(layout.pyz_python), str(layout.repo / "bench" / "floor_server.py")),
        ),
    ]
