"""Project identity and trust (ENG-02) and profile selection (ENG-01)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from shadowcode.engine.local import LocalEngine
from shadowcode.engine.state import EngineState
from shadowcode.enums import PermissionLevel
from shadowcode.errors import ConfigError
from shadowcode.limits import PROFILE_NAME_MAX_CHARS
from shadowcode.profile import Profile
from shadowcode.project.paths import _kernel_path, canonical_project
from shadowcode.settings import Settings


@pytest.mark.req("ENG-02")
def test_canonical_project_resolves_symlinks(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    assert canonical_project(link) == real.resolve()


@pytest.mark.req("ENG-02")
def test_missing_workspace_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        canonical_project(tmp_path / "nope")


@pytest.mark.req("ENG-02")
def test_workspace_that_is_a_file_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_text("x", encoding="utf-8")
    with pytest.raises(ConfigError, match="not a directory"):
        canonical_project(f)


@pytest.mark.req("ENG-02")
def test_project_is_untrusted_until_trusted_then_untrusted(state: EngineState, project_dir: Path) -> None:
    assert state.project_at(project_dir).trusted is False
    trusted = state.projects.trust(project_dir.resolve(), PermissionLevel.ELEVATED)
    assert (trusted.trusted, trusted.level) == (True, PermissionLevel.ELEVATED)
    assert trusted.as_dict() == {"path": str(project_dir.resolve()), "trusted": True, "level": "elevated"}
    assert state.projects.untrust(project_dir.resolve()).trusted is False


@pytest.mark.req("ENG-02")
def test_a_known_project_is_read_without_a_store_write(
    state: EngineState, project_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert state.project_at(project_dir).trusted is False  # first sight: recorded, untrusted
    assert state.store.projects.get(project_dir.resolve()) is not None
    state.projects.trust(project_dir.resolve(), PermissionLevel.WORKSPACE)

    def no_write(path: object) -> None:
        raise AssertionError(f"a known project was written again: {path}")

    # Every tool call asks for its project: a known one costs one read, no write transaction.
    monkeypatch.setattr(state.store.projects, "ensure", no_write)
    again = state.project_at(project_dir)
    assert again.trusted and again.level == PermissionLevel.WORKSPACE


@pytest.mark.req("ENG-02")
def test_trust_through_a_symlink_is_trust_of_the_target(state: EngineState, tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "alias").symlink_to(real)
    state.projects.trust(canonical_project(tmp_path / "alias"), "workspace")
    assert state.project_at(real).trusted


@pytest.mark.req("ENG-01")
def test_profiles_are_isolated(home: Path, project_dir: Path) -> None:
    one = LocalEngine(Profile.select("one"))
    one.state.projects.trust(project_dir.resolve(), "workspace")
    one.state.store.close()
    two = LocalEngine(Profile.select("two"))
    assert two.state.project_at(project_dir).trusted is False
    two.state.store.close()
    assert (home / "profiles" / "one" / "shadowcode.db").exists()


@pytest.mark.req("ENG-01")
@pytest.mark.parametrize("name", ["a/b", "../x", "", ".hidden", "a b", "a\\b"])
def test_profile_names_with_separators_or_odd_characters_are_refused(home: Path, name: str) -> None:
    with pytest.raises(ConfigError, match="invalid profile name"):
        Profile.select(name)


@pytest.mark.req("ENG-01")
def test_profile_name_at_the_length_limit_is_accepted_and_one_past_refused(home: Path) -> None:
    assert Profile.select("p" * PROFILE_NAME_MAX_CHARS).name == "p" * PROFILE_NAME_MAX_CHARS
    with pytest.raises(ConfigError):
        Profile.select("p" * (PROFILE_NAME_MAX_CHARS + 1))


@pytest.mark.req("ENG-02")
def test_trust_at_an_unknown_level_is_refused_and_changes_nothing(state: EngineState, project_dir: Path) -> None:
    with pytest.raises(ConfigError, match="use one of read_only, workspace, elevated"):
        state.projects.trust(project_dir.resolve(), "root")
    shown = state.project_at(project_dir).as_dict()
    assert shown == {"path": str(project_dir.resolve()), "trusted": False, "level": None}


@pytest.mark.req("ENG-02")
@pytest.mark.parametrize("kernel", [True, False], ids=["kernel", "component-by-component"])
def test_canonical_project_is_the_same_whether_the_kernel_names_the_folder_or_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kernel: bool
) -> None:
    real = tmp_path / "real" / "inner"
    real.mkdir(parents=True)
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    refused: list[str] = []
    if not kernel:  # no /proc, as in some containers: the long way gives the same answer
        readlink = os.readlink

        def no_proc(path: str) -> str:
            if str(path).startswith("/proc/"):
                refused.append(path)
                raise FileNotFoundError(path)
            return readlink(path)

        monkeypatch.setattr(os, "readlink", no_proc)
    monkeypatch.chdir(tmp_path)
    expected = real.resolve()
    for given in (tmp_path / "alias" / "inner", Path("alias/inner"), tmp_path / "alias" / "inner" / ".." / "inner"):
        assert canonical_project(given) == expected
    assert len(refused) == (0 if kernel else 3)
    if kernel:  # the kernel's answer, not the fallback's
        assert _kernel_path(str(tmp_path / "alias" / "inner")) == str(expected)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="not a directory"):
        canonical_project(fifo)  # never opened for reading, so never waits for a writer


@pytest.mark.req("ENG-05")
def test_settings_are_read_again_on_each_call_and_parsed_again_only_when_the_bytes_change(home: Path) -> None:
    profile = Profile.select("settings")
    profile.ensure()
    assert profile.settings() == Settings()
    doc = {"models": [{"name": "one", "provider": "scripted", "script": "/s/a"}], "default_model": "one"}
    profile.settings_path.write_text(json.dumps(doc), encoding="utf-8")
    first = profile.settings()
    assert first.default_model == "one" and profile.settings() is first
    # Same length, same second: only the bytes tell the two files apart.
    doc["models"][0]["script"] = "/s/b"  # type: ignore[index]
    profile.settings_path.write_text(json.dumps(doc), encoding="utf-8")
    assert profile.settings().models[0].script == "/s/b"
    profile.settings_path.write_bytes(b'{"default_model": "\xff"}')
    with pytest.raises(ConfigError, match="settings.json of profile 'settings' is invalid"):
        profile.settings()
    profile.settings_path.unlink()
    assert profile.settings() == Settings()


@pytest.mark.req("ENG-05")
def test_saved_settings_are_none_without_a_file_and_the_same_checks_with_one(home: Path) -> None:
    profile = Profile.select("saved")
    profile.ensure()
    assert profile.saved_settings() is None
    profile.settings_path.write_text(json.dumps({"default_model": "one"}), encoding="utf-8")
    saved = profile.saved_settings()
    assert saved is not None and saved.default_model == "one" and profile.settings() is saved
    profile.settings_path.write_text(json.dumps({"unknown": 1}), encoding="utf-8")
    with pytest.raises(ConfigError, match="settings.json of profile 'saved' is invalid"):
        profile.saved_settings()


@pytest.mark.req("ENG-05")
def test_a_settings_file_that_is_not_a_regular_file_is_a_clear_error_never_a_wait(home: Path) -> None:
    profile = Profile.select("odd")
    profile.ensure()
    os.mkfifo(profile.settings_path)  # no writer: a blocking open would wait for ever
    with pytest.raises(ConfigError, match="settings.json of profile 'odd' is invalid"):
        profile.settings()
    profile.settings_path.unlink()
    profile.settings_path.mkdir()
    with pytest.raises(ConfigError, match="settings.json of profile 'odd' cannot be read: Is a directory"):
        profile.settings()
