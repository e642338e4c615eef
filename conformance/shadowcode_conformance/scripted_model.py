"""A loopback model endpoint that answers from a script, for running real hosts offline (REG-08).

A host such as Codex or Claude Code asks a model what to do next over HTTP. The host checks
point the host at this endpoint instead: it listens on ``127.0.0.1`` only, records every
request it receives (method, path, JSON body, when), and answers each one with whatever the
check's ``answer`` function returns. Two reply builders cover the wire shapes the pinned
hosts speak:

* :func:`responses_reply`: the OpenAI Responses API as Codex streams it with
  ``wire_api = "responses"`` (``POST {base_url}/responses``): Server-Sent Events
  ``response.created``, one ``response.output_item.done`` per output item,
  ``response.completed``.
* :func:`messages_reply`: the Anthropic Messages API as Claude Code calls it
  (``POST /v1/messages``): ``message_start``, one content block after another
  (``content_block_start``, a delta, ``content_block_stop``), ``message_delta`` with the
  stop reason, ``message_stop``; plain JSON when the request did not ask for a stream.
* :func:`chat_reply`: OpenAI Chat Completions as Qwen Code, Cline, opencode, Kilo and
  Continue call it with an OpenAI-compatible base URL (``POST {base}/chat/completions``):
  ``chat.completion.chunk`` events, the last with the finish reason, then usage and
  ``data: [DONE]``; one ``chat.completion`` JSON object when the request did not ask for a
  stream.
* :func:`gemini_reply`: the Gemini API as Gemini CLI calls it (``POST
  /v1beta/models/MODEL:streamGenerateContent?alt=sse`` or ``:generateContent``): one
  ``GenerateContentResponse`` as a single ``data:`` event, or as plain JSON.

HTTP/1.1 is parsed with h11. Every wait is bounded: a connection idle for
``CONNECTION_IDLE_SECONDS`` is closed, a body over ``REQUEST_BODY_MAX_BYTES`` is refused with
413, and at most ``REQUESTS_MAX`` requests are recorded (later ones get 503).
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import Any, Final, cast

import anyio
import h11
from anyio.abc import SocketAttribute, SocketStream

__all__ = [
    "CONNECTION_IDLE_SECONDS",
    "REQUESTS_MAX",
    "REQUEST_BODY_MAX_BYTES",
    "Answer",
    "ModelRequest",
    "Reply",
    "ScriptedModel",
    "chat_reply",
    "gemini_reply",
    "messages_reply",
    "responses_reply",
    "scripted_model",
    "sse",
]

CONNECTION_IDLE_SECONDS: Final = 60.0
"""Seconds a connection may stay silent before the endpoint closes it."""

REQUEST_BODY_MAX_BYTES: Final = 16 * 1024 * 1024
"""Bytes of one request body the endpoint reads; a larger one gets 413 (a host's request with
its instructions and tool schemas is a few hundred KiB)."""

REQUESTS_MAX: Final = 64
"""Requests recorded and answered; later ones get 503 so a looping host ends."""

_READ_BYTES = 65536


@dataclass(frozen=True)
class ModelRequest:
    """One request the endpoint received.

    Attributes:
        method: HTTP method.
        path: request target (path and query).
        headers: header names (lower case) to values.
        body: the JSON body, or None when it was empty or not JSON.
        at: ``time.monotonic()`` when the body was complete.
    """

    method: str
    path: str
    headers: Mapping[str, str]
    body: Any
    at: float


@dataclass(frozen=True)
class Reply:
    """What to answer: status, content type and the whole body."""

    status: int
    content_type: str
    body: bytes


Answer = Callable[[ModelRequest, int], Reply]
"""The script: given a request and how many requests came before it, the reply."""


@dataclass
class ScriptedModel:
    """The running endpoint.

    Attributes:
        port: the loopback port it listens on.
        requests: every recorded request, in arrival order.
    """

    port: int
    requests: list[ModelRequest] = field(default_factory=list[ModelRequest])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.port}"


def sse(events: Sequence[Mapping[str, Any]]) -> bytes:
    """Server-Sent Events: ``event: TYPE`` and ``data: JSON`` for each event (its ``type`` names it)."""
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def responses_reply(response_id: str, items: Sequence[Mapping[str, Any]]) -> Reply:
    """A streamed OpenAI Responses API answer carrying ``items`` as its output.

    Args:
        response_id: the response id.
        items: output items, e.g. ``{"type": "function_call", "call_id": ..., "name": ...,
            "arguments": "{}"}`` (with ``"namespace"`` for a namespaced tool) or
            ``{"type": "message", "role": "assistant", "id": ..., "content": [{"type":
            "output_text", "text": ...}]}``.
    """
    usage = {
        "input_tokens": 0,
        "input_tokens_details": None,
        "output_tokens": 0,
        "output_tokens_details": None,
        "total_tokens": 0,
    }
    events: list[Mapping[str, Any]] = [{"type": "response.created", "response": {"id": response_id}}]
    events += [{"type": "response.output_item.done", "output_index": i, "item": item} for i, item in enumerate(items)]
    events.append({"type": "response.completed", "response": {"id": response_id, "usage": usage}})
    return Reply(200, "text/event-stream", sse(events))


def messages_reply(request: ModelRequest, message_id: str, content: Sequence[Mapping[str, Any]]) -> Reply:
    """An Anthropic Messages API answer with ``content`` blocks, streamed when the request asked.

    Args:
        request: the request answered (its ``stream`` and ``model`` fields shape the reply).
        message_id: the message id.
        content: ``{"type": "text", "text": ...}`` or ``{"type": "tool_use", "id": ...,
            "name": ..., "input": {...}}`` blocks; any ``tool_use`` makes the stop reason
            ``tool_use``, else ``end_turn``.
    """
    given: object = request.body
    body = cast("dict[str, Any]", given) if isinstance(given, dict) else {}
    stop = "tool_use" if any(c.get("type") == "tool_use" for c in content) else "end_turn"
    usage = {"input_tokens": 1, "output_tokens": 1}
    message: dict[str, Any] = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": str(body.get("model") or "scripted"),
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    if not body.get("stream"):
        whole = {**message, "content": list(content), "stop_reason": stop}
        return Reply(200, "application/json", json.dumps(whole).encode())
    events: list[Mapping[str, Any]] = [{"type": "message_start", "message": message}]
    for index, block in enumerate(content):
        if block.get("type") == "tool_use":
            start: dict[str, Any] = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block.get("input", {}))}
        else:
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": str(block.get("text", ""))}
        events.append({"type": "content_block_start", "index": index, "content_block": start})
        events.append({"type": "content_block_delta", "index": index, "delta": delta})
        events.append({"type": "content_block_stop", "index": index})
    events.append({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": usage})
    events.append({"type": "message_stop"})
    return Reply(200, "text/event-stream", sse(events))


def chat_reply(
    request: ModelRequest, completion_id: str, text: str = "", calls: Sequence[Mapping[str, Any]] = ()
) -> Reply:
    """An OpenAI Chat Completions answer: ``text``, or the function ``calls``, streamed when the request asked.

    Args:
        request: the request answered (its ``stream`` and ``model`` fields shape the reply).
        completion_id: the completion id.
        text: the assistant's text (ignored when ``calls`` is given).
        calls: ``{"id": ..., "name": ..., "arguments": "{}"}`` function calls; any makes the
            finish reason ``tool_calls``, else ``stop``.
    """
    given: object = request.body
    body = cast("dict[str, Any]", given) if isinstance(given, dict) else {}
    model = str(body.get("model") or "scripted")
    tool_calls = [
        {"index": i, "id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
        for i, c in enumerate(calls)
    ]
    finish = "tool_calls" if tool_calls else "stop"
    usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    head = {"id": completion_id, "created": int(time.time()), "model": model}
    if not body.get("stream"):
        message: dict[str, Any] = {"role": "assistant", "content": None if tool_calls else text}
        if tool_calls:
            message["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in tool_calls]
        whole = {
            **head,
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        }
        return Reply(200, "application/json", json.dumps({**whole, "usage": usage}).encode())
    delta: dict[str, Any] = (
        {"role": "assistant", "tool_calls": tool_calls} if tool_calls else {"role": "assistant", "content": text}
    )
    chunks: list[dict[str, Any]] = [
        {**head, "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**head, "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
        {**head, "object": "chat.completion.chunk", "choices": [], "usage": usage},
    ]
    events = b"".join(f"data: {json.dumps(chunk)}\n\n".encode() for chunk in chunks)
    return Reply(200, "text/event-stream", events + b"data: [DONE]\n\n")


def gemini_reply(request: ModelRequest, parts: Sequence[Mapping[str, Any]]) -> Reply:
    """A Gemini API ``GenerateContentResponse`` with ``parts``, as SSE for ``streamGenerateContent``.

    Args:
        request: the request answered (a path with ``:streamGenerateContent`` gets one
            ``data:`` event; ``:generateContent`` gets the JSON object).
        parts: ``{"text": ...}`` or ``{"functionCall": {"name": ..., "args": {...}}}`` parts.
    """
    response = {
        "candidates": [{"content": {"role": "model", "parts": list(parts)}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
        "modelVersion": "scripted",
    }
    if ":streamGenerateContent" in request.path:
        return Reply(200, "text/event-stream", f"data: {json.dumps(response)}\n\n".encode())
    return Reply(200, "application/json", json.dumps(response).encode())


@asynccontextmanager
async def scripted_model(answer: Answer) -> AsyncGenerator[ScriptedModel, None]:
    """Listen on ``127.0.0.1`` (a free port) and answer every request with ``answer``.

    Args:
        answer: the script; an exception in it becomes a 500 reply.

    Yields:
        The :class:`ScriptedModel` (its port and the requests recorded so far).
    """
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    model = ScriptedModel(port=int(listener.extra(SocketAttribute.local_port)))

    async def serve(stream: SocketStream) -> None:
        async with stream:
            with suppress(
                anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, h11.ProtocolError, OSError
            ):
                await _connection(stream, model, answer)

    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, serve)
        try:
            yield model
        finally:
            tg.cancel_scope.cancel()


async def _connection(stream: SocketStream, model: ScriptedModel, answer: Answer) -> None:
    """Serve requests on one connection until it closes, errs or stays idle too long."""
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=REQUEST_BODY_MAX_BYTES)
    while True:
        request: h11.Request | None = None
        body = bytearray()
        too_large = False
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = b""
                with anyio.move_on_after(CONNECTION_IDLE_SECONDS):
                    data = await stream.receive(_READ_BYTES)
                if not data:
                    return  # idle too long
                conn.receive_data(data)
                continue
            if isinstance(event, h11.ConnectionClosed):
                return
            if isinstance(event, h11.Request):
                request = event
            elif isinstance(event, h11.Data):
                too_large = too_large or len(body) + len(event.data) > REQUEST_BODY_MAX_BYTES
                if not too_large:
                    body.extend(event.data)
            elif isinstance(event, h11.EndOfMessage):
                break
        if request is None:
            return
        reply = _reply_for(request, bytes(body), too_large, model, answer)
        headers = [("content-type", reply.content_type), ("content-length", str(len(reply.body)))]
        await stream.send(conn.send(h11.Response(status_code=reply.status, headers=headers)))
        await stream.send(conn.send(h11.Data(data=reply.body)))
        await stream.send(conn.send(h11.EndOfMessage()))
        if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
            return
        conn.start_next_cycle()


def _reply_for(request: h11.Request, body: bytes, too_large: bool, model: ScriptedModel, answer: Answer) -> Reply:
    """Record the request and ask the script; refusals for oversize bodies and past the cap."""
    if too_large:
        return Reply(413, "application/json", b'{"error": "request body too large"}')
    if len(model.requests) >= REQUESTS_MAX:
        return Reply(503, "application/json", b'{"error": "the script has ended"}')
    try:
        parsed: Any = json.loads(body) if body else None
    except ValueError:
        parsed = None
    headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in request.headers}
    recorded = ModelRequest(
        request.method.decode("latin-1"), request.target.decode("latin-1"), headers, parsed, time.monotonic()
    )
    index = len(model.requests)
    model.requests.append(recorded)
    try:
        return answer(recorded, index)
    except Exception as exc:  # the script is check code: its failure is a reply the host sees
        return Reply(500, "application/json", json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode())
