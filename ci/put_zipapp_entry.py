"""Put ``ci/zipapp_entry.py`` in a shiv zipapp as its entry and pack what no start reads (issue 7, issue 15, PKG-01).

``ci/zipapp_unpack.py``, which the entry imports only when it unpacks, goes beside it as
``_shadowcode_unpack.py`` (with its bytecode, as the kept modules below).

Usage: ``python ci/put_zipapp_entry.py ARCHIVE [PLATLIB] [--keep PREFIX]...``. The archive is
rewritten beside itself and renamed over it: the same shebang, dates and compression, with the
entry's bytes changed. With ``PLATLIB`` (the folder ``ci/archive.py layout`` fills), its files
are added as ``_platlib/...``, in sorted order, with the entry's date, compressed, mode 0644
or 0755.

Every start of the archive pays for its zip directory: Python reads all of it (in Python
code, ``zipimport``) to find ``__main__.py``, and keeps it in memory for the life of the
process. Two thousand entries cost about 20 ms and 1 MiB on every ``mcp serve``, although the
stdio front and the relay read only a few modules of ours. So only what a start reads stays an
entry of the archive (``__main__.py``, shiv's ``_bootstrap/`` and ``environment.json``,
``_platlib/manifest.json`` and the ``--keep`` prefixes); everything else (the dependencies'
site-packages, the compiled wheels) goes, under its own name, date, mode and compression, into
one inner zip stored uncompressed as ``_packed.zip``, which the entry unpacks with the rest on
the first full start.

A module imported from inside the archive is compiled at every start (Python cannot write its
bytecode back into the zip): about 20 ms for the front's few modules. So each kept ``.py``
gets its bytecode beside it (``front.pyc``, the legacy layout ``zipimport`` reads), compiled
by the building interpreter as a checked-hash pyc: another interpreter version finds a wrong
magic number and compiles the source as before, and a changed source (its hash no longer
matching) is compiled from source too. The entry never unpacks these files.
"""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ENTRY = Path(__file__).with_name("zipapp_entry.py")
UNPACK = Path(__file__).with_name("zipapp_unpack.py")
UNPACK_NAME = "_shadowcode_unpack.py"
"""Where the entry finds ``ci/zipapp_unpack.py``: at the archive's root, imported only to unpack."""
PACKED = "_packed.zip"
"""The inner zip's name; ``ci/zipapp_entry.py`` reads the same name."""
DIRECT = ("__main__.py", UNPACK_NAME, "_bootstrap/", "environment.json", "_platlib/manifest.json")
"""Entries that always stay in the archive's own directory: what every start reads."""


def _added(platlib: Path | None, date_time: tuple[int, ...]) -> list[tuple[zipfile.ZipInfo, bytes]]:
    if platlib is None:
        return []
    added = []
    for path in sorted(p for p in platlib.rglob("*") if p.is_file()):
        info = zipfile.ZipInfo("_platlib/" + path.relative_to(platlib).as_posix(), date_time=date_time)
        info.external_attr = (0o100755 if path.stat().st_mode & 0o111 else 0o100644) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        added.append((info, path.read_bytes()))
    return added


def _compiled(kept: list[tuple[zipfile.ZipInfo, bytes]]) -> dict[str, bytes]:
    """Checked-hash bytecode of each kept ``.py``: ``{name + "c": pyc bytes}``.

    Compiled in a child with a fixed hash seed, so the bytes are the same on every build (the
    order of a constant frozenset of strings follows the seed).
    """
    sources = {info.filename: data for info, data in kept if info.filename.endswith(".py")}
    if not sources:
        return {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, data in sources.items():
            path = Path(tmp, name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        compile_all = [sys.executable, "-m", "compileall", "-q", "-b", "--invalidation-mode", "checked-hash"]
        done = subprocess.run(
            [*compile_all, "-s", tmp, tmp],
            env={**os.environ, "PYTHONHASHSEED": "0"}, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            sys.exit(f"put_zipapp_entry: compiling the kept modules failed:\n{done.stdout}{done.stderr}")
        return {name + "c": Path(tmp, name + "c").read_bytes() for name in sources}


def put_entry(archive: Path, platlib: Path | None = None, keep: tuple[str, ...] = ()) -> None:
    """Rewrite ``archive``: ENTRY as its ``__main__.py``, UNPACK beside it, ``platlib``'s files added, the rest packed.

    Args:
        archive: the shiv zipapp, rewritten in place (beside itself, then renamed over it).
        platlib: the folder of compiled wheels to add as ``_platlib/...``, or None.
        keep: name prefixes (``site-packages/shadowcode/``) that stay entries of the archive
            besides ``DIRECT``, each ``.py`` with its bytecode; every other entry is stored in
            ``_packed.zip``.

    Raises:
        SystemExit: the archive has no shebang line or no ``__main__.py``, or a kept module
            does not compile.
    """
    with archive.open("rb") as f:
        shebang = f.readline()
    if not shebang.startswith(b"#!"):
        sys.exit(f"put_zipapp_entry: {archive} does not start with a shebang line")
    direct = (*DIRECT, *keep)
    with zipfile.ZipFile(archive) as src:
        members = [(info, src.read(info)) for info in src.infolist()]
    entry_info = next((info for info, _ in members if info.filename == "__main__.py"), None)
    if entry_info is None:
        sys.exit(f"put_zipapp_entry: {archive} has no __main__.py")
    members = [(info, ENTRY.read_bytes() if info is entry_info else data) for info, data in members]
    unpack_info = zipfile.ZipInfo(UNPACK_NAME, date_time=entry_info.date_time)
    unpack_info.external_attr = 0o100644 << 16
    unpack_info.compress_type = zipfile.ZIP_DEFLATED
    members += [(unpack_info, UNPACK.read_bytes()), *_added(platlib, entry_info.date_time)]
    kept = [(info, data) for info, data in members if info is unpack_info or (keep and info.filename.startswith(keep))]
    bytecode = _compiled(kept)
    packed = io.BytesIO()
    partial = archive.with_name(archive.name + ".entry")
    with partial.open("wb") as out:
        out.write(shebang)
        with zipfile.ZipFile(out, "w") as dst, zipfile.ZipFile(packed, "w") as inner:
            for info, data in members:
                target = dst if info.filename.startswith(direct) else inner
                target.writestr(info, data, compress_type=info.compress_type)
                if info.filename + "c" in bytecode:
                    pyc = zipfile.ZipInfo(info.filename + "c", date_time=info.date_time)
                    pyc.external_attr = 0o100644 << 16
                    dst.writestr(pyc, bytecode[info.filename + "c"], compress_type=zipfile.ZIP_DEFLATED)
            inner.close()
            if inner.filelist:
                info = zipfile.ZipInfo(PACKED, date_time=entry_info.date_time)
                info.external_attr = 0o100644 << 16
                dst.writestr(info, packed.getvalue(), compress_type=zipfile.ZIP_STORED)
    os.chmod(partial, archive.stat().st_mode)
    os.replace(partial, archive)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("archive", type=Path)
    parser.add_argument("platlib", type=Path, nargs="?")
    parser.add_argument("--keep", action="append", default=[], metavar="PREFIX", help="an entry prefix not to pack")
    args = parser.parse_args(argv)
    put_entry(args.archive, args.platlib, tuple(args.keep))


if __name__ == "__main__":
    main()
