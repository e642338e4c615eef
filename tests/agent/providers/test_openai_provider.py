"""The openai provider against a real OpenAI-compatible server on loopback (ENG-05)."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from provider_support import SCRIPTS, read_log

from shadowcode.agent.providers import ModelReply, ProviderError, ToolCall, open_provider
from shadowcode.agent.providers.openai_compatible import OpenAIProvider
from shadowcode.errors import ConfigError
from shadowcode.limits import MODEL_RESPONSE_MAX_BYTES
from shadowcode.profile import Profile
from shadowcode.settings import ModelSettings

pytestmark = pytest.mark.anyio

SCRIPT = str(SCRIPTS / "read_then_done.yaml")
KEY_NAME = "SHADOWCODE_TEST_MODEL_KEY"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]


def _settings(url: str, **extra: Any) -> ModelSettings:
    return ModelSettings(name="local", provider="openai", model="fixture-model", base_url=f"{url}/v1", **extra)


def _user(text: str) -> list[dict[str, Any]]:
    return [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": text}]


async def _ask(
    provider: Any, text: str = "Summarise the README", tools: list[dict[str, Any]] | None = None
) -> ModelReply:
    with anyio.fail_after(10):
        return await provider.complete(_user(text), TOOLS if tools is None else tools, task_id="task-1")


async def _refusal(provider: Any, text: str = "Summarise the README") -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        await _ask(provider, text)
    await provider.aclose()
    return caught.value


@pytest.mark.req("ENG-05")
async def test_a_tool_call_reply_then_a_final_reply_come_back_parsed(
    profile: Profile, server: Callable[..., Any]
) -> None:
    with server("--script", SCRIPT) as srv:
        provider = open_provider(_settings(srv.url), profile)
        assert isinstance(provider, OpenAIProvider)
        first = await _ask(provider)
        assert first == ModelReply(
            content="I'll read the README first.",
            tool_calls=(
                ToolCall(
                    id="call_1",
                    name="read_file",
                    arguments={"path": "README.md"},
                    raw_arguments='{"path": "README.md"}',
                ),
            ),
            finish_reason="tool_calls",
        )
        second = await _ask(provider, tools=[])
        assert second == ModelReply(
            content="The README describes a small notebook package.", tool_calls=(), finish_reason="stop"
        )
        await provider.aclose()
        seen = srv.requests()
    assert [(r["path"], r["model"], r["messages_count"]) for r in seen] == [
        ("/v1/chat/completions", "fixture-model", 2),
        ("/v1/chat/completions", "fixture-model", 2),
    ]
    # Tools and tool_choice are sent only when tools are offered.
    assert [(r["tools_count"], r["tool_choice"]) for r in seen] == [(1, "auto"), (0, None)]
    assert [r["authorization"] for r in seen] == ["none", "none"]
    logged = read_log(profile.root / "model-requests.jsonl")
    assert [(line["task_id"], line["model"]) for line in logged] == [("task-1", "local"), ("task-1", "local")]


@pytest.mark.req("ENG-05")
async def test_unparseable_tool_arguments_come_back_raw(profile: Profile, server: Callable[..., Any]) -> None:
    with server("--script", SCRIPT) as srv:
        provider = open_provider(_settings(srv.url), profile)
        reply = await _ask(provider, "send bad arguments")
        await provider.aclose()
    (call,) = reply.tool_calls
    assert (call.name, call.arguments, call.raw_arguments) == ("read_file", None, '{"path": ')


@pytest.mark.req("ENG-05")
async def test_an_http_500_is_a_clear_provider_error_without_the_body(
    profile: Profile, server: Callable[..., Any]
) -> None:
    with server("--fail-status", "500") as srv:
        error = await _refusal(open_provider(_settings(srv.url), profile))
    assert "HTTP 500 Internal Server Error" in error.message
    assert "BODY-TEXT-NOT-FOR-CALLERS" not in error.message
    assert "failing on purpose" not in error.message
    assert error.fields == {"model": "local", "task_id": "task-1"}


@pytest.mark.req("ENG-05")
async def test_a_scripted_error_turn_reaches_the_caller_as_a_status(
    profile: Profile, server: Callable[..., Any], write_script: Callable[..., Path]
) -> None:
    script = write_script({"tasks": [{"match": "", "turns": [{"error": "overloaded"}]}]})
    with server("--script", str(script)) as srv:
        error = await _refusal(open_provider(_settings(srv.url), profile))
    assert "HTTP 500" in error.message


@pytest.mark.req("ENG-05")
@pytest.mark.parametrize(("status", "hint"), [(401, "API key was refused"), (429, "rate limited"), (404, "base_url")])
async def test_common_http_errors_carry_a_hint(
    profile: Profile, server: Callable[..., Any], status: int, hint: str
) -> None:
    with server("--fail-status", str(status)) as srv:
        error = await _refusal(open_provider(_settings(srv.url), profile))
    assert f"HTTP {status}" in error.message
    assert hint in error.message


@pytest.mark.req("ENG-05")
async def test_a_redirect_is_not_followed(profile: Profile, server: Callable[..., Any]) -> None:
    with server("--fail-status", "307") as srv:
        error = await _refusal(open_provider(_settings(srv.url), profile))
        assert len(srv.requests()) == 1
    assert "HTTP 307" in error.message
    assert "redirects are not followed" in error.message


@pytest.mark.req("ENG-05")
async def test_a_hanging_server_hits_the_read_timeout(profile: Profile, server: Callable[..., Any]) -> None:
    with server("--hang") as srv:
        provider = OpenAIProvider(_settings(srv.url), profile, read_timeout_seconds=0.3)
        started = time.monotonic()
        error = await _refusal(provider)
    assert time.monotonic() - started < 5
    assert "timed out (read timeout)" in error.message


@pytest.mark.req("ENG-05")
async def test_a_hanging_server_hits_the_total_deadline(profile: Profile, server: Callable[..., Any]) -> None:
    with server("--hang") as srv:
        provider = OpenAIProvider(_settings(srv.url), profile, read_timeout_seconds=60, total_timeout_seconds=0.3)
        started = time.monotonic()
        error = await _refusal(provider)
    assert time.monotonic() - started < 5
    assert "no complete answer within 0.3 seconds" in error.message


@pytest.mark.req("ENG-05")
async def test_a_slow_answer_within_the_read_timeout_is_accepted(profile: Profile, server: Callable[..., Any]) -> None:
    with server("--script", SCRIPT) as srv:
        provider = OpenAIProvider(_settings(srv.url), profile, read_timeout_seconds=3)
        reply = await _ask(provider, "think slowly")
        await provider.aclose()
    assert reply.content == "Still thinking."


@pytest.mark.req("ENG-05")
async def test_an_unreachable_server_is_a_provider_error(profile: Profile) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    error = await _refusal(open_provider(_settings(f"http://127.0.0.1:{port}"), profile))
    assert "cannot talk to the model server" in error.message
    assert "ConnectError" in error.message


@pytest.mark.req("ENG-05")
@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("this is not json", "not valid JSON"),
        ('{"id": "x", "choices": []}', "has no choices"),
        ('{"id": "x"}', "has no choices"),
        ("[1, 2]", "has no choices"),
        ('{"choices": [{"index": 0}]}', "has no message"),
        ('{"choices": [{"message": {"content": 5}}]}', "neither text nor null"),
        ('{"choices": [{"message": {"tool_calls": [{"function": {}}]}}]}', "without a function name"),
    ],
)
async def test_an_answer_that_is_not_a_chat_completion_is_refused(
    profile: Profile, server: Callable[..., Any], body: str, problem: str
) -> None:
    with server("--raw-body", body) as srv:
        error = await _refusal(open_provider(_settings(srv.url), profile))
    assert problem in error.message
    assert body not in error.message


@pytest.mark.req("ENG-05")
async def test_tool_calls_without_ids_or_with_object_arguments_are_accepted(
    profile: Profile, server: Callable[..., Any]
) -> None:
    body = {
        "choices": [
            {
                "message": {
                    "content": None,
                    "tool_calls": [{"function": {"name": "read_file", "arguments": {"path": "a.txt"}}}],
                },
                "finish_reason": "tool_calls",
            }
        ]
    }
    with server("--raw-body", json.dumps(body)) as srv:
        provider = open_provider(_settings(srv.url), profile)
        first = await _ask(provider)
        second = await _ask(provider)
        await provider.aclose()
    assert first.tool_calls == (
        ToolCall(id="call_1", name="read_file", arguments={"path": "a.txt"}, raw_arguments='{"path": "a.txt"}'),
    )
    assert second.tool_calls[0].id == "call_2"
    assert first.content is None


@pytest.mark.req("ENG-05")
@pytest.mark.parametrize("framing", [(), ("--no-length",)], ids=["content-length", "read-to-close"])
async def test_an_answer_at_the_size_limit_is_accepted(
    profile: Profile, server: Callable[..., Any], framing: tuple[str, ...]
) -> None:
    with server("--script", SCRIPT, "--pad-to", str(MODEL_RESPONSE_MAX_BYTES), *framing) as srv:
        provider = open_provider(_settings(srv.url), profile)
        reply = await _ask(provider)
        await provider.aclose()
    assert reply.content == "I'll read the README first."


@pytest.mark.req("ENG-05")
@pytest.mark.parametrize("framing", [(), ("--no-length",)], ids=["content-length", "read-to-close"])
async def test_an_answer_one_byte_past_the_size_limit_is_refused(
    profile: Profile, server: Callable[..., Any], framing: tuple[str, ...]
) -> None:
    with server("--script", SCRIPT, "--pad-to", str(MODEL_RESPONSE_MAX_BYTES + 1), *framing) as srv:
        error = await _refusal(open_provider(_settings(srv.url), profile))
    assert f"larger than {MODEL_RESPONSE_MAX_BYTES} bytes" in error.message


@pytest.mark.req("ENG-05")
async def test_the_key_comes_from_the_environment(
    profile: Profile, server: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_NAME, "env-secret-123")
    with server("--script", SCRIPT, "--require-key", "env-secret-123") as srv:
        provider = open_provider(_settings(srv.url, api_key_env=KEY_NAME), profile)
        assert (await _ask(provider)).tool_calls
        await provider.aclose()
        assert [r["authorization"] for r in srv.requests()] == ["bearer"]
    assert "env-secret-123" not in repr(provider)
    assert "env-secret-123" not in (profile.root / "model-requests.jsonl").read_text(encoding="utf-8")


@pytest.mark.req("ENG-05")
async def test_the_key_comes_from_the_secret_store_when_the_environment_lacks_it(
    profile: Profile, server: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_NAME, raising=False)
    profile.root.mkdir(parents=True)
    profile.secrets_path.write_text(json.dumps({KEY_NAME: "stored-secret-456"}), encoding="utf-8")
    with server("--script", SCRIPT, "--require-key", "stored-secret-456") as srv:
        provider = open_provider(_settings(srv.url, api_key_env=KEY_NAME), profile)
        assert (await _ask(provider)).tool_calls
        await provider.aclose()


@pytest.mark.req("ENG-05")
async def test_the_environment_wins_over_the_secret_store(
    profile: Profile, server: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_NAME, "env-secret-123")
    profile.root.mkdir(parents=True)
    profile.secrets_path.write_text(json.dumps({KEY_NAME: "stored-secret-456"}), encoding="utf-8")
    with server("--script", SCRIPT, "--require-key", "stored-secret-456") as srv:
        error = await _refusal(open_provider(_settings(srv.url, api_key_env=KEY_NAME), profile))
    assert "HTTP 401" in error.message
    assert "secret" not in error.message.replace("secret store", "")


@pytest.mark.req("ENG-05")
def test_a_named_key_found_nowhere_is_a_config_error_naming_only_the_variable(
    profile: Profile, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_NAME, raising=False)
    with pytest.raises(ConfigError, match=KEY_NAME):
        open_provider(_settings("http://127.0.0.1:9", api_key_env=KEY_NAME), profile)
    profile.root.mkdir(parents=True)
    profile.secrets_path.write_text(json.dumps({"OTHER": "value-789"}), encoding="utf-8")
    with pytest.raises(ConfigError, match=KEY_NAME) as caught:
        open_provider(_settings("http://127.0.0.1:9", api_key_env=KEY_NAME), profile)
    assert "value-789" not in caught.value.message


@pytest.mark.req("ENG-05")
def test_a_secret_store_that_is_not_an_object_is_a_config_error(
    profile: Profile, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_NAME, raising=False)
    profile.root.mkdir(parents=True)
    profile.secrets_path.write_text('["hidden-value"]', encoding="utf-8")
    with pytest.raises(ConfigError, match="not an object of strings") as caught:
        open_provider(_settings("http://127.0.0.1:9", api_key_env=KEY_NAME), profile)
    assert "hidden-value" not in caught.value.message


@pytest.mark.req("ENG-05")
async def test_proxy_variables_are_ignored(
    profile: Profile, server: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy"):
        monkeypatch.setenv(name, dead)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    with server("--script", SCRIPT) as srv:
        provider = open_provider(_settings(srv.url), profile)
        reply = await _ask(provider)
        await provider.aclose()
        assert len(srv.requests()) == 1
    assert reply.tool_calls


@pytest.mark.req("ENG-05")
@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"model": "m"}, "no base_url"),
        ({"base_url": "http://127.0.0.1:9/v1"}, "names no model"),
        ({"model": "m", "base_url": "ftp://127.0.0.1/v1"}, "http or https"),
        ({"model": "m", "base_url": "not a url"}, "http or https"),
    ],
)
def test_an_openai_model_missing_its_endpoint_or_model_is_a_config_error(
    profile: Profile, fields: dict[str, str], problem: str
) -> None:
    with pytest.raises(ConfigError, match=problem):
        open_provider(ModelSettings(name="local", provider="openai", **fields), profile)
