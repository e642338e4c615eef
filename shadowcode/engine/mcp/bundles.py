"""Reading a plugin bundle: its manifest and the content digest of every file in it (CW-12).

A bundle is a folder; every regular file beneath it (sub-folders included, hidden files
included) is part of its content digest, at most PLUGIN_BUNDLE_FILES_MAX files (in at most as
many sub-folders) and PLUGIN_BUNDLE_BYTES_MAX bytes together. A symbolic link, a FIFO, a socket or a device anywhere in
the bundle refuses it: what was reviewed must be what runs. The digest is the SHA-256 of, for
each file in path order, its relative path, a NUL, the hex SHA-256 of its bytes and a newline;
so renaming, adding, removing or editing any file changes it. Files are read through
:func:`shadowcode.project.files.read_regular` (never blocking). Reading a bundle starts nothing
and contacts nothing; the manifest is validated by
:func:`shadowcode.mcp.client.plugins.parse_manifest`.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from shadowcode.errors import ConfigError, ToolError
from shadowcode.limits import PLUGIN_BUNDLE_BYTES_MAX, PLUGIN_BUNDLE_FILES_MAX
from shadowcode.mcp.client.plugins import MANIFEST_NAME, PluginManifest, parse_manifest
from shadowcode.project.files import read_regular

__all__ = ["Bundle", "bundle_digest", "read_bundle"]


@dataclass(frozen=True)
class Bundle:
    """A bundle read now (CW-12).

    Attributes:
        root: its absolute, resolved folder.
        digest: the content digest (hex SHA-256, see the module).
        manifest_bytes: the exact bytes of ``plugin.json``.
        manifest: the validated manifest.
        files: how many files the digest covers.
    """

    root: Path
    digest: str
    manifest_bytes: bytes
    manifest: PluginManifest
    files: int


def _walk(root: Path) -> list[tuple[str, Path]]:
    """Every regular file beneath ``root`` as ``(relative path, path)``, in path order; at most
    PLUGIN_BUNDLE_FILES_MAX files and as many folders (CW-12)."""
    found: list[tuple[str, Path]] = []
    stack = [root]
    folders = 0
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = [(e.path, e.stat(follow_symlinks=False).st_mode) for e in listing]
        except OSError as exc:
            raise ConfigError(f"{folder}: the bundle cannot be read ({exc.strerror})") from exc
        for path, mode in entries:
            rel = Path(path).relative_to(root).as_posix()
            if stat.S_ISDIR(mode):
                folders += 1
                if folders > PLUGIN_BUNDLE_FILES_MAX:
                    raise ConfigError(
                        f"{root}: the bundle holds more than {PLUGIN_BUNDLE_FILES_MAX} folders; the limit is "
                        f"{PLUGIN_BUNDLE_FILES_MAX}"
                    )
                stack.append(Path(path))
            elif stat.S_ISREG(mode):
                found.append((rel, Path(path)))
                if len(found) > PLUGIN_BUNDLE_FILES_MAX:
                    raise ConfigError(
                        f"{root}: the bundle holds more than {PLUGIN_BUNDLE_FILES_MAX} files; the limit is "
                        f"{PLUGIN_BUNDLE_FILES_MAX}"
                    )
            else:
                kind = "a symbolic link" if stat.S_ISLNK(mode) else "not a regular file"
                raise ConfigError(f"{root}: {rel} is {kind}; a bundle holds only folders and regular files")
    return sorted(found)


def bundle_digest(root: Path) -> tuple[str, dict[str, bytes], int]:
    """The content digest of the bundle at ``root`` and the manifest's bytes (CW-12).

    Returns:
        ``(hex digest, {MANIFEST_NAME: bytes} (when present), number of files)``.

    Raises:
        ConfigError: not a folder, a link or special file inside, more than
            PLUGIN_BUNDLE_FILES_MAX files or PLUGIN_BUNDLE_BYTES_MAX bytes, or unreadable.
    """
    if root.is_symlink() or not root.is_dir():
        raise ConfigError(f"{root}: a plugin bundle must be a folder (not a link)")
    total = 0
    outer = hashlib.sha256()
    kept: dict[str, bytes] = {}
    files = _walk(root)
    for rel, path in files:
        try:
            found = read_regular(path, max_bytes=PLUGIN_BUNDLE_BYTES_MAX - total, label=rel)
        except ToolError as exc:
            raise ConfigError(
                f"{root}: the bundle is over {PLUGIN_BUNDLE_BYTES_MAX} bytes (or {rel} cannot be read: {exc.message}); "
                f"the limit is {PLUGIN_BUNDLE_BYTES_MAX}"
            ) from exc
        if found is None:
            raise ConfigError(f"{root}: {rel} disappeared while the bundle was read")
        total += len(found.data)
        outer.update(f"{rel}\0{hashlib.sha256(found.data).hexdigest()}\n".encode())
        if rel == MANIFEST_NAME:
            kept[rel] = found.data
    return outer.hexdigest(), kept, len(files)


def read_bundle(path: Path) -> Bundle:
    """Read and validate the bundle at ``path`` now (CW-12).

    Raises:
        ConfigError: see :func:`bundle_digest`; no ``plugin.json``; or an invalid manifest (named field).
    """
    root = Path(os.path.abspath(path))
    try:
        real = root.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise ConfigError(f"{path}: no such plugin bundle") from exc
    digest, kept, count = bundle_digest(real)
    data = kept.get(MANIFEST_NAME)
    if data is None:
        raise ConfigError(f"{real}: no {MANIFEST_NAME} at the top of the bundle")
    manifest = parse_manifest(data, real, f"{real.name}/{MANIFEST_NAME}")
    return Bundle(real, digest, data, manifest, count)
