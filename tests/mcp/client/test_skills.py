"""Skills served over MCP: which listed entries are kept, and reads checked against their entry.

Covers CW-09.
"""

from __future__ import annotations

import base64
import hashlib
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from shadowcode.engine.childenv import child_env
from shadowcode.limits import MCP_SKILL_BYTES_MAX, MCP_SKILL_FILES_MAX
from shadowcode.mcp.client.connection import Connection
from shadowcode.mcp.client.reads import read_resource
from shadowcode.mcp.client.skills import SkillRefused, check_entries, verify_contents
from tests.support.mcp_client import PY, PYTHON_SDK_SERVER, REPO

pytestmark = [pytest.mark.req("CW-09")]

SKILLS_SERVER = REPO / "conformance/shadowcode_conformance/fixtures" / "servers" / "skills_server.py"
SKILL_MD = b"---\nname: notes\ndescription: Keep notes tidy\n---\n\n# Notes\n"
GUIDE = b"# Guide\n"


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _file(uri: str, data: bytes) -> dict[str, Any]:
    return {"uri": uri, "digest": _digest(data), "size": len(data)}


def _entry(**over: Any) -> dict[str, Any]:
    entry = {
        "uri": "skill://team/notes/SKILL.md",
        "frontmatter": {"name": "notes", "description": "Keep notes tidy"},
        "resources": [
            _file("skill://team/notes/SKILL.md", SKILL_MD),
            _file("skill://team/notes/references/GUIDE.md", GUIDE),
        ],
    }
    return entry | over


LISTED = {"skill://team/notes/SKILL.md"}


def _reason(entry: dict[str, Any], listed: set[str] = LISTED) -> str | None:
    kept, skipped = check_entries([entry], listed)
    assert len(kept) + len(skipped) == 1
    return skipped[0].reason if skipped else None


def test_a_well_formed_entry_is_kept_with_its_files_skill_md_first() -> None:
    kept, skipped = check_entries([_entry(resources=list(reversed(_entry()["resources"])))], LISTED)
    assert skipped == []
    assert kept[0].name == "notes" and kept[0].description == "Keep notes tidy"
    assert [f.uri for f in kept[0].files] == ["skill://team/notes/SKILL.md", "skill://team/notes/references/GUIDE.md"]


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        (_entry(uri=None), "no uri"),
        (_entry(uri="skill://team/notes/README.md"), "does not name a SKILL.md"),
        (_entry(uri="skill://team/../notes/SKILL.md"), "'..' segment"),
        (_entry(frontmatter={"name": "notes"}), "no description"),
        (_entry(frontmatter={"description": "x"}), "no name"),
        (_entry(frontmatter="name: notes"), "no frontmatter object"),
        (_entry(frontmatter={"name": "other", "description": "x"}), "not its frontmatter name"),
        (_entry(resources="dynamic"), '"dynamic"'),
        (_entry(resources=None), "neither a list"),
        (_entry(resources=[_file("skill://team/notes/references/GUIDE.md", GUIDE)]), "do not list its SKILL.md"),
    ],
)
def test_an_entry_without_a_listed_skill_md_uri_frontmatter_or_static_files_is_skipped(
    entry: dict[str, Any], reason: str
) -> None:
    got = _reason(entry)
    assert got is not None and reason in got


@pytest.mark.parametrize(
    "path",
    [
        "../secret.md",
        "references/../../secret.md",
        "./GUIDE.md",
        "references//GUIDE.md",
        "references/%2e%2e/GUIDE.md",
        "references/GUIDE.md?x=1",
        "references/GUIDE.md#top",
        "references\\GUIDE.md",
    ],
)
def test_a_file_path_with_dot_segments_or_percent_query_fragment_is_skipped(path: str) -> None:
    resources = [*_entry()["resources"], _file(f"skill://team/notes/{path}", GUIDE)]
    got = _reason(_entry(resources=resources))
    assert got is not None and repr(f"skill://team/notes/{path}") in got


def test_a_file_outside_the_skill_root_is_skipped() -> None:
    resources = [*_entry()["resources"], _file("skill://team/notesx/GUIDE.md", GUIDE)]
    assert "not beneath the skill's root" in (_reason(_entry(resources=resources)) or "")


@pytest.mark.parametrize(
    "digest",
    ["sha256:" + "A" * 64, "sha256:" + "a" * 63, "sha512:" + "a" * 64, "a" * 64, "sha256:" + "a" * 64 + "\n", None],
)
def test_a_digest_other_than_sha256_and_64_lowercase_hex_is_skipped(digest: str | None) -> None:
    guide = {"uri": "skill://team/notes/references/GUIDE.md", "digest": digest, "size": 8}
    resources = [_entry()["resources"][0], guide]
    assert "digest" in (_reason(_entry(resources=resources)) or "")


@pytest.mark.parametrize("size", [-1, 1.5, "8", True, None])
def test_a_size_that_is_not_whole_bytes_is_skipped(size: Any) -> None:
    resources = [_entry()["resources"][0], {"uri": "skill://team/notes/a.md", "digest": _digest(b""), "size": size}]
    assert "size" in (_reason(_entry(resources=resources)) or "")


def test_a_file_listed_twice_or_a_skill_md_missing_from_the_resources_is_skipped() -> None:
    twice = [*_entry()["resources"], _entry()["resources"][1]]
    assert "twice" in (_reason(_entry(resources=twice)) or "")
    assert "not among the server's resources" in (_reason(_entry(), set()) or "")


@pytest.mark.parametrize("count", [MCP_SKILL_FILES_MAX, MCP_SKILL_FILES_MAX + 1])
def test_a_skill_is_kept_with_512_files_and_skipped_with_513(count: int) -> None:
    files = [_entry()["resources"][0]] + [_file(f"skill://team/notes/p/{i}.md", b"") for i in range(count - 1)]
    reason = _reason(_entry(resources=files))
    if count == MCP_SKILL_FILES_MAX:
        assert reason is None
    else:
        assert reason == f"it lists {count} files; at most {MCP_SKILL_FILES_MAX} are kept"


@pytest.mark.parametrize("total", [MCP_SKILL_BYTES_MAX, MCP_SKILL_BYTES_MAX + 1])
def test_a_skill_is_kept_at_16_mib_and_skipped_one_byte_past(total: int) -> None:
    first = _entry()["resources"][0]
    big = {"uri": "skill://team/notes/big.bin", "digest": _digest(b""), "size": total - first["size"]}
    reason = _reason(_entry(resources=[first, big]))
    if total == MCP_SKILL_BYTES_MAX:
        assert reason is None
    else:
        assert reason == f"its files add up to {total} bytes; at most {MCP_SKILL_BYTES_MAX} are kept"


def test_one_bad_entry_does_not_cost_the_others() -> None:
    kept, skipped = check_entries([_entry(resources="dynamic"), _entry()], LISTED)
    assert [k.uri for k in kept] == ["skill://team/notes/SKILL.md"]
    assert [s.uri for s in skipped] == ["skill://team/notes/SKILL.md"]


def _kept() -> Any:
    kept, _ = check_entries([_entry()], LISTED)
    return kept[0]


def test_a_read_with_the_exact_uri_size_and_digest_is_verified_as_text_or_blob() -> None:
    skill = _kept()
    guide = skill.files[1]
    assert verify_contents(skill, guide, [{"uri": guide.uri, "text": GUIDE.decode()}], server="s") == GUIDE
    blob = base64.b64encode(GUIDE).decode()
    assert verify_contents(skill, guide, [{"uri": guide.uri, "blob": blob}], server="s") == GUIDE
    md = skill.files[0]
    assert verify_contents(skill, md, [{"uri": md.uri, "text": SKILL_MD.decode()}], server="s") == SKILL_MD


@pytest.mark.parametrize(
    ("contents", "why"),
    [
        ([], "0 content items"),
        ([{"uri": "skill://team/notes/references/GUIDE.md", "text": "# Guide\n"}] * 2, "2 content items"),
        ([{"uri": "skill://team/notes/SKILL.md", "text": "# Guide\n"}], "another URI"),
        ([{"uri": "skill://team/notes/references/GUIDE.md", "text": "# Guide!\n"}], "9 bytes, the listing says 8"),
        ([{"uri": "skill://team/notes/references/GUIDE.md", "text": "# GUIDE\n"}], "digest is not the listed one"),
        ([{"uri": "skill://team/notes/references/GUIDE.md", "blob": "not base64!"}], "not base64"),
        ([{"uri": "skill://team/notes/references/GUIDE.md"}], "neither text nor blob"),
    ],
)
def test_a_read_that_differs_from_its_entry_is_refused(contents: list[dict[str, Any]], why: str) -> None:
    skill = _kept()
    with pytest.raises(SkillRefused, match=why) as caught:
        verify_contents(skill, skill.files[1], contents, server="config:s")
    assert "nothing of it was loaded" in caught.value.message


def test_a_skill_md_whose_frontmatter_differs_from_the_entry_is_refused() -> None:
    other = b"---\nname: notes\ndescription: Do something else\n---\n\n# Notes\n"
    entry = _entry(resources=[_file("skill://team/notes/SKILL.md", other)])
    kept, _ = check_entries([entry], LISTED)
    with pytest.raises(SkillRefused, match="frontmatter differs"):
        verify_contents(kept[0], kept[0].files[0], [{"uri": kept[0].uri, "text": other.decode()}], server="s")


# -- against the fixture server --------------------------------------------------------------


@asynccontextmanager
async def connected(argv: list[str]) -> AsyncIterator[Connection]:
    with anyio.fail_after(90):
        async with anyio.create_task_group() as tg:
            conn = Connection(server_id="test:skills", argv=argv, cwd=REPO, env=child_env(), timeout_seconds=30)
            await conn.start(tg)
            try:
                yield conn
            finally:
                conn.close()
                await conn.wait_closed()


def _server(variant: str, log: Path) -> list[str]:
    return [PY, str(SKILLS_SERVER), "--variant", variant, "--log", str(log)]


needs_linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="starts real servers")


@needs_linux
@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_fixture_skills_are_listed_without_reading_a_file_and_read_verified(tmp_path: Path) -> None:
    log = tmp_path / "reads.log"
    async with connected(_server("good", log)) as conn:
        kept, skipped = await conn.skills()
        assert [k.uri for k in kept] == ["skill://pdf-processing/SKILL.md", "skill://acme/billing/refunds/SKILL.md"]
        assert [(s.uri, "dynamic" in s.reason) for s in skipped] == [("skill://reports/daily/SKILL.md", True)]
        assert not log.exists(), "listing read a skill file"
        pdf = kept[0]
        for listed in pdf.files:

            def check(contents: list[dict[str, Any]], listed: Any = listed) -> None:
                verify_contents(pdf, listed, contents, server="test:skills")

            await read_resource(conn, listed.uri, check=check)
        assert log.read_text(encoding="utf-8").split() == [f.uri for f in pdf.files]


@needs_linux
@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_tampered_fixture_file_is_refused_and_tampered_entries_are_skipped(tmp_path: Path) -> None:
    async with connected(_server("wrong-digest", tmp_path / "a.log")) as conn:
        kept, _ = await conn.skills()
        forms = kept[0].file("skill://pdf-processing/references/FORMS.md")
        assert forms is not None

        def check(contents: list[dict[str, Any]]) -> None:
            verify_contents(kept[0], forms, contents, server="test:skills")

        with pytest.raises(SkillRefused, match="digest is not the listed one"):
            await read_resource(conn, forms.uri, check=check)
    expected = {
        "dotdot": ("skill://escape/SKILL.md", "'..' segment"),
        "bad-digest": ("skill://pdf-processing/SKILL.md", "64 lowercase hex"),
        "limits": ("skill://past-limit/SKILL.md", "513 files"),
        "unlisted": ("skill://acme/billing/refunds/SKILL.md", "not among the server's resources"),
    }
    for variant, (uri, reason) in expected.items():
        async with connected(_server(variant, tmp_path / f"{variant}.log")) as conn:
            kept, skipped = await conn.skills()
        assert any(s.uri == uri and reason in s.reason for s in skipped), (variant, skipped)
        assert uri not in [k.uri for k in kept]
        assert not (tmp_path / f"{variant}.log").exists()
        if variant == "limits":
            assert "skill://at-limit/SKILL.md" in [k.uri for k in kept]


@needs_linux
@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_server_without_the_skills_extension_lists_no_skills() -> None:
    async with connected([PY, str(PYTHON_SDK_SERVER)]) as conn:
        assert await conn.skills() == ([], [])
        assert "skills" not in conn._lists  # noqa: SLF001 - nothing was asked of the server
