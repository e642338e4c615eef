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
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from shadowcode.errors import ShadowcodeError
from shadowcode.limits import RESULT_MAX_BYTES
from shadowcode.mcp.server.context import ServerContext
from shadowcode.mcp.server.tools import ToolSpec

__all__ = ["Operations", "ToolCalls", "ToolOutcome", "json_text", "result_too_large"]

logger = logging.getLogger(__name__)

json_text = json.JSONEncoder(ensure_ascii=False).encode
"""``json.dumps(value, ensure_ascii=False)`` with its encoder made once (``json.dumps`` builds one per call
when given options): the JSON text of a result, and of a string inside a response frame."""


class Operations:
    """Counts tool/resource operations in flight on one connection (SRV-25).

    ``enter`` refuses the operation past ``limit`` with a JSON-RPC error (``INVALID_REQUEST``)
    and a stderr line; ``leave`` must follow every successful ``enter``.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.running = 0

    def enter(self) -> None:
        if self.running >= self.limit:
            sys.stderr.write(f"shadowcode: refusing a request: more than {self.limit} operations in flight\n")
            raise MCPError(
                types.INVALID_REQUEST,
                f"too many operations in flight: at most {self.limit} tool or resource operations run at once; "
                "retry after one finishes",
            )
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
    """One tool call's answer: the JSON text and document of a result, or an error's message.

    Attributes:
        text: the result's JSON text, or the error message (``is_error``).
        document: the result as structured content; None for an error.
    """

    text: str
    document: dict[str, Any] | None = None

    @property
    def is_error(self) -> bool:
        return self.document is None


class ToolCalls:
    """Runs the seventeen tools for one connection under SRV-25's operation limits.

    A tool failure (a :class:`ShadowcodeError`, invalid arguments, an oversized result, the
    deadline, an unexpected exception) is an error outcome, never an exception; only a request
    past the in-flight limit raises (``MCPError``, ``INVALID_REQUEST``).
    """

    def __init__(
        self, ctx: ServerContext, ops: Operations, operation_deadline_seconds: float, result_max_bytes: int
    ) -> None:
        self.ctx = ctx
        self.ops = ops
        self.operation_deadline_seconds = operation_deadline_seconds
        self.result_max_bytes = result_max_bytes

    async def run(
        self, spec: ToolSpec, arguments: dict[str, Any], scope: anyio.CancelScope | None = None
    ) -> ToolOutcome | None:
        """Validate ``arguments`` against ``spec`` and run it (SRV-25: in-flight count, deadline, result size).

        Args:
            spec: the tool.
            arguments: the call's arguments.
            scope: a fresh cancel scope the call runs in (the direct path cancels it when the
                client cancels the call); its deadline is set here.

        Returns:
            The outcome; None when ``scope`` was cancelled before the deadline.

        Raises:
            MCPError: more operations in flight than the connection allows (SRV-25).
        """
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
                doc = await spec.handler(self.ctx, args)
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
        text = json_text(doc)
        if result_too_large(text, self.result_max_bytes):
            sys.stderr.write(f"shadowcode: the result of {spec.name} is over {self.result_max_bytes} bytes\n")
            return ToolOutcome(
                f"the result of {spec.name} is too large: more than {self.result_max_bytes} bytes; narrow the request"
            )
        return ToolOutcome(text, doc)
