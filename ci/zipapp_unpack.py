"""The unpacking of ``shadowcode.pyz`` into shiv's cache folder, in two parts (PKG-01, issue 32).

``ci/put_zipapp_entry.py`` stores this file at the archive's root as ``_shadowcode_unpack.py``;
the entry (``ci/zipapp_entry.py``) imports it only when it unpacks or checks the cache folder,
so the stdio front and the relay never compile it. It parses on old interpreters too.

The first part, the packages the manifest names ``first`` (what the stdio server's first
read-only tool call imports) and every distribution's metadata, is unpacked under a lock into
a temporary folder renamed into place, with its record. Every other top-level package or module
(a deferred entry, listed in ``deferred``) is written afterwards: by a low-priority child of
the process (``later``), which then writes the record ``record.rest.sha256`` and the marker
``complete.rest`` and compiles the bytecode, or at once, in the importing process, when it
imports one before the child has written it (``_DeferredFinder``). Each deferred entry is
written into a folder of the writer's own and renamed into place whole.
"""

import os
import sys

_PACKED = "_packed.zip"  # what ci/put_zipapp_entry.py packs: every file no start reads
_COMPLETE = "complete"
_RECORD = "record.sha256"
_BYTECODE = "bytecode"
_DEFERRED = "deferred"  # the deferred top-level entries, one a line, written with the first part
_REST_COMPLETE = "complete.rest"
_REST_RECORD = "record.rest.sha256"
_PARTIAL = ".partial-"  # where a writer of deferred entries writes before renaming them into place
_OLD = ".old-"  # beside the copy: a copy being removed, unpacked again (see ``_remove``)
_UNPACK_FAILED_STATUS = 1


def _fail(message, status):
    """One line on stderr, nothing on stdout, exit ``status``."""
    sys.stderr.write("shadowcode: " + message + "\n")
    sys.stderr.flush()
    sys.exit(status)


def _extract(archive, into, wheels, keys=None, first=None, deferred=None):
    """Write the archive's ``site-packages/`` and the given ``_platlib/<wheel>/`` trees into ``into/site-packages``.

    ``into`` must exist; when it is removed meanwhile, FileNotFoundError (see ``_folders_below``).

    They are entries of the archive itself or of its inner zip ``_packed.zip`` (see
    ``ci/put_zipapp_entry.py``), read where it lies inside the archive (it is stored
    uncompressed), never copied out. With ``keys`` None, the first part: every file whose
    top-level entry is not deferred (``_deferred_key`` with ``first``), the deferred entries'
    names added to the set ``deferred``; else only the files of the top-level entries named in
    ``keys``.
    Returns the record: one ``(path, size, mtime_ns, sha256)`` per file written, path
    relative to ``into``.
    """
    import zipfile

    prefixes = ["site-packages/"] + ["_platlib/" + w + "/" for w in wheels]
    record = []
    _extract_from(archive, into, prefixes, record, keys, first, deferred)
    if _PACKED in archive.namelist():
        with _stored_member(archive, _PACKED) as stored, zipfile.ZipFile(stored) as inner:
            _extract_from(inner, into, prefixes, record, keys, first, deferred)
    return record


def _deferred_key(relative, first):
    """The deferred top-level entry of site-packages holding ``relative`` (a path under it), or None.

    A package folder or a top-level module (``.py``, ``.so``) is deferred unless its name is
    one of ``first`` (the manifest's ``first``: the packages the stdio server's first read-only
    tool call imports; None defers nothing); a distribution's metadata (``.dist-info``) never
    is, so ``importlib.metadata`` sees every distribution (versions, entry points) from the start.
    """
    key, sep, _rest = relative.partition("/")
    if first is None or key.endswith((".dist-info", ".data")) or key.split(".", 1)[0] in first:
        return None
    if sep or key.endswith((".py", ".so")):
        return key
    return None


class _Window(object):
    """A read-only file over ``size`` bytes of ``raw`` from ``start``: an uncompressed zip member, in place."""

    def __init__(self, raw, start, size):
        self.raw, self.start, self.size, self.at = raw, start, size, 0

    def seek(self, offset, whence=0):
        self.at = max(0, offset if whence == 0 else self.at + offset if whence == 1 else self.size + offset)
        return self.at

    def tell(self):
        return self.at

    def seekable(self):
        return True

    def read(self, n=-1):
        left = self.size - self.at
        n = left if n is None or n < 0 or n > left else n
        self.raw.seek(self.start + self.at)
        data = self.raw.read(n)
        self.at += len(data)
        return data

    def close(self):
        self.raw.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _stored_member(archive, name):
    """The member ``name`` of ``archive`` (stored uncompressed) as a seekable file read in place.

    ``ZipFile.open`` would do, but before Python 3.12 each backward seek in it reads the member
    again from its start: an inner zip read that way costs seconds, not milliseconds.
    """
    import struct

    info = archive.getinfo(name)
    if info.compress_type != 0:
        raise OSError("{} is compressed inside the archive".format(name))
    raw = open(archive.filename, "rb")
    try:
        raw.seek(info.header_offset)
        header = raw.read(30)
        if header[:4] != b"PK\x03\x04":
            raise OSError("{} has no local header inside the archive".format(name))
        name_len, extra_len = struct.unpack("<HH", header[26:30])
    except Exception:
        raw.close()
        raise
    return _Window(raw, info.header_offset + 30 + name_len + extra_len, info.compress_size)


def _extract_from(archive, into, prefixes, record, keys=None, first=None, deferred=None):
    """Write the selected files of ``archive`` under one of ``prefixes`` into ``into/site-packages``, each recorded.

    ``keys`` and ``deferred`` select as in ``_extract``.
    """
    import hashlib

    made = set()
    pycs = []
    for info in archive.infolist():
        name = info.filename
        prefix = next((p for p in prefixes if name.startswith(p)), None)
        if prefix is None or name.endswith("/"):
            continue  # a folder
        if name.endswith(".pyc"):
            pycs.append(info)  # bytecode for imports from inside the archive: see below
            continue
        inside = name[len(prefix) :]
        if keys is not None:
            if inside.partition("/")[0] not in keys:
                continue
        else:
            key = _deferred_key(inside, first)
            if key is not None:
                if deferred is not None:
                    deferred.add(key)
                continue
        relative = "site-packages/" + inside
        target = os.path.join(into, *relative.split("/"))
        parent = os.path.dirname(target)
        if parent not in made:
            _folders_below(into, parent)
            made.add(parent)
        data = archive.read(info)
        with open(target, "wb") as dst:
            dst.write(data)
        mode = (info.external_attr >> 16) & 0o777
        if mode:
            os.chmod(target, mode)
        found = os.stat(target)
        record.append((relative, found.st_size, found.st_mtime_ns, hashlib.sha256(data).hexdigest()))
    if keys is None and pycs:
        _bytecode_beside(archive, into, pycs)


def _folders_below(top, path):
    """Make the folder ``path`` and those between it and ``top``, never ``top`` or above it.

    Raises FileNotFoundError when ``top`` is gone: a writer whose copy was removed (unpacked
    again by another start) stops there instead of making the copy's folder again.
    """
    if path == top or os.path.isdir(path):
        return
    _folders_below(top, os.path.dirname(path))
    try:
        os.mkdir(path)
    except FileExistsError:
        pass


def _remove(path, aside):
    """Remove ``path`` (a folder or file): renamed into a new folder ``<aside>...`` first, removed there.

    A writer still at work in a folder removed in place (the writer of deferred entries an
    earlier start began, or one removing its own folder on being ended) can change it under
    the removal and fail that half way; renamed aside, it fails cleanly instead. What the
    removal cannot remove is left for whoever clears leftovers named ``<aside>...`` (``unpack``
    for a copy, ``_finish_rest`` for an entry). Raises OSError when ``path`` cannot be renamed.
    """
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix=os.path.basename(aside), dir=os.path.dirname(aside))
    try:
        os.rename(path, os.path.join(folder, "removed"))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _bytecode_beside(archive, into, pycs):
    """Write the archive's bytecode of our modules into ``__pycache__`` when this interpreter can load it.

    ``ci/put_zipapp_entry.py`` compiles each kept module (ours) with the building interpreter,
    as a checked-hash pyc: Python checks it against its source's hash at every import, so a
    first run on the same CPython version imports them without compiling. Another version's
    magic number differs and nothing is written. Not recorded (as other bytecode is not).
    """
    import importlib.util

    tag = sys.implementation.cache_tag
    magic = importlib.util.MAGIC_NUMBER
    if not tag:
        return
    made = set()
    for info in pycs:
        data = archive.read(info)
        if data[:4] != magic:
            return  # built by another version
        folder, _sep, base = info.filename.rpartition("/")
        source = os.path.join(into, *folder.split("/"))
        if not os.path.isfile(os.path.join(source, base[:-1])):
            continue  # its source was not written
        cache = os.path.join(source, "__pycache__")
        if cache not in made:
            os.makedirs(cache, exist_ok=True)
            made.add(cache)
        with open(os.path.join(cache, base[:-4] + "." + tag + ".pyc"), "wb") as dst:
            dst.write(data)


def _record_text(tag, record):
    """The record file's text: the tag, then ``sha256 size mtime_ns path`` per unpacked file, sorted by path."""
    lines = [tag]
    for relative, size, mtime_ns, digest in sorted(record):
        lines.append("{} {} {} {}".format(digest, size, mtime_ns, relative))
    return "\n".join(lines) + "\n"


def _verified(folder, tag, marker=_COMPLETE, record=_RECORD):
    """Whether ``folder`` holds a complete part for ``tag`` that still matches its record.

    The marker (``complete``, or ``complete.rest`` for the deferred entries) holds the sha256
    of its record file (``record.sha256``, ``record.rest.sha256``), which holds the sha256, size
    and modification time of every file of that part. Checked at every start: the marker, the
    record's digest, and each file's size and modification time (a stat per file); a file
    rewritten since the unpack (tampered, truncated by a full disk) no longer matches, and the
    copy is unpacked again. Each file's own sha256 is computed as it is written.
    """
    import hashlib

    try:
        with open(os.path.join(folder, marker), "rb") as fh:
            wanted = fh.read().decode("ascii").strip()
        with open(os.path.join(folder, record), "rb") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError):
        return False
    if hashlib.sha256(text).hexdigest() != wanted:
        return False
    lines = text.decode("utf-8", "replace").splitlines()
    if not lines or lines[0] != tag:
        return False
    stat = os.stat
    join = os.path.join
    for line in lines[1:]:
        parts = line.split(" ", 3)
        if len(parts) != 4:
            return False
        try:
            found = stat(join(folder, parts[3]))
            if found.st_size != int(parts[1]) or found.st_mtime_ns != int(parts[2]):
                return False
        except (OSError, ValueError):
            return False
    return True


def _state(folder, tag):
    """``"full"``, ``"first"`` (deferred entries not all written yet) or None (to unpack again)."""
    if not _verified(folder, tag):
        return None
    if not os.path.exists(os.path.join(folder, _REST_COMPLETE)):
        return "first" if os.path.isfile(os.path.join(folder, _DEFERRED)) else None  # None: an older layout
    return "full" if _verified(folder, tag, _REST_COMPLETE, _REST_RECORD) else None


def unpacked(folder, tag):
    """The state of ``folder`` for ``tag`` checked as at every start: ``"full"``, ``"first"`` or None (to unpack).

    For the entry's direct start, which serves from a copy only when this is not None and
    leaves any other case to ``unpack`` (through shiv's bootstrap).
    """
    return _state(str(folder), tag)


def _deferred_keys(folder):
    """The deferred top-level entries listed at the first unpack (the file is in the first part's record)."""
    with open(os.path.join(folder, _DEFERRED), "r", encoding="utf-8") as fh:
        return [line for line in fh.read().splitlines() if line]


def _place(partial, folder, keys):
    """Rename each of ``keys`` written under ``partial`` into ``folder/site-packages``, whole; one in place stays."""
    site = os.path.join(folder, "site-packages")
    for key in keys:
        source = os.path.join(partial, "site-packages", key)
        target = os.path.join(site, key)
        if not os.path.lexists(source) or os.path.lexists(target):
            continue
        try:
            if os.path.isdir(source):
                os.rename(source, target)  # fails onto a folder another writer placed meanwhile
            else:
                os.link(source, target)  # never replaces: a file another writer placed stays as it is
        except FileExistsError:
            pass
        except OSError:
            if os.path.lexists(target):
                continue  # another writer placed it meanwhile
            if os.path.isdir(source):
                raise
            os.rename(source, target)  # a file system without hard links


def _write_keys(archive_path, folder, wheels, keys):
    """Write the deferred ``keys`` into ``folder/site-packages``, each renamed into place whole (atomic).

    Several processes may write the same entries at once: each writes into a folder of its
    own (``.partial-<pid>-...``) and the first rename wins. Returns the record of the files
    this process wrote. Raises OSError.
    """
    import shutil
    import tempfile
    import zipfile

    partial = tempfile.mkdtemp(prefix=_PARTIAL + str(os.getpid()) + "-", dir=folder)
    try:
        with zipfile.ZipFile(archive_path) as archive:
            record = _extract(archive, partial, wheels, keys=frozenset(keys))
        _place(partial, folder, keys)
        return record
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def _finish_rest(archive_path, folder, tag, wheels):
    """Write every deferred entry still missing, then the marker ``complete.rest`` and its record.

    Run by the low-priority child ``later`` starts. An entry already in place (written by this
    function or by ``_DeferredFinder`` in another process) is kept when each of its files has
    the archive's size, else moved aside and written again. Leftover ``.partial-<pid>-...``
    folders of processes no longer running (killed half way) are removed.
    """
    import hashlib
    import shutil
    import zipfile

    keys = _deferred_keys(folder)
    site = os.path.join(folder, "site-packages")
    for name in os.listdir(folder):
        if name.startswith(_PARTIAL):
            try:
                os.kill(int(name[len(_PARTIAL) :].split("-", 1)[0]), 0)
            except ProcessLookupError:
                shutil.rmtree(os.path.join(folder, name), ignore_errors=True)
            except (ValueError, OSError):
                pass
    expected = {}  # relative path -> (size, sha256), from the archive
    wanted = frozenset(keys)
    prefixes = ["site-packages/"] + ["_platlib/" + w + "/" for w in wheels]

    def scan(archive):
        for info in archive.infolist():
            name = info.filename
            prefix = next((p for p in prefixes if name.startswith(p)), None)
            if prefix is None or name.endswith(("/", ".pyc")) or name[len(prefix) :].partition("/")[0] not in wanted:
                continue
            digest = hashlib.sha256(archive.read(info)).hexdigest()
            expected["site-packages/" + name[len(prefix) :]] = (info.file_size, digest)

    with zipfile.ZipFile(archive_path) as archive:
        scan(archive)
        if _PACKED in archive.namelist():
            with _stored_member(archive, _PACKED) as stored, zipfile.ZipFile(stored) as inner:
                scan(inner)
    for attempt in (1, 2):
        placed = {key for key in keys if os.path.lexists(os.path.join(site, key))}  # before any file is looked at
        missing, changed = set(keys) - placed, set()
        for relative, (size, _digest) in expected.items():
            key = relative.split("/", 2)[1]
            if key in placed:
                try:
                    if os.stat(os.path.join(folder, relative)).st_size != size:
                        changed.add(key)
                except OSError:
                    changed.add(key)
        if not missing and not changed:
            break
        if attempt == 2:
            return  # changed while being written: a later start tries again
        # Only an entry in place before its files were looked at and found changed is moved
        # aside: one placed since was placed whole by another process (and may be in use).
        for key in changed:
            if os.path.lexists(os.path.join(site, key)):
                _remove(os.path.join(site, key), os.path.join(folder, _PARTIAL + str(os.getpid()) + "-"))
        _write_keys(archive_path, folder, wheels, sorted(missing | changed))
    record = []
    for relative, (_size, digest) in expected.items():
        found = os.stat(os.path.join(folder, relative))
        record.append((relative, found.st_size, found.st_mtime_ns, digest))
    text = _record_text(tag, record).encode("utf-8")
    marker = (hashlib.sha256(text).hexdigest() + "\n").encode("ascii")
    for name, data in ((_REST_RECORD, text), (_REST_COMPLETE, marker)):
        temporary = os.path.join(folder, name + "." + str(os.getpid()))
        with open(temporary, "wb") as fh:
            fh.write(data)
        os.replace(temporary, os.path.join(folder, name))


class _DeferredFinder(object):
    """Writes a deferred top-level entry when a process imports it before the background child has.

    Placed just before the path finder in ``sys.meta_path``, so that a package of the archive
    not written yet is never found in the interpreter's own site-packages instead: for a
    module of a deferred entry that is not in place it writes that entry (in this process, at
    its own priority, never waiting for the background child), then leaves the finding to the
    path finder, which finds the archive's copy first as always. An entry that cannot be
    written is left to fail (or be found) as it would have been.
    """

    def __init__(self, archive_path, folder, wheels, keys):
        self.archive_path, self.folder, self.wheels = archive_path, folder, wheels
        self.names = {key.split(".", 1)[0]: key for key in keys}

    def find_spec(self, fullname, path=None, target=None):
        key = self.names.pop(fullname.partition(".")[0], None)  # asked once per process
        if key is None or os.path.lexists(os.path.join(self.folder, "site-packages", key)):
            return None
        try:
            _write_keys(self.archive_path, self.folder, self.wheels, [key])
        except Exception:
            return None
        import importlib

        importlib.invalidate_caches()
        return None  # the path finder finds it now


def later(archive_path, folder, tag, wheels, state):
    """After a start: the deferred entries and every module's bytecode, once, in a child of this process.

    Not on the way to the first answer: the child (``_LATER``) runs at the lowest priority and
    ends with this process (``PR_SET_PDEATHSIG``: SIGTERM, on which it lets go of its lock and
    removes the folder it was writing into), and a later start picks up where it stopped. A
    child that finds another start's child at work waits for its lock, then carries on from the
    markers: one that was ended may take a while to let go on a loaded machine, and a child that
    gave up then would leave the rest to a later start.
    It first writes the deferred entries still missing and the marker ``complete.rest``
    (``_finish_rest``); until then this process finds them through ``_DeferredFinder``. Then it
    compiles the whole copy and writes the marker ``bytecode``; until then each process
    compiles what it imports (and writes it, unless ``PYTHONDONTWRITEBYTECODE`` is set).
    """
    if state == "first":
        for finder in sys.meta_path:
            if isinstance(finder, _DeferredFinder) and finder.folder == folder:
                break
        else:
            import importlib.machinery

            finder = _DeferredFinder(archive_path, folder, wheels, _deferred_keys(folder))
            path_finder = importlib.machinery.PathFinder
            at = sys.meta_path.index(path_finder) if path_finder in sys.meta_path else len(sys.meta_path)
            sys.meta_path.insert(at, finder)
    elif os.path.isfile(os.path.join(folder, _BYTECODE)):
        return  # complete and compiled
    if not os.access(folder, os.W_OK):
        return  # a copy made read-only since: used as it is
    import subprocess

    try:
        subprocess.Popen(
            [sys.executable, "-I", "-c", _LATER, folder, str(os.getpid()), archive_path, tag, ",".join(wheels)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            close_fds=True,
        )
    except OSError:
        pass  # only slower starts until one succeeds


_LATER = r"""
import compileall, ctypes, fcntl, os, signal, sys
folder, parent, archive, tag, wheels = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
lock = -1
def ended(signum, frame):  # ended half way: the lock goes at once (a new start's child carries on), its own folder too
    global lock
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # sent again as threads end: the clean-up finishes
    if lock >= 0:
        os.close(lock)
        lock = -1
    sys.exit(128 + signum)
signal.signal(signal.SIGTERM, ended)
try:
    ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG: end with the process that started it
except Exception:
    pass
if os.getppid() != parent:
    sys.exit(0)
os.nice(19)
lock = os.open(folder + ".bytecode_lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
try:
    fcntl.flock(lock, fcntl.LOCK_EX)  # another start's child at it: wait, then carry on from its markers
except OSError:
    sys.exit(0)  # cannot lock here: a later start tries again
if not os.path.isfile(os.path.join(folder, "complete.rest")):
    sys.path.insert(0, archive)
    from _shadowcode_unpack import _finish_rest
    _finish_rest(archive, folder, tag, [w for w in wheels.split(",") if w])
    if not os.path.isfile(os.path.join(folder, "complete.rest")):
        sys.exit(0)
if not os.path.isfile(os.path.join(folder, "bytecode")):
    compileall.compile_dir(os.path.join(folder, "site-packages"), quiet=2, workers=1)
    with open(os.path.join(folder, "bytecode.tmp"), "w") as done:
        done.write("compiled\n")
    os.replace(os.path.join(folder, "bytecode.tmp"), os.path.join(folder, "bytecode"))
"""


def unpack(archive, folder, tag, wheels, first, force):
    """Make ``folder`` an unpacked copy for ``tag`` (its first part at least), once, whatever other processes do.

    Returns ``"full"`` or ``"first"`` (see ``_state``).
    """
    import fcntl
    import hashlib
    import shutil

    folder = str(folder)
    state = None if force else _state(folder, tag)
    if state is not None:
        return state
    parent, name = os.path.split(folder)
    lock = None
    try:
        os.makedirs(parent, exist_ok=True)
        lock = os.open(os.path.join(parent, "." + name + "_lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        fcntl.flock(lock, fcntl.LOCK_EX)
        state = None if force else _state(folder, tag)
        if state is not None:
            return state  # another process unpacked it while this one waited
        if os.path.isfile(os.path.join(folder, _COMPLETE)) and not force:
            sys.stderr.write(
                "shadowcode: the unpacked copy in {} no longer matches its record; unpacking again\n".format(folder)
            )
        partial = os.path.join(parent, name + ".tmp")
        for left in os.listdir(parent):  # left by an interrupted run
            if left == name + ".tmp" or left.startswith(name + _OLD):
                shutil.rmtree(os.path.join(parent, left), ignore_errors=True)
        os.makedirs(partial)
        deferred = set()
        record = _extract(archive, partial, wheels, first=first, deferred=deferred)
        listed = "".join(key + "\n" for key in sorted(deferred)).encode("utf-8")
        with open(os.path.join(partial, _DEFERRED), "wb") as fh:
            fh.write(listed)
        found = os.stat(os.path.join(partial, _DEFERRED))
        record.append((_DEFERRED, found.st_size, found.st_mtime_ns, hashlib.sha256(listed).hexdigest()))
        text = _record_text(tag, record).encode("utf-8")
        with open(os.path.join(partial, _RECORD), "wb") as fh:
            fh.write(text)
        with open(os.path.join(partial, _COMPLETE), "w", encoding="ascii") as done:
            done.write(hashlib.sha256(text).hexdigest() + "\n")
        if not deferred:  # nothing deferred: the rest is complete, and empty
            rest = _record_text(tag, []).encode("utf-8")
            with open(os.path.join(partial, _REST_RECORD), "wb") as fh:
                fh.write(rest)
            with open(os.path.join(partial, _REST_COMPLETE), "w", encoding="ascii") as done:
                done.write(hashlib.sha256(rest).hexdigest() + "\n")
        if os.path.lexists(folder):
            _remove(folder, folder + _OLD)  # half-written or changed since, or SHIV_FORCE_EXTRACT
        os.rename(partial, folder)
    except OSError as exc:
        _fail(
            "cannot unpack the archive into {}: {} (set SHIV_ROOT to a writable folder)".format(
                folder, exc.strerror or exc
            ),
            _UNPACK_FAILED_STATUS,
        )
    finally:
        if lock is not None:
            os.close(lock)
    return "first" if deferred else "full"
