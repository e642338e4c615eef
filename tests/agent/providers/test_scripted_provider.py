"""The scripted provider replays a model script per task, deterministically (ENG-05)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from provider_support import SCRIPTS, read_log

from shadowcode.agent.providers import ModelReply, ProviderError, ToolCall, open_provider
from shadowcode.agent.providers.scripted import ScriptedProvider
from shadowcode.errors import ConfigError
from shadowcode.profile import Profile
from shadowcode.settings import ModelSettings

pytestmark = pytest.mark.anyio

TWO_TASKS = {
    "tasks": [
        {
            "match": "read",
            "turns": [
                {"content": "reading", "tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}}]},
                {"content": "read done"},
            ],
        },
        {"match": "write", "turns": [{"content": "writing"}]},
        {"match": "", "turns": [{"content": "fallback"}]},
    ]
}


def _user(text: str) -> list[dict[str, Any]]:
    return [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": text}]


def _open(profile: Profile, script: Path, name: str = "scripted-model") -> ScriptedProvider:
    provider = open_provider(ModelSettings(name=name, provider="scripted", script=str(script)), profile)
    assert isinstance(provider, ScriptedProvider)
    return provider


async def _ask(provider: ScriptedProvider, text: str, task_id: str) -> ModelReply:
    with anyio.fail_after(5):
        return await provider.complete(_user(text), [], task_id=task_id)


@pytest.mark.req("ENG-05")
async def test_each_task_gets_its_entry_turns_in_order(profile: Profile, write_script: Callable[..., Path]) -> None:
    provider = _open(profile, write_script(TWO_TASKS))
    first = await _ask(provider, "please read the file", "t1")
    assert first == ModelReply(
        content="reading",
        tool_calls=(
            ToolCall(
                id="call_1", name="read_file", arguments={"path": "README.md"}, raw_arguments='{"path": "README.md"}'
            ),
        ),
        finish_reason="tool_calls",
    )
    second = await _ask(provider, "please read the file", "t1")
    assert second == ModelReply(content="read done", tool_calls=(), finish_reason="stop")
    assert provider.name == "scripted-model"
    await provider.aclose()


@pytest.mark.req("ENG-05")
async def test_tasks_replay_independently_of_each_other(profile: Profile, write_script: Callable[..., Path]) -> None:
    provider = _open(profile, write_script(TWO_TASKS))
    assert (await _ask(provider, "read it", "a")).content == "reading"
    assert (await _ask(provider, "read it", "b")).content == "reading"
    assert (await _ask(provider, "read it", "a")).content == "read done"
    assert (await _ask(provider, "read it", "b")).content == "read done"


@pytest.mark.req("ENG-05")
async def test_first_matching_entry_wins_and_later_messages_do_not_change_it(
    profile: Profile, write_script: Callable[..., Path]
) -> None:
    provider = _open(profile, write_script(TWO_TASKS))
    # "read" comes before "write" in the script, so a message holding both picks "read".
    assert (await _ask(provider, "read, then write", "both")).content == "reading"
    assert (await _ask(provider, "write something", "w")).content == "writing"
    assert (await _ask(provider, "something else", "other")).content == "fallback"
    # The entry is chosen by the first user message, not by later turns of the conversation.
    later = _user("read it") + [{"role": "assistant", "content": "reading"}, {"role": "user", "content": "now write"}]
    with anyio.fail_after(5):
        assert (await provider.complete(later, [], task_id="both")).content == "read done"


@pytest.mark.req("ENG-05")
async def test_a_task_matching_no_entry_fails_clearly(profile: Profile, write_script: Callable[..., Path]) -> None:
    provider = _open(profile, write_script({"tasks": [{"match": "^only this$", "turns": [{"content": "x"}]}]}))
    with pytest.raises(ProviderError, match="no script entry matches"):
        await _ask(provider, "something else", "t")


@pytest.mark.req("ENG-05")
async def test_a_task_past_its_last_turn_gets_a_provider_error(
    profile: Profile, write_script: Callable[..., Path]
) -> None:
    provider = _open(profile, write_script(TWO_TASKS))
    await _ask(provider, "write", "t")
    with pytest.raises(ProviderError, match="script has no more turns") as caught:
        await _ask(provider, "write", "t")
    assert caught.value.fields["task_id"] == "t"
    assert caught.value.fields["model"] == "scripted-model"
    # Still exhausted on the next request: it does not wrap around.
    with pytest.raises(ProviderError, match="script has no more turns"):
        await _ask(provider, "write", "t")


@pytest.mark.req("ENG-05")
async def test_a_busy_turn_answers_only_after_its_delay(profile: Profile, write_script: Callable[..., Path]) -> None:
    provider = _open(
        profile, write_script({"tasks": [{"match": "", "turns": [{"content": "late", "delay_seconds": 0.3}]}]})
    )
    started = time.monotonic()
    reply = await _ask(provider, "go", "t")
    assert reply.content == "late"
    assert time.monotonic() - started >= 0.3


@pytest.mark.req("ENG-05")
async def test_a_busy_turn_can_be_cancelled_at_once(profile: Profile, write_script: Callable[..., Path]) -> None:
    provider = _open(
        profile, write_script({"tasks": [{"match": "", "turns": [{"content": "x", "delay_seconds": 600}]}]})
    )
    started = time.monotonic()
    with anyio.move_on_after(0.2) as scope:
        await provider.complete(_user("go"), [], task_id="t")
    assert scope.cancelled_caught
    assert time.monotonic() - started < 5


@pytest.mark.req("ENG-05")
async def test_an_error_turn_fails_the_request_with_its_message(
    profile: Profile, write_script: Callable[..., Path]
) -> None:
    provider = _open(profile, write_script({"tasks": [{"match": "", "turns": [{"error": "model overloaded"}]}]}))
    with pytest.raises(ProviderError, match="model overloaded"):
        await _ask(provider, "go", "t")


@pytest.mark.req("ENG-05")
async def test_call_ids_count_across_a_task_and_script_ids_are_kept(profile: Profile) -> None:
    provider = _open(profile, SCRIPTS / "read_then_done.yaml")
    first = await _ask(provider, "Fix the failing test please", "t")
    assert [c.id for c in first.tool_calls] == ["call_tests", "call_2"]
    second = await _ask(provider, "Fix the failing test please", "t")
    assert [c.id for c in second.tool_calls] == ["call_3"]
    assert second.tool_calls[0].arguments == {}
    assert (await _ask(provider, "Fix the failing test please", "t")).content == "All tests pass now."


@pytest.mark.req("ENG-05")
async def test_unparseable_scripted_arguments_come_back_raw_with_no_object(profile: Profile) -> None:
    provider = _open(profile, SCRIPTS / "read_then_done.yaml")
    reply = await _ask(provider, "send bad arguments", "t")
    (call,) = reply.tool_calls
    assert call.arguments is None
    assert call.raw_arguments == '{"path": '


@pytest.mark.req("ENG-05")
async def test_a_json_script_replays_like_yaml(profile: Profile) -> None:
    provider = _open(profile, SCRIPTS / "edit_file.json")
    reply = await _ask(provider, "Add a CHANGELOG", "t")
    assert reply.tool_calls[0].name == "write_file"
    assert reply.tool_calls[0].arguments == {"path": "CHANGELOG.md", "content": "# Changelog\n\n## Unreleased\n"}


@pytest.mark.req("ENG-05")
async def test_user_content_given_as_parts_is_matched_on_its_text(
    profile: Profile, write_script: Callable[..., Path]
) -> None:
    provider = _open(profile, write_script(TWO_TASKS))
    messages = [{"role": "user", "content": [{"type": "text", "text": "please "}, {"type": "text", "text": "write"}]}]
    with anyio.fail_after(5):
        assert (await provider.complete(messages, [], task_id="t")).content == "writing"


@pytest.mark.req("ENG-05")
async def test_every_request_is_logged_even_a_failing_one(profile: Profile, write_script: Callable[..., Path]) -> None:
    provider = _open(profile, write_script(TWO_TASKS))
    await _ask(provider, "write", "t")
    with pytest.raises(ProviderError):
        await _ask(provider, "write", "t")
    lines = read_log(profile.root / "model-requests.jsonl")
    assert [(line["task_id"], line["model"], line["messages_count"]) for line in lines] == [
        ("t", "scripted-model", 2),
        ("t", "scripted-model", 2),
    ]
    assert lines[0]["last_message"] == {"role": "user", "content": "write"}
    assert set(lines[0]) == {"at", "task_id", "model", "messages_count", "last_message"}
    assert abs(lines[0]["at"] - time.time()) < 60


@pytest.mark.req("ENG-05")
async def test_a_relative_script_path_is_taken_from_the_profile_root(profile: Profile) -> None:
    profile.root.mkdir(parents=True)
    (profile.root / "model.yaml").write_text('tasks: [{match: "", turns: [{content: hi}]}]\n', encoding="utf-8")
    provider = _open(profile, Path("model.yaml"))
    assert (await _ask(provider, "x", "t")).content == "hi"


@pytest.mark.req("ENG-05")
def test_a_scripted_model_without_a_script_is_a_config_error(profile: Profile) -> None:
    with pytest.raises(ConfigError, match="names no script"):
        open_provider(ModelSettings(name="m", provider="scripted"), profile)


@pytest.mark.req("ENG-05")
def test_a_missing_script_file_is_a_config_error_naming_it(profile: Profile, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.yaml"
    with pytest.raises(ConfigError, match="nowhere.yaml"):
        open_provider(ModelSettings(name="m", provider="scripted", script=str(missing)), profile)


@pytest.mark.req("ENG-05")
def test_an_unknown_provider_is_a_config_error(profile: Profile) -> None:
    settings = ModelSettings.model_construct(name="m", provider="carrier-pigeon")
    with pytest.raises(ConfigError, match="unknown provider 'carrier-pigeon'"):
        open_provider(settings, profile)
