"""The in-process implementation of every engine verb, one module per family (ENG-03).

Each handler is an ``async def verb(state, request, caller) -> result`` registered with
:func:`~shadowcode.engine.verbs._registry.handles` against the verb it implements on
:class:`~shadowcode.engine.api.EngineApi`; find a verb's behaviour by its name here:

- :mod:`.engine`: engine status and stop, background processes (ENG-03, SRV-23)
- :mod:`.projects`: projects and trust, status (ENG-01, ENG-02, SRV-20)
- :mod:`.models`: configured models (ENG-05)
- :mod:`.inspection`: review, map, diagnostics, SQLite, history, checkpoints (SRV-13, SRV-19, SRV-20)
- :mod:`.notes`: memory notes and goals (SRV-12, SRV-14)
- :mod:`.jobs`: delegated tasks, test jobs, approvals, rollback (SRV-10, SRV-11, SRV-15, SRV-16, SRV-17,
  SRV-18, ENG-07, ENG-08)
- :mod:`.servers`: external MCP server definitions, grants, validate, tools, doctor (CLI-01, CLI-02,
  CLI-05, CW-03, CW-04)
- :mod:`.plugins`: plugin bundles that contribute MCP servers (CW-12)

A family's module is the one named like the part of the API that declares the verb
(:mod:`shadowcode.engine.api.projects` → :mod:`.projects`), and it is imported when one of its
verbs is first called (:func:`handler`): a temporary engine answering a status call never loads
the job runner's or the MCP client's handlers (issue 32).
"""

from __future__ import annotations

import importlib

from shadowcode.engine.verbs._registry import HANDLERS, Handler

__all__ = ["HANDLERS", "all_handlers", "handler"]


def handler(name: str) -> Handler:
    """The in-process handler of the verb whose method is ``name``, importing its family on first use.

    Raises:
        KeyError: no verb is called ``name``, or its family registers no handler for it.
    """
    found = HANDLERS.get(name)
    if found is not None:
        return found
    from shadowcode.engine.api import EngineApi

    declared = getattr(EngineApi, name, None)
    if declared is None or getattr(declared, "__verb__", None) is None:
        raise KeyError(name)
    family = str(declared.__module__).rsplit(".", 1)[-1]
    importlib.import_module(f"{__name__}.{family}")
    return HANDLERS[name]


def all_handlers() -> dict[str, Handler]:
    """Every handler by verb method name, with every family imported (the headless engine, tests)."""
    from shadowcode.engine.api import EngineApi

    for part in EngineApi.__mro__:
        if part.__module__.startswith("shadowcode.engine.api.declared."):
            importlib.import_module(f"{__name__}.{part.__module__.rsplit('.', 1)[-1]}")
    return HANDLERS
