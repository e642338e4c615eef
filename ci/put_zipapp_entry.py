"""Replace the ``__main__.py`` of a shiv zipapp with ``ci/zipapp_entry.py`` (issue 7).

Usage: ``python ci/put_zipapp_entry.py ARCHIVE``. The archive is rewritten beside itself
and renamed over it: the same shebang, entries, order, dates and compression, with only the
entry's bytes changed, so the build stays reproducible.
"""

from __future__ import annotations

import os
import sys
import zipfile
from pathlib import Path

ENTRY = Path(__file__).with_name("zipapp_entry.py")


def put_entry(archive: Path) -> None:
    """Rewrite ``archive`` with ENTRY as its ``__main__.py``.

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
                    data, replaced = entry, True
                dst.writestr(info, data, compress_type=info.compress_type)
    if not replaced:
        partial.unlink()
        sys.exit(f"put_zipapp_entry: {archive} has no __main__.py")
    os.chmod(partial, archive.stat().st_mode)
    os.replace(partial, archive)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python ci/put_zipapp_entry.py ARCHIVE")
    put_entry(Path(sys.argv[1]))
