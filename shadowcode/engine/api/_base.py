"""What every part of the engine API shares: the caller, the verb declaration, owners (ENG-03, SRV-22).

:func:`verb` declares a method of a part of :class:`~shadowcode.engine.api.EngineApi` as a verb
of the table; :class:`ApiBase` holds what is not a verb: the engine's mode, its owners (they
manage connections), and the call every declared verb makes (``call_verb``).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

from shadowcode.engine.wire import to_json
from shadowcode.enums import EngineMode
from shadowcode.limits import (
    CLEANUP_DEADLINE_SECONDS,
    MCP_TIMEOUT_MAX_SECONDS,
    OPERATION_DEADLINE_SECONDS,
    OWNER_REPLY_DEADLINE_SECONDS,
)

__all__ = [
    "INSPECTION_DEADLINE_SECONDS",
    "NOBODY",
    "PROBE_DEADLINE_SECONDS",
    "Access",
    "ApiBase",
    "Caller",
    "Empty",
    "OwnerClosed",
    "OwnerHandle",
    "Verb",
    "verb",
    "verb_name",
]

F = TypeVar("F", bound=Callable[..., Awaitable[Any]])
Req = TypeVar("Req")

INSPECTION_DEADLINE_SECONDS = OPERATION_DEADLINE_SECONDS + 5.0
"""A remote inspection's reply deadline: past the frontend's own operation deadline (SRV-25), so
that one answers first and names the tool."""

PROBE_DEADLINE_SECONDS = 2 * MCP_TIMEOUT_MAX_SECONDS + CLEANUP_DEADLINE_SECONDS
"""A remote caller's wait for a live probe: the longest initialization and discovery deadlines a
definition may choose, plus the cleanup of its process group (CW-03, CW-04, CLI-13)."""


@dataclass(frozen=True, slots=True)
class Empty:
    """A request without arguments."""


@dataclass(frozen=True, slots=True)
class OwnerClosed:
    """An owner's close: the jobs its close cancelled, after their cleanup (SRV-21)."""

    owner: str
    reason: str
    cancelled: list[str]


@dataclass(frozen=True, slots=True)
class Access:
    """What a frontend was started with (SRV-09, SRV-11, SRV-29).

    Attributes:
        allow_write: ``mcp serve --allow-write``; True for the interactive CLI.
        allow_approvals: ``--allow-approvals``; only meaningful with ``allow_write``.
        approve_in_host: ``--approve-in-host``: the host's answer to a question about one of
            the connection's own approvals counts as the person's (SRV-29).
    """

    allow_write: bool = False
    allow_approvals: bool = False
    approve_in_host: bool = False


class OwnerHandle(Protocol):
    """An owner of delegated jobs as its frontend holds it: an id, and (remote) its private socket."""

    @property
    def id(self) -> str: ...


@dataclass(frozen=True, slots=True)
class Caller:
    """Who asks the engine.

    Attributes:
        project: the frontend's project folder (canonicalized by the engine); None where the
            call concerns no project (engine status, the CLI's job listings).
        access: the frontend's write and approval flags.
        owner: the frontend's owner, for calls about its own jobs (SRV-22); None otherwise.
        confined: True for MCP connections: jobs and approvals are reached only through this
            caller's owner and project (SRV-11, SRV-16); False for the CLI, which acts for the
            whole profile (ENG-07, ENG-08).
    """

    project: Path | None = None
    access: Access = field(default_factory=Access)
    owner: OwnerHandle | None = None
    confined: bool = False


NOBODY = Caller()
"""A caller with no project, no flags and no owner: the default of every verb's ``caller``."""


@dataclass(frozen=True, slots=True)
class Verb:
    """One row of the verb table.

    Attributes:
        name: the method name on :class:`~shadowcode.engine.api.EngineApi`.
        wire: the control-socket method, ``noun/verb``.
        request: the request type.
        result: the result type (any type expression: a dataclass, a list of one, None-able).
        deadline_seconds: how long a remote caller waits for the reply.
    """

    name: str
    wire: str
    request: type[Any]
    result: Any
    deadline_seconds: float


def verb(wire: str, *, deadline_seconds: float = OWNER_REPLY_DEADLINE_SECONDS) -> Callable[[F], F]:
    """Declare an engine API method as the verb ``wire``.

    The declared method's body is replaced by a call of ``self.call_verb(name, request, caller)``,
    which :class:`~shadowcode.engine.remote.RemoteEngine` sends over the socket;
    :class:`~shadowcode.engine.local.LocalEngine` overrides every verb with its implementation.
    """

    def declare(fn: F) -> F:
        name = fn.__name__

        @functools.wraps(fn)
        async def invoke(self: ApiBase, request: Any, caller: Caller = NOBODY) -> Any:
            return await self.call_verb(name, request, caller)

        vars(invoke)["__verb__"] = (wire, deadline_seconds)
        return cast(F, invoke)  # functools.wraps keeps the declared signature

    return declare


def verb_name(declared: Callable[..., Awaitable[object]]) -> str:
    """The method name of a declared verb (``EngineApi.goal_get`` → ``goal_get``).

    Raises:
        TypeError: ``declared`` was not declared with :func:`verb`.
    """
    if getattr(declared, "__verb__", None) is None:
        raise TypeError(f"{getattr(declared, '__name__', declared)!r} is not a verb of the engine API")
    return declared.__name__


class ApiBase:
    """What every part of the engine API shares: the mode, the owners, the call of a declared verb.

    Attributes:
        mode: ``temporary``, ``headless`` or ``attached`` (ENG-03).
    """

    mode: EngineMode = EngineMode.TEMPORARY

    async def call_verb(self, name: str, request: Any, caller: Caller) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not implement {name}")

    async def call_as_json(
        self, declared: Callable[[Any, Req, Caller], Awaitable[object]], request: Req, caller: Caller = NOBODY
    ) -> Any:
        """The result of the verb ``declared`` (``EngineApi.goal_get``) as JSON values, encoded once.

        For a frontend that only passes the result on as JSON (the MCP tools): in process the
        result is encoded here; over the socket the reply's JSON is returned as it came, never
        decoded into the result type and encoded again.

        Raises:
            TypeError: ``declared`` is not a verb of the table.
            ShadowcodeError: as the verb itself raises.
        """
        return to_json(await self.call_verb(verb_name(declared), request, caller))

    # -- owners (SRV-21, SRV-22, SRV-24): not table verbs, they manage connections ----------

    async def open_owner(self, kind: str, caller: Caller) -> OwnerHandle:
        """Register an owner for ``caller.project`` before any of its work is scheduled (SRV-22).

        Raises:
            PolicyError: OWNER_SOCKETS_MAX owners are open (SRV-24).
            ConfigError: the project folder is not usable.
        """
        raise NotImplementedError

    async def close_owner(self, owner: OwnerHandle, reason: str) -> OwnerClosed:
        """Cancel the owner's unfinished jobs, wait for their cleanup, and record why (SRV-21)."""
        raise NotImplementedError

    async def aclose(self) -> None:
        """Let go of the engine (a remote one keeps running)."""
