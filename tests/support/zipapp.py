"""Read a built zipapp as its files: the archive's own entries and those of its inner ``_packed.zip``.

``ci/put_zipapp_entry.py`` keeps only what a start reads as entries of the archive and packs
the rest into ``_packed.zip``; tests that look for a file do not care which of the two holds it.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

PACKED = "_packed.zip"


class ZipappFiles:
    """The files of one zipapp by name (``site-packages/yaml/__init__.py``), wherever they are stored."""

    def __init__(self, archive: Path) -> None:
        with zipfile.ZipFile(archive) as outer:
            self.direct: list[str] = outer.namelist()
            self._outer = {name: outer.read(name) for name in self.direct if not name.endswith("/")}
        packed = self._outer.pop(PACKED, None)
        self._inner = zipfile.ZipFile(io.BytesIO(packed)) if packed is not None else None
        self.packed: list[str] = self._inner.namelist() if self._inner is not None else []
        self.names: set[str] = (set(self.direct) - {PACKED}) | set(self.packed)

    def read(self, name: str) -> bytes:
        """The file's bytes; raises KeyError when the archive holds no such file."""
        if name in self._outer:
            return self._outer[name]
        if self._inner is None:
            raise KeyError(name)
        return self._inner.read(name)
