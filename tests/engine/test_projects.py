"""Project identity and trust (ENG-02) and profile selection (ENG-01)."""

from __future__ import annotations

from pathlib import Path

import pytest

from shadowcode.engine.local import LocalEngine
from shadowcode.engine.state import EngineState
from shadowcode.enums import PermissionLevel
from shadowcode.errors import ConfigError
from shadowcode.limits import PROFILE_NAME_MAX_CHARS
from shadowcode.profile import Profile
from shadowcode.project.paths import canonical_project


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
