"""Project identity and trust (ENG-02) and profile selection (ENG-01)."""

from __future__ import annotations

from pathlib import Path

import pytest

from shadowcode.engine import Engine, canonical_project
from shadowcode.enums import PermissionLevel
from shadowcode.errors import ConfigError
from shadowcode.limits import PROFILE_NAME_MAX_CHARS
from shadowcode.profile import Profile


def test_canonical_project_resolves_symlinks_eng02(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    assert canonical_project(link) == real.resolve()


def test_missing_workspace_is_refused_eng02(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        canonical_project(tmp_path / "nope")


def test_workspace_that_is_a_file_is_refused_eng02(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_text("x", encoding="utf-8")
    with pytest.raises(ConfigError, match="not a directory"):
        canonical_project(f)


def test_project_is_untrusted_until_trusted_then_untrusted_eng02(engine: Engine, project_dir: Path) -> None:
    assert engine.project(project_dir).trusted is False
    trusted = engine.projects.trust(project_dir.resolve(), PermissionLevel.ELEVATED)
    assert (trusted.trusted, trusted.level) == (True, PermissionLevel.ELEVATED)
    assert trusted.as_dict() == {"path": str(project_dir.resolve()), "trusted": True, "level": "elevated"}
    assert engine.projects.untrust(project_dir.resolve()).trusted is False


def test_trust_through_a_symlink_is_trust_of_the_target_eng02(engine: Engine, tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "alias").symlink_to(real)
    engine.projects.trust(canonical_project(tmp_path / "alias"), "workspace")
    assert engine.project(real).trusted


def test_profiles_are_isolated_eng01(home: Path, project_dir: Path) -> None:
    with Engine.open(Profile.select("one")) as one:
        one.projects.trust(project_dir.resolve(), "workspace")
    with Engine.open(Profile.select("two")) as two:
        assert two.project(project_dir).trusted is False
    assert (home / "profiles" / "one" / "shadowcode.db").exists()


@pytest.mark.parametrize("name", ["a/b", "../x", "", ".hidden", "a b", "a\\b"])
def test_profile_names_with_separators_or_odd_characters_are_refused_eng01(home: Path, name: str) -> None:
    with pytest.raises(ConfigError, match="invalid profile name"):
        Profile.select(name)


def test_profile_name_at_the_length_limit_is_accepted_and_one_past_refused_eng01(home: Path) -> None:
    assert Profile.select("p" * PROFILE_NAME_MAX_CHARS).name == "p" * PROFILE_NAME_MAX_CHARS
    with pytest.raises(ConfigError):
        Profile.select("p" * (PROFILE_NAME_MAX_CHARS + 1))


@pytest.mark.req("ENG-02")
def test_trust_at_an_unknown_level_is_refused_and_changes_nothing_eng02(engine: Engine, project_dir: Path) -> None:
    with pytest.raises(ConfigError, match="use one of read_only, workspace, elevated"):
        engine.projects.trust(project_dir.resolve(), "root")
    shown = engine.project(project_dir).as_dict()
    assert shown == {"path": str(project_dir.resolve()), "trusted": False, "level": None}
