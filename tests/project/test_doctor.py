"""Static diagnostics behind shadow_doctor: report, never repair (SRV-19)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from shadowcode.limits import DOCTOR_LARGE_FILE_BYTES
from shadowcode.project.doctor import CHECK_NAMES, project_checks
from tests.support.deadline import at_once


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = (tmp_path / "p").resolve()
    path.mkdir()
    return path


def _by_name(root: Path) -> dict[str, dict[str, str]]:
    return {c["name"]: c for c in project_checks(root)}


def _snapshot(root: Path) -> list[tuple[str, bool, int]]:
    return [(str(p.relative_to(root)), p.is_dir(), p.lstat().st_size) for p in sorted(root.rglob("*"))]


@pytest.mark.req("SRV-19")
def test_checks_come_in_a_fixed_order_with_known_statuses(root: Path) -> None:
    checks = project_checks(root)
    assert [c["name"] for c in checks] == list(CHECK_NAMES)
    assert all(c["status"] in {"ok", "warn", "fail"} and c["detail"] for c in checks)
    assert set(checks[0]) == {"name", "status", "detail"}


@pytest.mark.req("SRV-19")
def test_empty_project_warns_about_git_manifests_and_tests(root: Path) -> None:
    checks = _by_name(root)
    assert checks["readable"]["status"] == "ok"
    assert checks["git"]["status"] == "warn"
    assert checks["manifests"]["status"] == "warn"
    assert checks["test_commands"]["status"] == "warn"
    assert checks["large_files"]["status"] == "ok"
    assert checks["shadowcode_folder"]["status"] == "ok"


@pytest.mark.req("SRV-19")
def test_git_repository_manifests_and_one_test_command_are_ok(root: Path) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=30)
    (root / "pyproject.toml").write_text("[tool.pytest.ini_options]\n", encoding="utf-8")
    checks = _by_name(root)
    assert checks["git"]["status"] == "ok"
    assert checks["manifests"] == {"name": "manifests", "status": "ok", "detail": "found: pyproject.toml"}
    assert checks["test_commands"]["status"] == "ok"
    assert "python3 -m pytest" in checks["test_commands"]["detail"]


@pytest.mark.req("SRV-19")
def test_several_test_commands_are_a_warning_naming_each(root: Path) -> None:
    (root / "Cargo.toml").write_text("[package]\n", encoding="utf-8")
    (root / "go.mod").write_text("module x\n", encoding="utf-8")
    check = _by_name(root)["test_commands"]
    assert check["status"] == "warn"
    assert "cargo test" in check["detail"] and "go test ./..." in check["detail"]


@pytest.mark.req("SRV-19")
def test_file_at_the_large_file_limit_is_fine_and_one_byte_more_is_reported(root: Path) -> None:
    big = root / "data.bin"
    with big.open("wb") as handle:
        handle.truncate(DOCTOR_LARGE_FILE_BYTES)
    assert _by_name(root)["large_files"]["status"] == "ok"
    with big.open("r+b") as handle:
        handle.truncate(DOCTOR_LARGE_FILE_BYTES + 1)
    check = _by_name(root)["large_files"]
    assert check["status"] == "warn"
    assert f"data.bin ({DOCTOR_LARGE_FILE_BYTES + 1} bytes)" in check["detail"]


@pytest.mark.req("SRV-19")
def test_shadowcode_folder_with_definitions_is_described(root: Path) -> None:
    (root / ".shadowcode" / "mcp").mkdir(parents=True)
    (root / ".shadowcode" / "mcp" / "a.yaml").touch()
    (root / ".shadowcode" / "mcp" / "b.json").touch()
    (root / ".shadowcode" / "mcp" / "readme.txt").touch()
    check = _by_name(root)["shadowcode_folder"]
    assert check["status"] == "ok"
    assert "2 MCP definition file(s)" in check["detail"]


@pytest.mark.req("SRV-19")
def test_shadowcode_file_instead_of_folder_fails_and_is_left_alone(root: Path) -> None:
    (root / ".shadowcode").write_text("oops", encoding="utf-8")
    before = _snapshot(root)
    assert _by_name(root)["shadowcode_folder"]["status"] == "fail"
    assert _snapshot(root) == before
    assert (root / ".shadowcode").read_text(encoding="utf-8") == "oops"


@pytest.mark.req("SRV-19")
def test_shadowcode_link_leading_outside_fails(root: Path, tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (root / ".shadowcode").symlink_to(tmp_path / "elsewhere")
    check = _by_name(root)["shadowcode_folder"]
    assert check["status"] == "fail"
    assert "outside" in check["detail"]


@pytest.mark.req("SRV-19")
def test_missing_project_folder_fails_only_the_readable_check(tmp_path: Path) -> None:
    assert project_checks(tmp_path / "absent") == [
        {"name": "readable", "status": "fail", "detail": "the project path is not a folder"}
    ]


@pytest.mark.req("SRV-19")
@pytest.mark.skipif(os.geteuid() == 0, reason="permission bits do not bind the superuser")
def test_read_only_project_is_a_writable_warning(root: Path) -> None:
    root.chmod(0o555)
    try:
        assert _by_name(root)["writable"]["status"] == "warn"
    finally:
        root.chmod(0o755)


@pytest.mark.req("SRV-19")
def test_checks_change_nothing_in_the_project(root: Path) -> None:
    (root / "src").mkdir()
    (root / "src" / "a.py").write_text("x = 1\n", encoding="utf-8")
    (root / "Makefile").write_text("test:\n\ttrue\n", encoding="utf-8")
    before = _snapshot(root)
    project_checks(root)
    assert _snapshot(root) == before


@pytest.mark.req("SRV-19")
def test_a_fifo_named_pyproject_toml_does_not_hang_the_diagnostics(root: Path) -> None:
    os.mkfifo(root / "pyproject.toml")
    checks = at_once(lambda: project_checks(root), fifos=[root / "pyproject.toml"])
    assert [c["name"] for c in checks] == list(CHECK_NAMES)


@pytest.mark.req("SRV-19", "SRV-08")
def test_a_profile_root_at_the_project_shadowcode_folder_is_not_inspected(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (root / ".shadowcode" / "profiles").mkdir(parents=True)
    monkeypatch.setenv("SHADOWCODE_HOME", str(root / ".shadowcode"))
    check = _by_name(root)["shadowcode_folder"]
    assert check["status"] == "ok" and "profile folder" in check["detail"]
