"""The in-process implementation of every engine verb, one module per family (ENG-03).

Each handler is an ``async def verb(state, request, caller) -> result`` registered with
:func:`~shadowcode.engine.verbs._registry.handles` against the verb it implements on
:class:`~shadowcode.engine.api.EngineApi`; find a verb's behaviour by its name here:

- :mod:`.engine`: engine status and stop, background processes (ENG-03, SRV-23)
- :mod:`.projects`: projects and trust, status, models (ENG-01, ENG-02, ENG-05, SRV-20)
- :mod:`.inspection`: review, map, diagnostics, SQLite, history, checkpoints (SRV-13, SRV-19, SRV-20)
- :mod:`.notes`: memory notes and goals (SRV-12, SRV-14)
- :mod:`.jobs`: delegated tasks, test jobs, approvals, rollback (SRV-10, SRV-11, SRV-15, SRV-16, SRV-17,
  SRV-18, ENG-07, ENG-08)
- :mod:`.servers`: external MCP server definitions, grants, validate, tools, doctor (CLI-01, CLI-02,
  CLI-05, CW-03, CW-04)
- :mod:`.plugins`: plugin bundles that contribute MCP servers (CW-12)
"""

from __future__ import annotations

from shadowcode.engine.verbs import engine, inspection, jobs, notes, plugins, projects, servers
from shadowcode.engine.verbs._registry import HANDLERS

__all__ = ["HANDLERS", "engine", "inspection", "jobs", "notes", "plugins", "projects", "servers"]
