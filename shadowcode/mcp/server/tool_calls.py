"""Running one connection's tool calls under SRV-25's operation limits, for the SDK's handler and the direct path.

Both ways a ``tools/call`` can be answered (the SDK's handler in
:mod:`shadowcode.mcp.server.app`, and :mod:`shadowcode.mcp.server.direct_calls` beside it)
run the tool through one :class:`ToolCalls` per connection, so the in-flight count, the
deadline and the result limit are the same whichever way a call goes.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from shadowcode.errors import ShadowcodeError
from shadowcode.limits import PROGRESS_INTERVAL_SECONDS, RESULT_MAX_BYTES
from shadowcode.mcp.server.context import ServerContext
from shadowcode.mcp.server.summaries import summary
from shadowcode.mcp.server.tools import ToolSpec

if TYPE_CHECKING:
    import mcp_types as types
else:
    from shadowcode.mcp.server.lazy_modules import lazy_module

    types = lazy_module("mcp_types")  # imported on first use: lazy_start

__all__ = [
    "JOB_TOOLS",
    "Operations",
    "TooManyOperations",
    "Progress",
    "ToolCalls",
    "ToolOutcome",
    "json_text",
    "result_too_large",
]

logger = logging.getLogger(__name__)

json_text = json.JSONEncoder(ensure_ascii=False).encode
"""``json.dumps(value, ensure_ascii=False)`` with its encoder made once (``json.dumps`` builds one per call
when given options): the JSON text of a result, and of a string inside a response frame."""


Progress = Callable[[float, str], Awaitable[object]]
"""Sends one ``notifications/progress`` for the call: ``(progress, message)``; progress only grows."""

JOB_TOOLS = frozenset({"shadow_run", "shadow_test", "shadow_jobs"})
"""Tools whose success may have created or cancelled one of the connection's jobs."""


class TooManyOperations(Exception):
    """A tool or resource operation refused past the connection's in-flight limit (SRV-25).

    Raised without the SDK loaded (the stdio session serves read-only tools before it loads
    it); the SDK's handlers turn it into an ``MCPError``, the direct path into the same
    JSON-RPC error. ``code`` is ``INVALID_REQUEST`` (-32600).
    """

    def __init__(self, limit: int) -> None:
        self.code = types.INVALID_REQUEST
        self.message = (
            f"too many operations in flight: at most {limit} tool or resource operations run at once; "
            "retry after one finishes"
        )
        super().__init__(self.message)

    def error_data(self) -> dict[str, Any]:
        """The JSON-RPC ``error`` member: ``{"code": -32600, "message": ...}``."""
        return {"code": self.code, "message": self.message}


class Operations:
    """Counts tool/resource operations in flight on one connection (SRV-25).

    ``enter`` refuses the operation past ``limit`` (:class:`TooManyOperations`) and says so on
    stderr; ``leave`` must follow every successful ``enter``.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.running = 0

    def enter(self) -> None:
        if self.running >= self.limit:
            sys.stderr.write(f"shadowcode: refusing a request: more than {self.limit} operations in flight\n")
            raise TooManyOperations(self.limit)
        self.running += 1

    def leave(self) -> None:
        self.running -= 1


def result_too_large(text: str, max_bytes: int = RESULT_MAX_BYTES) -> bool:
    """Whether a serialized tool or resource result is over the result limit (SRV-25).

    Args:
        text: the result as sent, i.e. the JSON text of a tool's document or a resource's text.
        max_bytes: the limit in bytes of UTF-8; a result of exactly ``max_bytes`` is allowed.

    Returns:
        True when ``text`` encodes to more than ``max_bytes`` bytes.
    """
    if len(text) > max_bytes:
        return True  # every character is at least one byte
    return len(text.encode("utf-8")) > max_bytes


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """One tool call's answer: a result's summary, document and JSON text, or an error's message.

    Attributes:
        text: the text block: a result's short summary (SRV-04), or the error message (``is_error``).
        document: the result as structured content; None for an error.
        json: the document's JSON text as sent (its size is what SRV-25 bounds); None for an error.
    """

    text: str
    document: dict[str, Any] | None = None
    json: str | None = None

    @property
    def is_error(self) -> bool:
        return self.document is None


class ToolCalls:
    """Runs the seventeen tools for one connection under SRV-25's operation limits.

    A tool failure (a :class:`ShadowcodeError`, invalid arguments, an oversized result, the
    deadline, an unexpected exception) is an error outcome, never an exception; only a request
    past the in-flight limit raises (:class:`TooManyOperations`).
    """

    def __init__(
        self,
        ctx: ServerContext,
        ops: Operations,
        operation_deadline_seconds: float,
        result_max_bytes: int,
        *,
        jobs_touched: Callable[[], object] | None = None,
        progress_interval_seconds: float = PROGRESS_INTERVAL_SECONDS,
    ) -> None:
        self.ctx = ctx
        self.ops = ops
        self.operation_deadline_seconds = operation_deadline_seconds
        self.result_max_bytes = result_max_bytes
        self.jobs_touched = jobs_touched
        self.progress_interval_seconds = progress_interval_seconds

    async def run(
        self,
        spec: ToolSpec,
        arguments: dict[str, Any],
        scope: anyio.CancelScope | None = None,
        progress: Progress | None = None,
    ) -> ToolOutcome | None:
        """Validate ``arguments`` against ``spec`` and run it (SRV-25: in-flight count, deadline, result size).

        Args:
            spec: the tool.
            arguments: the call's arguments.
            scope: a fresh cancel scope the call runs in (the direct path cancels it when the
                client cancels the call); its deadline is set here.
            progress: given when the client sent a progress token: called once per
                ``progress_interval_seconds`` while the call runs, the first time after that
                long, so a quick call sends nothing (SRV-28). A failing send stops the ticks,
                never the call.

        Returns:
            The outcome; None when ``scope`` was cancelled before the deadline.

        Raises:
            TooManyOperations: more operations in flight than the connection allows (SRV-25).
        """
        args: Any = None  # a tool without arguments called with none: nothing to validate (issue 32)
        if arguments or not spec.takes_no_arguments:
            from pydantic import ValidationError

            try:
                args = spec.input.model_validate(arguments)
            except ValidationError as exc:
                problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in exc.errors())
                return ToolOutcome(f"invalid arguments for {spec.name}: {problems}")
        deadline = self.operation_deadline_seconds
        scope = scope or anyio.CancelScope()
        scope.deadline = anyio.current_time() + deadline
        doc: dict[str, Any] | None = None
        self.ops.enter()
        try:
            with scope:
                if progress is None:
                    doc = await spec.handler(self.ctx, args)
                else:
                    doc = await self._with_progress(spec, args, progress)
        except ShadowcodeError as exc:
            return ToolOutcome(exc.message)
        except Exception:
            logger.exception("tool handler failed")
            return ToolOutcome(f"{spec.name} failed unexpectedly; details are in the server's stderr")
        finally:
            self.ops.leave()
        if doc is None:
            if anyio.current_time() < scope.deadline:
                return None  # cancelled by the client
            sys.stderr.write(f"shadowcode: {spec.name} passed its {deadline:g} s deadline\n")
            return ToolOutcome(f"{spec.name} did not finish within {deadline:g} seconds")
        if self.jobs_touched is not None and spec.name in JOB_TOOLS:
            self.jobs_touched()
        text = json_text(doc)
        if result_too_large(text, self.result_max_bytes):
            sys.stderr.write(f"shadowcode: the result of {spec.name} is over {self.result_max_bytes} bytes\n")
            return ToolOutcome(
                f"the result of {spec.name} is too large: more than {self.result_max_bytes} bytes; narrow the request"
            )
        return ToolOutcome(summary(spec.name, doc), doc, text)

    async def _with_progress(self, spec: ToolSpec, args: Any, progress: Progress) -> dict[str, Any]:
        """Run the handler while a companion task sends a progress notification per interval (SRV-28)."""
        interval = self.progress_interval_seconds
        deadline = self.operation_deadline_seconds

        async def tick() -> None:
            ticks = 0
            while True:
                await anyio.sleep(interval)
                ticks += 1
                message = f"{spec.name} is still working ({ticks * interval:g} s of at most {deadline:g} s)"
                try:
                    await progress(float(ticks), message)
                except Exception:  # noqa: BLE001 - the client's side of progress never fails the call
                    logger.debug("a progress notification could not be sent", exc_info=True)
                    return

        doc: dict[str, Any] = {}
        failure: Exception | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(tick)
            try:
                doc = await spec.handler(self.ctx, args)
            except Exception as exc:  # raised again below, not wrapped in the group's exception group
                failure = exc
            finally:
                tg.cancel_scope.cancel()
        if failure is not None:
            raise failure
        return doc
