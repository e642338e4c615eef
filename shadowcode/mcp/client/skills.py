"""Skills a server serves through the Skills extension: which entries are kept, and verified reads.

Covers CW-09.

A server that advertises ``io.modelcontextprotocol/skills`` under ``capabilities.extensions``
(and the ``resources`` capability) has its ``skills/list`` read like its other lists (same
pages, entries, bytes, cursors, timeouts and freshness: :func:`~shadowcode.mcp.client.catalog.read_list`
with the kind ``skills``). :func:`check_entries` then decides, entry by entry, what is kept. An
entry is kept only when

- its ``uri`` names a ``SKILL.md`` (``<scheme>://<skill-path>/SKILL.md``) that is among the
  server's own ``resources/list`` entries, and the last segment of ``<skill-path>`` is the
  frontmatter's ``name``;
- its ``frontmatter`` is an object with a non-empty string ``name`` and ``description``;
- its ``resources`` is a list (``"dynamic"`` skills carry no digests and are skipped) of
  ``{uri, digest, size}``: each ``uri`` is the ``SKILL.md`` or lies beneath the skill's root,
  with no empty, ``.`` or ``..`` segment and no ``%``, ``?``, ``#`` or ``\\``; each digest is
  ``sha256:`` plus 64 lowercase hex characters; each size a whole number of bytes; no file
  twice; the ``SKILL.md`` itself listed;
- it has at most ``files_max`` files (MCP_SKILL_FILES_MAX) adding up to at most ``bytes_max``
  bytes (MCP_SKILL_BYTES_MAX).

Any other entry is skipped with the reason (a :class:`SkippedSkill`). Listing loads nothing and
activates nothing: no skill file is read until a read of that exact file is asked for.
:func:`verify_contents` checks such a read: exactly one content item, for exactly the listed
URI, whose raw bytes have the listed size and SHA-256 digest; for a ``SKILL.md``, its YAML
frontmatter must equal the entry's. A mismatch raises :class:`SkillRefused` and nothing of the
content is used.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from dataclasses import dataclass
from typing import Any, Literal

import mcp_types as types
import yaml
from pydantic import BaseModel, ConfigDict

from shadowcode.errors import UpstreamServerError
from shadowcode.json_values import json_array, json_object
from shadowcode.limits import MCP_SKILL_BYTES_MAX, MCP_SKILL_FILES_MAX

__all__ = [
    "SKILLS_EXTENSION",
    "ListSkillsRequest",
    "ListSkillsResult",
    "Skill",
    "SkillFile",
    "SkillRefused",
    "SkippedSkill",
    "check_entries",
    "offers_skills",
    "verify_contents",
]

SKILLS_EXTENSION = "io.modelcontextprotocol/skills"
"""The extension's identifier under ``capabilities.extensions``."""

_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_FORBIDDEN = ("%", "?", "#", "\\")
_FRONTMATTER = re.compile(r"^\ufeff?---\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|$)", re.DOTALL)


class ListSkillsRequest(types.PaginatedRequest[Literal["skills/list"]]):
    """``skills/list``: one page of the skills a server serves."""

    method: Literal["skills/list"] = "skills/list"


class _Entry(BaseModel):
    """One entry as the server sent it; every field is checked by :func:`check_entries`."""

    model_config = ConfigDict(extra="allow")


class ListSkillsResult(types.PaginatedResult, types.CacheableResult):
    """One page of ``skills/list``: ``skills`` (entries as sent), ``nextCursor``, ``ttlMs``."""

    skills: list[_Entry]


class SkillRefused(UpstreamServerError):
    """A skill file's content did not match its entry (URI, size, digest, frontmatter); none of it is used (CW-09)."""


@dataclass(frozen=True)
class SkillFile:
    """One listed file of a kept skill: its exact URI, ``sha256:<hex>`` digest and size in bytes."""

    uri: str
    digest: str
    size: int


@dataclass(frozen=True)
class Skill:
    """A kept skill: its ``SKILL.md`` URI, frontmatter (as listed) and files (``SKILL.md`` first)."""

    uri: str
    frontmatter: dict[str, Any]
    files: tuple[SkillFile, ...]

    @property
    def name(self) -> str:
        return str(self.frontmatter["name"])

    @property
    def description(self) -> str:
        return str(self.frontmatter["description"])

    def file(self, uri: str) -> SkillFile | None:
        """The listed file with exactly this URI, or None."""
        return next((f for f in self.files if f.uri == uri), None)

    def as_json(self) -> dict[str, Any]:
        """``{"uri", "name", "description", "files": [{"uri", "size", "digest"}], "bytes"}``."""
        return {
            "uri": self.uri,
            "name": self.name,
            "description": self.description,
            "files": [{"uri": f.uri, "size": f.size, "digest": f.digest} for f in self.files],
            "bytes": sum(f.size for f in self.files),
        }


@dataclass(frozen=True)
class SkippedSkill:
    """A listed entry that was not kept: its ``uri`` (as sent, or None) and why."""

    uri: str | None
    reason: str

    def as_json(self) -> dict[str, Any]:
        return {"uri": self.uri, "reason": self.reason}


class _Skip(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def offers_skills(capabilities: types.ServerCapabilities | None) -> bool:
    """Whether a server advertises the Skills extension and the resources its files are read through (CW-09)."""
    if capabilities is None or capabilities.resources is None:
        return False
    return isinstance(capabilities.extensions, dict) and isinstance(capabilities.extensions.get(SKILLS_EXTENSION), dict)


def _root(uri: str) -> str:
    """The skill's root (its ``SKILL.md`` URI without ``/SKILL.md``), checked segment by segment."""
    scheme, sep, rest = uri.partition("://")
    if not sep or not scheme or not rest.endswith("/SKILL.md"):
        raise _Skip("its uri does not name a SKILL.md as <scheme>://<skill-path>/SKILL.md")
    _check_segments(rest[: -len("/SKILL.md")], "its skill path")
    return uri[: -len("/SKILL.md")]


def _check_segments(path: str, what: str) -> None:
    for segment in path.split("/"):
        if segment in ("", ".", ".."):
            raise _Skip(f"{what} has an empty, '.' or '..' segment")
        if any(c in segment for c in _FORBIDDEN) or any(ord(c) < 0x20 or ord(c) == 0x7F for c in segment):
            raise _Skip(f"{what} has a segment with '%', '?', '#', '\\' or a control character")


def _check_file(given: object, skill_uri: str, root: str) -> SkillFile:
    raw = json_object(given)
    uri = raw.get("uri") if raw is not None else None
    if raw is None or not isinstance(uri, str):
        raise _Skip("a resources entry has no uri")
    if uri != skill_uri:
        if not uri.startswith(root + "/"):
            raise _Skip(f"the file {uri!r} is not beneath the skill's root")
        _check_segments(uri[len(root) + 1 :], f"the file {uri!r}")
    digest = raw.get("digest")
    if not isinstance(digest, str) or _DIGEST.fullmatch(digest) is None:
        raise _Skip(f"the file {uri!r} has a digest that is not sha256: and 64 lowercase hex characters")
    size = raw.get("size")
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise _Skip(f"the file {uri!r} has no size in whole bytes")
    return SkillFile(uri, digest, size)


def _check_entry(entry: dict[str, Any], resource_uris: set[str], files_max: int, bytes_max: int) -> Skill:
    uri = entry.get("uri")
    if not isinstance(uri, str):
        raise _Skip("it has no uri")
    root = _root(uri)
    frontmatter = json_object(entry.get("frontmatter"))
    if frontmatter is None:
        raise _Skip("it has no frontmatter object")
    for key in ("name", "description"):
        value = frontmatter.get(key)
        if not isinstance(value, str) or not value.strip():
            raise _Skip(f"its frontmatter has no {key}")
    if root.rsplit("/", 1)[-1] != frontmatter["name"]:
        raise _Skip("the last segment of its skill path is not its frontmatter name")
    if entry.get("resources") == "dynamic":
        raise _Skip('its files are "dynamic": they carry no digests to verify')
    resources = json_array(entry.get("resources"))
    if resources is None:
        raise _Skip('its resources are neither a list of files nor "dynamic"')
    if len(resources) > files_max:
        raise _Skip(f"it lists {len(resources)} files; at most {files_max} are kept")
    files = [_check_file(raw, uri, root) for raw in resources]
    seen: set[str] = set()
    for f in files:
        if f.uri in seen:
            raise _Skip(f"it lists the file {f.uri!r} twice")
        seen.add(f.uri)
    if uri not in seen:
        raise _Skip("its files do not list its SKILL.md")
    total = sum(f.size for f in files)
    if total > bytes_max:
        raise _Skip(f"its files add up to {total} bytes; at most {bytes_max} are kept")
    if uri not in resource_uris:
        raise _Skip("its SKILL.md is not among the server's resources")
    files.sort(key=lambda f: (f.uri != uri, f.uri))
    return Skill(uri, dict(frontmatter), tuple(files))


def check_entries(
    entries: list[dict[str, Any]],
    resource_uris: set[str],
    *,
    files_max: int = MCP_SKILL_FILES_MAX,
    bytes_max: int = MCP_SKILL_BYTES_MAX,
) -> tuple[list[Skill], list[SkippedSkill]]:
    """Sort a server's ``skills/list`` entries into kept skills and skipped entries (CW-09).

    Args:
        entries: the entries as listed (JSON objects, in the server's order).
        resource_uris: the URIs of the server's own ``resources/list``.
        files_max: most files one skill may list (MCP_SKILL_FILES_MAX, ``SKILL.md`` included).
        bytes_max: most bytes one skill's listed sizes may add up to (MCP_SKILL_BYTES_MAX).

    Returns:
        ``(kept, skipped)``: kept skills in the server's order; skipped entries with their reason.
        Nothing is read or activated.
    """
    kept: list[Skill] = []
    skipped: list[SkippedSkill] = []
    for entry in entries:
        uri = entry.get("uri") if isinstance(entry.get("uri"), str) else None
        try:
            kept.append(_check_entry(entry, resource_uris, files_max, bytes_max))
        except _Skip as exc:
            skipped.append(SkippedSkill(uri, exc.reason))
    return kept, skipped


def _frontmatter(text: str) -> Any:
    match = _FRONTMATTER.match(text)
    if match is None:
        return None
    try:
        return yaml.safe_load(match.group(1))
    except yaml.YAMLError:
        return None


def verify_contents(skill: Skill, file: SkillFile, contents: list[dict[str, Any]], *, server: str) -> bytes:
    """Check one ``resources/read`` of a listed skill file against its entry (CW-09).

    Args:
        skill: the kept skill the file belongs to.
        file: the listed file that was read.
        contents: the read's ``contents`` items as sent (before any redaction).
        server: the definition id, for errors.

    Returns:
        The file's raw bytes, verified.

    Raises:
        SkillRefused: not exactly one item, an item for another URI, a blob that is not base64,
            a size or digest other than listed, or (for ``SKILL.md``) frontmatter other than the
            entry's. Nothing of the content may be used.
    """

    def refuse(why: str) -> SkillRefused:
        return SkillRefused(
            f"{server}: the skill file {file.uri!r} of {skill.uri!r} was refused: {why}; nothing of it was loaded",
            server=server,
        )

    if len(contents) != 1:
        raise refuse(f"the server returned {len(contents)} content items, not exactly one")
    item = contents[0]
    if item.get("uri") != file.uri:
        raise refuse("the server returned content for another URI")
    if isinstance(item.get("text"), str):
        data = item["text"].encode("utf-8")
    elif isinstance(item.get("blob"), str):
        try:
            data = base64.b64decode(item["blob"], validate=True)
        except (binascii.Error, ValueError):
            raise refuse("its blob is not base64") from None
    else:
        raise refuse("the content has neither text nor blob")
    if len(data) != file.size:
        raise refuse(f"it is {len(data)} bytes, the listing says {file.size}")
    if "sha256:" + hashlib.sha256(data).hexdigest() != file.digest:
        raise refuse("its SHA-256 digest is not the listed one")
    if file.uri == skill.uri:
        if _frontmatter(data.decode("utf-8", errors="replace")) != skill.frontmatter:
            raise refuse("its frontmatter differs from the listed frontmatter")
    return data
