"""The one engine API: every operation a frontend may ask of the engine (ENG-03).

Frontends (the MCP server over stdio, the HTTP gateway, the CLI) hold an :class:`EngineApi`
and reach the engine through it only: no store, no policy of their own. Each call names what
is asked (a request type) and who asks (a
:class:`Caller`: the frontend's fixed project, its flags, its owner)::

    async with open_engine(profile) as api:
        note = await api.memory_read(MemoryRef(), Caller(project=root))

Each verb is declared once, as a method decorated with :func:`verb` in the module of its
part (:mod:`.engine`, :mod:`.projects`, :mod:`.inspection`, :mod:`.notes`, :mod:`.jobs`,
:mod:`.servers`, :mod:`.plugins`, each beside its request and result types): its wire name (``noun/verb``), its
request and result types (from the annotations) and its reply deadline. The four methods that
manage a socket connection rather than ask a question (owners, relayed MCP sessions) are the
typed doors of :mod:`.doors`, beside the table.
From these declarations come the verb table (:func:`verbs`), the daemon's dispatch
(:mod:`shadowcode.engine.daemon`) and the remote client (:mod:`shadowcode.engine.remote`),
so a new verb is its declaration in its part plus its handler in
:mod:`shadowcode.engine.verbs`. Two implementations:

- :class:`~shadowcode.engine.local.LocalEngine`: in-process, either a temporary engine that
  lives and dies with its frontend or the headless daemon itself;
- :class:`~shadowcode.engine.remote.RemoteEngine`: the profile's headless engine over its
  control socket; owned calls travel on the owner's private socket (SRV-22).

Every request and result type is importable from here. Where the API shows a record as it is
stored (a task, an event, an approval, a goal, a checkpoint) the type is the store's own record,
re-exported, so frontends import it from here and never from the store.

Errors are :class:`~shadowcode.errors.ShadowcodeError` subclasses on both sides: over the
socket they travel as a code plus fields and come back as the same typed error.
"""

from __future__ import annotations

import functools
import typing

from shadowcode.engine.api import _base, doors, engine, inspection, jobs, notes, plugins, projects, servers
from shadowcode.engine.api._base import *  # noqa: F403 - every part's names, as its __all__ lists them
from shadowcode.engine.api._base import Verb
from shadowcode.engine.api.doors import *  # noqa: F403
from shadowcode.engine.api.engine import *  # noqa: F403
from shadowcode.engine.api.engine import EngineVerbs
from shadowcode.engine.api.inspection import *  # noqa: F403
from shadowcode.engine.api.inspection import InspectionVerbs
from shadowcode.engine.api.jobs import *  # noqa: F403
from shadowcode.engine.api.jobs import JobVerbs
from shadowcode.engine.api.notes import *  # noqa: F403
from shadowcode.engine.api.notes import NoteVerbs
from shadowcode.engine.api.plugins import *  # noqa: F403
from shadowcode.engine.api.plugins import PluginVerbs
from shadowcode.engine.api.projects import *  # noqa: F403
from shadowcode.engine.api.projects import ProjectVerbs
from shadowcode.engine.api.servers import *  # noqa: F403
from shadowcode.engine.api.servers import ServerVerbs

# The names of this package are its parts' names: each part lists its own in ``__all__`` (a
# form type checkers read statically), so no list here repeats them.
__all__ = ["EngineApi", "verb_named", "verbs"]
__all__ += _base.__all__
__all__ += doors.__all__
__all__ += engine.__all__
__all__ += inspection.__all__
__all__ += jobs.__all__
__all__ += notes.__all__
__all__ += plugins.__all__
__all__ += projects.__all__
__all__ += servers.__all__


class EngineApi(EngineVerbs, ProjectVerbs, InspectionVerbs, NoteVerbs, JobVerbs, ServerVerbs, PluginVerbs):
    """The engine as a frontend sees it: every verb of every part. Every verb takes ``(request, caller)``.

    Attributes:
        mode: ``temporary``, ``headless`` or ``attached`` (ENG-03).
    """


@functools.cache
def verbs() -> dict[str, Verb]:
    """The verb table, by wire name, derived from the declarations of :class:`EngineApi`'s parts."""
    table: dict[str, Verb] = {}
    for part in reversed(EngineApi.__mro__):
        for name, member in vars(part).items():
            declared = getattr(member, "__verb__", None)
            if declared is None:
                continue
            wire, deadline = declared
            hints = typing.get_type_hints(member)
            table[wire] = Verb(name, wire, hints["request"], hints["return"], deadline)
    return table


@functools.cache
def verb_named(name: str) -> Verb:
    """The verb whose method is ``name``.

    Raises:
        KeyError: no such verb.
    """
    for entry in verbs().values():
        if entry.name == name:
            return entry
    raise KeyError(name)
