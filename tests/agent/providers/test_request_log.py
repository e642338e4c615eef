"""The model request log: one JSON line per request, atomic appends, bounded text (ENG-05)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from provider_support import read_log

from shadowcode.agent.providers import ProviderError
from shadowcode.agent.providers.request_log import RequestLog, shorten
from shadowcode.limits import MODEL_LOG_TEXT_MAX_CHARS
from shadowcode.profile import Profile
from shadowcode.settings import ModelSettings


@pytest.mark.req("ENG-05")
def test_the_log_defaults_to_the_profile_and_follows_request_log(profile: Profile, tmp_path: Path) -> None:
    plain = ModelSettings(name="m", provider="scripted", script="s.yaml")
    assert RequestLog.for_model(plain, profile).path == profile.root / "model-requests.jsonl"
    chosen = ModelSettings(name="m", provider="scripted", script="s.yaml", request_log=str(tmp_path / "probe.jsonl"))
    assert RequestLog.for_model(chosen, profile).path == tmp_path / "probe.jsonl"
    relative = ModelSettings(name="m", provider="scripted", script="s.yaml", request_log="logs/requests.jsonl")
    assert RequestLog.for_model(relative, profile).path == profile.root / "logs" / "requests.jsonl"


@pytest.mark.req("ENG-05")
def test_a_line_records_task_model_count_and_last_message(tmp_path: Path) -> None:
    log = RequestLog(tmp_path / "deep" / "requests.jsonl")
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function"}]},
        {"role": "tool", "tool_call_id": "c1", "content": "file text"},
    ]
    log.append(task_id="task-1", model="local", messages=messages)
    log.append(task_id="task-2", model="local", messages=[])
    first, second = read_log(log.path)
    assert first["task_id"] == "task-1"
    assert first["model"] == "local"
    assert first["messages_count"] == 3
    assert first["last_message"] == {"role": "tool", "tool_call_id": "c1", "content": "file text"}
    assert isinstance(first["at"], float)
    assert second["messages_count"] == 0
    assert second["last_message"] is None
    assert log.path.stat().st_mode & 0o777 == 0o600


@pytest.mark.req("ENG-05")
def test_text_at_the_log_limit_is_kept_whole() -> None:
    text = "a" * MODEL_LOG_TEXT_MAX_CHARS
    assert shorten({"content": text}) == {"content": text}


@pytest.mark.req("ENG-05")
def test_text_one_past_the_log_limit_is_cut_and_marked(tmp_path: Path) -> None:
    text = "é" * (MODEL_LOG_TEXT_MAX_CHARS + 1)
    assert shorten(text) == "é" * MODEL_LOG_TEXT_MAX_CHARS + "…[+1 chars]"
    log = RequestLog(tmp_path / "r.jsonl")
    log.append(task_id="t", model="m", messages=[{"role": "tool", "content": "x" * 1_000_000}])
    (line,) = read_log(log.path)
    assert len(line["last_message"]["content"]) < MODEL_LOG_TEXT_MAX_CHARS + 50
    assert log.path.stat().st_size < 3 * MODEL_LOG_TEXT_MAX_CHARS


@pytest.mark.req("ENG-05")
def test_concurrent_appends_never_interleave_lines(tmp_path: Path) -> None:
    log = RequestLog(tmp_path / "r.jsonl")
    big = [{"role": "user", "content": "y" * MODEL_LOG_TEXT_MAX_CHARS}]

    def worker(n: int) -> None:
        for i in range(50):
            log.append(task_id=f"w{n}-{i}", model="m", messages=big)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    lines = read_log(log.path)
    assert len(lines) == 400
    assert len({line["task_id"] for line in lines}) == 400


@pytest.mark.req("ENG-05")
def test_an_unwritable_log_fails_the_request_instead_of_skipping_the_count(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    log = RequestLog(blocker / "requests.jsonl")
    with pytest.raises(ProviderError, match="cannot write the model request log"):
        log.append(task_id="t", model="m", messages=[])
