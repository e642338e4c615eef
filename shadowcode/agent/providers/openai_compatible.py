"""The ``openai`` provider: OpenAI-compatible chat completions over HTTP (ENG-05).

One ``POST {base_url}/chat/completions`` per request, body
``{"model", "messages", "tools", "tool_choice": "auto"}`` (the last two only when tools
are offered), no streaming. The HTTP client is ``httpx2`` (the one the MCP SDK uses) with
redirects refused, no proxy or other setting taken from the environment, the connect and
read timeouts from :mod:`shadowcode.limits`, a deadline on the whole request, and the
answer read in chunks and dropped once it passes ``MODEL_RESPONSE_MAX_BYTES``.

The API key is looked up once, when the provider opens: the environment variable named
by ``api_key_env``, else the entry of that name in the profile's secret store. It is sent
as a bearer token and appears in no message or log line. Every failure is a
:class:`ProviderError` whose message holds at most a sanitized status line of the answer,
never its body.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx2

from shadowcode.agent.providers.base import ModelReply, ProviderError, ToolCall
from shadowcode.agent.providers.request_log import RequestLog
from shadowcode.agent.providers.tool_calls import make_tool_call
from shadowcode.errors import ConfigError
from shadowcode.json_values import json_array, json_object
from shadowcode.limits import (
    MODEL_CONNECT_TIMEOUT_SECONDS,
    MODEL_READ_TIMEOUT_SECONDS,
    MODEL_REQUEST_TIMEOUT_SECONDS,
    MODEL_RESPONSE_MAX_BYTES,
)
from shadowcode.profile import Profile
from shadowcode.settings import ModelSettings

__all__ = ["OpenAIProvider", "resolve_api_key"]

_STATUS_TEXT_MAX_CHARS = 60
_HINTS = {
    401: "the API key was refused",
    403: "the API key is not allowed to use this model",
    404: "check base_url and model",
    429: "rate limited by the model server",
}


def resolve_api_key(settings: ModelSettings, profile: Profile) -> str | None:
    """The API key for ``settings`` (ENG-05).

    Returns:
        None when ``api_key_env`` is not set; else the non-empty value of the environment
        variable of that name, or failing that the string stored under that name in the
        profile's secret store (a JSON object of name to value).

    Raises:
        ConfigError: ``api_key_env`` is set but neither place holds a value, or the secret
            store is not a readable JSON object. The message names the variable, never a value.
    """
    name = settings.api_key_env
    if not name:
        return None
    from shadowcode.secrets import resolve

    value = resolve(profile, name)
    if value:
        return value
    raise ConfigError(
        f"model {settings.name!r}: API key {name!r} is neither set in the environment "
        f"nor stored in the secret store of profile {profile.name!r}",
        model=settings.name,
    )


def _status_line(response: httpx2.Response) -> str:
    phrase = "".join(ch for ch in response.reason_phrase if ch.isascii() and ch.isprintable())
    phrase = phrase[:_STATUS_TEXT_MAX_CHARS].strip()
    return f"HTTP {response.status_code}" + (f" {phrase}" if phrase else "")


class OpenAIProvider:
    """Chat completions against one OpenAI-compatible endpoint; implements ``ModelProvider``.

    Args:
        settings: the model entry; needs ``base_url`` (http or https) and ``model``.
        profile: for the secret store and the request log.
        connect_timeout_seconds: seconds to open a connection (MODEL_CONNECT_TIMEOUT_SECONDS).
        read_timeout_seconds: seconds the server may stay silent while the request is sent or
            the answer read (MODEL_READ_TIMEOUT_SECONDS).
        total_timeout_seconds: seconds for the whole request (MODEL_REQUEST_TIMEOUT_SECONDS).
        response_max_bytes: bytes of decoded answer body accepted (MODEL_RESPONSE_MAX_BYTES).

    Raises:
        ConfigError: ``base_url`` or ``model`` missing, the URL is not http(s) with a host,
            or the API key is named but not found.
    """

    def __init__(
        self,
        settings: ModelSettings,
        profile: Profile,
        *,
        connect_timeout_seconds: float = MODEL_CONNECT_TIMEOUT_SECONDS,
        read_timeout_seconds: float = MODEL_READ_TIMEOUT_SECONDS,
        total_timeout_seconds: float = MODEL_REQUEST_TIMEOUT_SECONDS,
        response_max_bytes: int = MODEL_RESPONSE_MAX_BYTES,
    ) -> None:
        self.name = settings.name
        if not settings.base_url:
            raise ConfigError(f"model {settings.name!r} uses the openai provider but has no base_url", model=self.name)
        if not settings.model:
            raise ConfigError(f"model {settings.name!r} uses the openai provider but names no model", model=self.name)
        parts = urlsplit(settings.base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"model {settings.name!r}: base_url must be an http or https URL", model=self.name)
        self.model = settings.model
        self.url = settings.base_url.rstrip("/") + "/chat/completions"
        self._where = parts.netloc.rpartition("@")[2]
        self.total_timeout_seconds = total_timeout_seconds
        self.response_max_bytes = response_max_bytes
        self.log = RequestLog.for_model(settings, profile)
        headers = {"Accept": "application/json", "User-Agent": "shadowcode"}
        key = resolve_api_key(settings, profile)
        if key is not None:
            headers["Authorization"] = f"Bearer {key}"
        self._client = httpx2.AsyncClient(
            headers=headers,
            timeout=httpx2.Timeout(
                connect=connect_timeout_seconds,
                read=read_timeout_seconds,
                write=read_timeout_seconds,
                pool=connect_timeout_seconds,
            ),
            follow_redirects=False,
            trust_env=False,
        )
        self._calls_made: dict[str, int] = {}

    def __repr__(self) -> str:
        return f"OpenAIProvider(name={self.name!r}, model={self.model!r}, url={self.url!r})"

    def _fail(self, message: str, task_id: str) -> ProviderError:
        return ProviderError(f"model {self.name!r}: {message}", model=self.name, task_id=task_id)

    async def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, task_id: str
    ) -> ModelReply:
        """Ask the endpoint for the next turn.

        Args:
            messages: the conversation (OpenAI chat shape).
            tools: function tools to offer; none offered when empty.
            task_id: the task asking (request log, call numbering).

        Raises:
            ProviderError: the server cannot be reached, answers with a non-2xx status,
                times out, sends more than the size limit, or sends something other than a
                chat completion with at least one choice.
        """
        self.log.append(task_id=task_id, model=self.name, messages=messages)
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if tools:
            body["tools"] = tools
            body["tool_choice"] = "auto"
        try:
            with anyio.fail_after(self.total_timeout_seconds):
                data = await self._post(body, task_id)
        except TimeoutError as exc:
            raise self._fail(f"no complete answer within {self.total_timeout_seconds:g} seconds", task_id) from exc
        return self._reply(data, task_id)

    async def _post(self, body: dict[str, Any], task_id: str) -> bytes:
        try:
            async with self._client.stream("POST", self.url, json=body) as response:
                if not 200 <= response.status_code < 300:
                    status = _status_line(response)
                    hint = _HINTS.get(response.status_code)
                    if 300 <= response.status_code < 400:
                        hint = "redirects are not followed"
                    raise self._fail(
                        f"the model server at {self._where} answered {status}" + (f" ({hint})" if hint else ""),
                        task_id,
                    )
                declared = response.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > self.response_max_bytes:
                    raise self._too_large(task_id)
                chunks: list[bytes] = []
                size = 0
                async for chunk in response.aiter_bytes():
                    size += len(chunk)
                    if size > self.response_max_bytes:
                        raise self._too_large(task_id)
                    chunks.append(chunk)
                return b"".join(chunks)
        except httpx2.TimeoutException as exc:
            kind = type(exc).__name__.removesuffix("Timeout").lower() or "request"
            raise self._fail(f"the model server at {self._where} timed out ({kind} timeout)", task_id) from exc
        except httpx2.HTTPError as exc:
            raise self._fail(
                f"cannot talk to the model server at {self._where} ({type(exc).__name__})",
                task_id,
            ) from exc

    def _too_large(self, task_id: str) -> ProviderError:
        return self._fail(f"the answer is larger than {self.response_max_bytes} bytes", task_id)

    def _reply(self, data: bytes, task_id: str) -> ModelReply:
        try:
            payload = json.loads(data)
        except ValueError as exc:
            raise self._fail("the answer is not valid JSON", task_id) from exc
        document = json_object(payload)
        choices = json_array(document.get("choices")) if document is not None else None
        choice = json_object(choices[0]) if choices else None
        if choice is None:
            raise self._fail("the answer has no choices", task_id)
        message = json_object(choice.get("message"))
        if message is None:
            raise self._fail("the answer's first choice has no message", task_id)
        content = message.get("content")
        if (parts := json_array(content)) is not None:
            content = "".join(str(p.get("text", "")) for p in map(json_object, parts) if p is not None and "text" in p)
        elif content is not None and not isinstance(content, str):
            raise self._fail("the answer's message content is neither text nor null", task_id)
        reason = choice.get("finish_reason")
        return ModelReply(
            content=content,
            tool_calls=self._tool_calls(message.get("tool_calls"), task_id),
            finish_reason=reason if isinstance(reason, str) else None,
        )

    def _tool_calls(self, raw: object, task_id: str) -> tuple[ToolCall, ...]:
        if raw is None:
            return ()
        items = json_array(raw)
        if items is None:
            raise self._fail("the answer's tool_calls is not a list", task_id)
        calls: list[ToolCall] = []
        for item in map(json_object, items):
            function = json_object(item.get("function")) if item is not None else None
            name = function.get("name") if function is not None else None
            if not isinstance(name, str) or not name:
                raise self._fail("the answer holds a tool call without a function name", task_id)
            assert item is not None and function is not None
            given = function.get("arguments")
            arguments: dict[str, object] | str | None = json_object(given)
            if arguments is None:
                arguments = given if isinstance(given, str | None) else json.dumps(given)
            number = self._calls_made.get(task_id, 0) + 1
            self._calls_made[task_id] = number
            call_id = item.get("id")
            calls.append(
                make_tool_call(call_id if isinstance(call_id, str) and call_id else f"call_{number}", name, arguments)
            )
        return tuple(calls)

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        await self._client.aclose()
