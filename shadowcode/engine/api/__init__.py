"""The one engine API: every operation a frontend may ask of the engine (ENG-03).

Frontends (the MCP server over stdio, the HTTP gateway, the CLI) hold an :class:`EngineApi`
and reach the engine through it only: no store, no policy of their own. Each call names what
is asked (a request type) and who asks (a
:class:`Caller`: the frontend's fixed project, its flags, its owner)::

    async with open_engine(profile) as api:
        note = await api.memory_read(MemoryRef(), Caller(project=root))

The API has parts (:mod:`.engine`, :mod:`.projects`, :mod:`.models`, :mod:`.inspection`, :mod:`.notes`,
:mod:`.jobs`, :mod:`.servers`, :mod:`.plugins`): each part's module holds its request and
result types, and its verbs are declared once, as methods decorated with :func:`verb` on the
class of the same name under :mod:`.declared` (:class:`~.declared.projects.ProjectVerbs`): its
wire name (``noun/verb``), its request and result types (from the annotations, read in the
part's module) and its reply deadline. The four methods that manage a socket connection rather
than ask a question (owners, relayed MCP sessions) are the typed doors of :mod:`.doors`, beside
the table. From these declarations come the verb table (:func:`verbs`), the daemon's dispatch
(:mod:`shadowcode.engine.daemon`) and the remote client (:mod:`shadowcode.engine.remote`),
so a new verb is its types in its part, its declaration under :mod:`.declared` and its handler
in :mod:`shadowcode.engine.verbs`. Two implementations:

- :class:`~shadowcode.engine.local.LocalEngine`: in-process, either a temporary engine that
  lives and dies with its frontend or the headless daemon itself;
- :class:`~shadowcode.engine.remote.RemoteEngine`: the profile's headless engine over its
  control socket; owned calls travel on the owner's private socket (SRV-22).

Every request and result type is importable from here. A part's module is imported when one of
its names is first read (``api.SessionQuery``, ``from shadowcode.engine.api import Status``):
some hundred dataclasses cost a tenth of a second to build, and a stdio server answering its
first tool call needs a handful of them (issue 32). Where the API shows a record as it is
stored (a task, an event, an approval, a goal, a checkpoint) the type is the store's own record,
re-exported, so frontends import it from here and never from the store.

Errors are :class:`~shadowcode.errors.ShadowcodeError` subclasses on both sides: over the
socket they travel as a code plus fields and come back as the same typed error.
"""

from __future__ import annotations

import functools
import importlib
import typing
from typing import TYPE_CHECKING, Any

from shadowcode.engine.api import _base
from shadowcode.engine.api._base import *  # noqa: F403 - the shared names, as its __all__ lists them
from shadowcode.engine.api._base import Verb
from shadowcode.engine.api._names import PART_OF as _PART_OF
from shadowcode.engine.api.declared.engine import EngineVerbs
from shadowcode.engine.api.declared.inspection import InspectionVerbs
from shadowcode.engine.api.declared.jobs import JobVerbs
from shadowcode.engine.api.declared.models import ModelVerbs
from shadowcode.engine.api.declared.notes import NoteVerbs
from shadowcode.engine.api.declared.plugins import PluginVerbs
from shadowcode.engine.api.declared.projects import ProjectVerbs
from shadowcode.engine.api.declared.servers import ServerVerbs

if TYPE_CHECKING:
    from shadowcode.engine.api import doors, engine, inspection, jobs, models, notes, plugins, projects, servers
    from shadowcode.engine.api.doors import *  # noqa: F403
    from shadowcode.engine.api.engine import *  # noqa: F403
    from shadowcode.engine.api.inspection import *  # noqa: F403
    from shadowcode.engine.api.jobs import *  # noqa: F403
    from shadowcode.engine.api.models import *  # noqa: F403
    from shadowcode.engine.api.notes import *  # noqa: F403
    from shadowcode.engine.api.plugins import *  # noqa: F403
    from shadowcode.engine.api.projects import *  # noqa: F403
    from shadowcode.engine.api.servers import *  # noqa: F403

# The names of this package are its parts' names: each part lists its own in ``__all__`` (a form
# type checkers read statically); at run time ``_names`` (generated from those ``__all__`` by
# ci/api_names.py) says which part to import when a name is first read.
__all__ = ["EngineApi", "verb_named", "verbs"]
__all__ += _base.__all__
if TYPE_CHECKING:
    __all__ += doors.__all__
    __all__ += engine.__all__
    __all__ += inspection.__all__
    __all__ += jobs.__all__
    __all__ += models.__all__
    __all__ += notes.__all__
    __all__ += plugins.__all__
    __all__ += projects.__all__
    __all__ += servers.__all__
else:
    __all__ += list(_PART_OF)

    def __getattr__(name: str) -> Any:
        """A part's name, importing its module on first use (issue 32)."""
        part = _PART_OF.get(name)
        if part is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{__name__}.{part}"), name)
        globals()[name] = value
        return value


class EngineApi(EngineVerbs, ProjectVerbs, ModelVerbs, InspectionVerbs, NoteVerbs, JobVerbs, ServerVerbs, PluginVerbs):
    """The engine as a frontend sees it: every verb of every part. Every verb takes ``(request, caller)``.

    Attributes:
        mode: ``temporary``, ``headless`` or ``attached`` (ENG-03).
    """


@functools.cache
def verbs() -> dict[str, Verb]:
    """The verb table, by wire name, derived from the declarations of :class:`EngineApi`'s parts.

    A declaration's annotations are read in the names of its part's module
    (:mod:`.declared.projects` → :mod:`.projects`), which this imports.
    """
    table: dict[str, Verb] = {}
    for part in reversed(EngineApi.__mro__):
        names: dict[str, Any] | None = None
        for name, member in vars(part).items():
            declared = getattr(member, "__verb__", None)
            if declared is None:
                continue
            if names is None:
                names = vars(importlib.import_module(part.__module__.replace(".declared.", ".")))
            wire, deadline = declared
            hints = typing.get_type_hints(member, localns=names)
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
