"""Profile paths as the attached fast path computes them, without pathlib (ENG-01, issue 7).

The engine holds ``Path`` objects (:class:`shadowcode.profile.Profile`); the fast path of
``mcp serve`` computes the same socket path as text with ``os`` alone. Both must name the
same socket, or a relay would miss a running engine.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path, PurePosixPath

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shadowcode.limits import PROFILE_NAME_MAX_CHARS
from shadowcode.profile import Profile
from shadowcode.profile_paths import control_socket_for, path_text, valid_profile_name

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.req("ENG-01")
@given(st.text(alphabet="/.ab", max_size=12))
def test_path_text_spells_paths_as_pathlib_does(path: str) -> None:
    assert path_text(path) == str(PurePosixPath(path))


@pytest.mark.req("ENG-01")
@pytest.mark.parametrize("spelling", ["{h}", "{h}/", "{h}//", "{h}/./", "/{h}", "{h}/././"])
def test_fast_path_and_profile_name_the_same_socket(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spelling: str
) -> None:
    monkeypatch.setenv("SHADOWCODE_HOME", spelling.format(h=tmp_path / "home"))
    for name in (None, "work"):
        assert control_socket_for(name) == str(Profile.select(name).control_socket_path)


@pytest.mark.req("ENG-01")
def test_an_over_long_home_gets_the_same_short_socket_on_both_sides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHADOWCODE_HOME", str(tmp_path / ("deep-" * 30)))
    fast = control_socket_for(None)
    assert fast is not None and len(fast.encode()) < 100
    assert fast == str(Profile.select(None).control_socket_path)
    assert fast.endswith(".sock") and "control.sock" not in fast


@pytest.mark.req("ENG-01")
def test_profile_names_at_the_limit_pass_and_one_past_or_non_ascii_fail() -> None:
    assert valid_profile_name("a" * PROFILE_NAME_MAX_CHARS)
    assert not valid_profile_name("a" * (PROFILE_NAME_MAX_CHARS + 1))
    assert valid_profile_name("work.2_b-c")
    for bad in ("", ".hidden", "-x", "a/b", "é", "١", "a b", "a\n"):
        assert not valid_profile_name(bad)
        assert control_socket_for(bad) is None


@pytest.mark.req("ENG-01")
def test_the_fast_path_imports_no_dependency_and_no_heavy_stdlib_module() -> None:
    probe = (
        "import json, sys\n"
        "before = set(sys.modules)\n"
        "import shadowcode.__main__ as m, shadowcode.mcp.server.relay, shadowcode.mcp.server.front\n"
        "from shadowcode.mcp.server.discovery import load_manifest\n"
        "assert load_manifest() is not None\n"
        "assert m.attached_fast_path(['mcp', 'serve']) is None\n"
        "print(json.dumps(sorted(set(sys.modules) - before)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-S", "-c", probe],
        cwd=REPO,
        env={"SHADOWCODE_HOME": str(REPO / "no-such-home"), "PATH": "/usr/bin:/bin", "SHADOWCODE_STDIO_FRONT": "0"},
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stdout))
    heavy = {"typing", "pathlib", "hashlib", "tempfile", "pydantic", "mcp", "anyio", "shadowcode.profile"}
    assert "shadowcode.profile_paths" in loaded
    assert loaded & heavy == set()
