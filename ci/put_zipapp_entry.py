"""Replace the ``__main__.py`` of a shiv zipapp with ``ci/zipapp_entry.py`` (issue 7, PKG-01).

Usage: ``python ci/put_zipapp_entry.py ARCHIVE [PLATLIB]``. The archive is rewritten beside
itself and renamed over it: the same shebang, entries, order, dates and compression, with only
the entry's bytes changed, so the build stays reproducible. With ``PLATLIB`` (the folder
``ci/archive.py layout`` fills), its files are added after the others as ``_platlib/...``, in
sorted order, with the entry's date, compressed, mode 0644 or 0755.
"""

from __future__ import annotations

import os
import sys
import zipfile
from pathlib import Path

ENTRY = Path(__file__).with_name("zipapp_entry.py")


def _added(platlib: Path | None) -> list[tuple[str, Path]]:
    if platlib is None:
        return []
    files = sorted(p for p in platlib.rglob("*") if p.is_file())
    return [("_platlib/" + p.relative_to(platlib).as_posix(), p) for p in files]


def put_entry(archive: Path, platlib: Path | None = None) -> None:
    """Rewrite ``archive`` with ENTRY as its ``__main__.py`` and ``platlib``'s files as ``_platlib/...``.

    Raises:
        SystemExit: the archive has no shebang line or no ``__main__.py``.
    """
    with archive.open("rb") as f:
        shebang = f.readline()
    if not shebang.startswith(b"#!"):
        sys.exit(f"put_zipapp_entry: {archive} does not start with a shebang line")
    entry = ENTRY.read_bytes()
    partial = archive.with_name(archive.name + ".entry")
    replaced = False
    with zipfile.ZipFile(archive) as src, partial.open("wb") as out:
        out.write(shebang)
        with zipfile.ZipFile(out, "w") as dst:
            for info in src.infolist():
                data = src.read(info)
                if info.filename == "__main__.py":
                    data, replaced, entry_info = entry, True, info
                dst.writestr(info, data, compress_type=info.compress_type)
            if replaced:
                for name, path in _added(platlib):
                    added = zipfile.ZipInfo(name, date_time=entry_info.date_time)
                    added.external_attr = (0o100755 if path.stat().st_mode & 0o111 else 0o100644) << 16
                    dst.writestr(added, path.read_bytes(), compress_type=zipfile.ZIP_DEFLATED)
    if not replaced:
        partial.unlink()
        sys.exit(f"put_zipapp_entry: {archive} has no __main__.py")
    os.chmod(partial, archive.stat().st_mode)
    os.replace(partial, archive)


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: python ci/put_zipapp_entry.py ARCHIVE [PLATLIB]")
    put_entry(Path(sys.argv[1]), Path(sys.argv[2]) if len(sys.argv) == 3 else None)
