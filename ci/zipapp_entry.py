"""The entry of ``shadowcode.pyz``: the interpreter check, the attached fast path, then shiv's bootstrap (PKG-01).

``ci/build`` stores this file in the archive as ``__main__.py``, in place of shiv's two-line
entry. In order:

1. The running interpreter and platform are matched against ``_platlib/manifest.json``: the
   archive carries the compiled modules of its dependencies (``_platlib/<wheel>/``) for some
   CPython versions on some Linux machines (glibc). Anything else gets one line on stderr naming
   the interpreter, the platform and the carried set, exit status 2, nothing on stdout. So this
   file must parse on old interpreters too: no f-strings, no annotations.
2. When the profile's headless engine runs, ``mcp serve`` only relays stdio to it (see
   ``shadowcode/mcp/server/relay.py``); that needs a few standard modules and five small modules
   of ours, imported straight from the archive, so nothing is unpacked and no dependency is loaded.
3. Any other command, or no running engine, goes to shiv's bootstrap, with its cache folder keyed
   by the interpreter's tag (``<SHIV_ROOT or ~/.shiv>/shadowcode.pyz_<build id>_cp312-manylinux_x86_64``):
   the pure site-packages and the tag's compiled wheels only (entries of the archive or of its
   inner ``_packed.zip``, read in place, see ``ci/put_zipapp_entry.py``) are unpacked together
   into it once, under a lock, into a temporary folder renamed into place after the record
   ``record.sha256`` (each file's sha256, size and modification time) and the marker
   ``complete`` (the record's sha256) are written. Every start checks the marker, the record's
   digest and each file's size and time; a folder that fails (an interrupted first run, a file
   changed since) is unpacked again, never imported. A folder that cannot be written gets one
   clear line and exit status 1. Bytecode is not compiled on the way to the first answer: a
   low-priority child of the first runs compiles the whole copy once (marker ``bytecode``).
   Two interpreters never share a folder, and shiv's ``SHIV_ROOT``, ``SHIV_FORCE_EXTRACT`` and
   the other variables keep their meaning.
"""

import os
import sys

_SHIV_OVERRIDES = ("SHIV_ENTRY_POINT", "SHIV_CONSOLE_SCRIPT", "SHIV_INTERPRETER")
_MANIFEST = "_platlib/manifest.json"
_PACKED = "_packed.zip"  # what ci/put_zipapp_entry.py packs: every file no start reads
_COMPLETE = "complete"
_RECORD = "record.sha256"
_BYTECODE = "bytecode"
_UNSUPPORTED_STATUS = 2
_UNPACK_FAILED_STATUS = 1


def _fail(message, status):
    """One line on stderr, nothing on stdout, exit ``status``."""
    sys.stderr.write("shadowcode: " + message + "\n")
    sys.stderr.flush()
    sys.exit(status)


def _manifest():
    """``{tag: {"python", "machine", "glibc", "wheels"}}`` from the archive, or None when it cannot be read."""
    path = sys.path[0] + "/" + _MANIFEST
    try:
        data = __loader__.get_data(path)  # noqa: F821  (the zipimporter that ran this file; no zipfile import)
    except Exception:
        try:
            import zipfile

            with zipfile.ZipFile(sys.path[0]) as archive:
                data = archive.read(_MANIFEST)
        except Exception:
            return None
    import json

    try:
        return json.loads(data.decode("utf-8"))["tags"]
    except Exception:
        return None


def _glibc():
    """The C library's version as ``(major, minor)``, or None when it is not glibc."""
    try:
        found = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (AttributeError, ValueError, OSError):
        return None
    parts = found.split()
    if len(parts) != 2 or parts[0] != "glibc":
        return None
    try:
        return tuple(int(n) for n in parts[1].split(".")[:2])
    except ValueError:
        return None


def _version_tuple(text):
    return tuple(int(n) for n in text.split("."))


def _carried(tags):
    """The carried set in words: ``CPython 3.11, 3.12 on Linux aarch64, x86_64 with glibc 2.17 or newer``."""
    pythons = sorted({t["python"] for t in tags.values()}, key=_version_tuple)
    machines = sorted({t["machine"] for t in tags.values()})
    glibc = max((t["glibc"] for t in tags.values()), key=_version_tuple)
    return "CPython {} on Linux {} with glibc {} or newer".format(", ".join(pythons), ", ".join(machines), glibc)


def _interpreter_tag():
    """The tag of the running interpreter, e.g. ``cp312-manylinux_x86_64``; exits 2 when the archive lacks it."""
    implementation = getattr(sys, "implementation", None)
    name = implementation.name if implementation is not None else "Python"
    label = {"cpython": "CPython", "pypy": "PyPy"}.get(name, name) + " %d.%d.%d" % tuple(sys.version_info[:3])
    abi = "cp%d%d" % tuple(sys.version_info[:2]) + ("t" if "t" in getattr(sys, "abiflags", "") else "")
    if abi.endswith("t"):
        label += " (free-threaded)"
    machine = os.uname()[4] if hasattr(os, "uname") else "unknown"
    glibc = _glibc() if sys.platform.startswith("linux") else None
    where = "Linux" if sys.platform.startswith("linux") else sys.platform
    if glibc:
        where += " " + machine + " with glibc %d.%d" % glibc
    else:
        where += " " + machine + (" (no glibc found)" if where == "Linux" else "")
    tag = abi + "-manylinux_" + machine
    tags = _manifest()
    if tags is None:
        _fail("this archive is damaged: it has no readable " + _MANIFEST, _UNSUPPORTED_STATUS)
    wanted = tags.get(tag)
    if name == "cpython" and glibc is not None and wanted and glibc >= _version_tuple(wanted["glibc"]):
        return tag, wanted["wheels"]
    _fail(
        "this archive does not run on {} on {}; it runs on {}".format(label, where, _carried(tags)),
        _UNSUPPORTED_STATUS,
    )


def _attached():
    """The relay's exit status, or None (nothing read or written) when the full command line must run."""
    if any(os.environ.get(name) for name in _SHIV_OVERRIDES):
        return None  # the caller asked shiv for something else
    inside = sys.path[0] + "/site-packages"
    sys.path.insert(0, inside)
    try:
        from shadowcode.__main__ import attached_fast_path

        status = attached_fast_path(sys.argv[1:])
    except ImportError:
        status = None
    if status is None:
        # Forget the copies read from the archive, so the full command line imports every
        # module of ours from shiv's unpacked site-packages, beside its dependencies.
        sys.path.remove(inside)
        for name in [n for n in sys.modules if n == "shadowcode" or n.startswith("shadowcode.")]:
            del sys.modules[name]
    return status


def _extract(archive, into, wheels):
    """Write the archive's ``site-packages/`` and the given ``_platlib/<wheel>/`` trees into ``into/site-packages``.

    They are entries of the archive itself or of its inner zip ``_packed.zip`` (see
    ``ci/put_zipapp_entry.py``), read where it lies inside the archive (it is stored
    uncompressed), never copied out. Returns the record: one ``(path, size, mtime_ns,
    sha256)`` per file written, path relative to ``into``.
    """
    import zipfile

    prefixes = ["site-packages/"] + ["_platlib/" + w + "/" for w in wheels]
    record = []
    _extract_from(archive, into, prefixes, record)
    if _PACKED in archive.namelist():
        with _stored_member(archive, _PACKED) as stored, zipfile.ZipFile(stored) as inner:
            _extract_from(inner, into, prefixes, record)
    return record


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


def _extract_from(archive, into, prefixes, record):
    """Write the files of ``archive`` under one of ``prefixes`` into ``into/site-packages``, each recorded."""
    import hashlib

    made = set()
    for info in archive.infolist():
        name = info.filename
        prefix = next((p for p in prefixes if name.startswith(p)), None)
        if prefix is None or name.endswith(("/", ".pyc")):
            continue  # a folder, or bytecode for imports from inside the archive (never unpacked)
        relative = "site-packages/" + name[len(prefix) :]
        target = os.path.join(into, *relative.split("/"))
        parent = os.path.dirname(target)
        if parent not in made:
            os.makedirs(parent, exist_ok=True)
            made.add(parent)
        data = archive.read(info)
        with open(target, "wb") as dst:
            dst.write(data)
        mode = (info.external_attr >> 16) & 0o777
        if mode:
            os.chmod(target, mode)
        found = os.stat(target)
        record.append((relative, found.st_size, found.st_mtime_ns, hashlib.sha256(data).hexdigest()))


def _record_text(tag, record):
    """The record file's text: the tag, then ``sha256 size mtime_ns path`` per unpacked file, sorted by path."""
    lines = [tag]
    for relative, size, mtime_ns, digest in sorted(record):
        lines.append("{} {} {} {}".format(digest, size, mtime_ns, relative))
    return "\n".join(lines) + "\n"


def _verified(folder, tag):
    """Whether ``folder`` is a complete unpacked copy for ``tag`` that still matches its record.

    The marker ``complete`` holds the sha256 of the record file ``record.sha256``, which holds
    the sha256, size and modification time of every file unpacked. Checked at every start: the
    marker, the record's digest, and each file's size and modification time (a stat per file);
    a file rewritten since the unpack (tampered, truncated by a full disk) no longer matches,
    and the copy is unpacked again. Each file's own sha256 is computed as it is written.
    """
    import hashlib

    try:
        with open(os.path.join(folder, _COMPLETE), "rb") as marker:
            wanted = marker.read().decode("ascii").strip()
        with open(os.path.join(folder, _RECORD), "rb") as fh:
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


def _compile_later(folder):
    """Start the compiling of every unpacked module's bytecode, once, in a child of this process.

    Not on the way to the first answer: the child runs at the lowest priority and dies with
    this process (``PR_SET_PDEATHSIG``), and a later start picks up where it stopped. When it
    has finished it writes the marker ``bytecode``; until then each process compiles what it
    imports (and writes it, unless ``PYTHONDONTWRITEBYTECODE`` is set).
    """
    import subprocess

    if os.path.isfile(os.path.join(folder, _BYTECODE)) or not os.access(folder, os.W_OK):
        return  # compiled, or a copy made read-only since: used as it is
    try:
        subprocess.Popen(
            [sys.executable, "-I", "-c", _COMPILER, folder, str(os.getpid())],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            close_fds=True,
        )
    except OSError:
        pass  # only slower starts until one succeeds


_COMPILER = r"""
import compileall, ctypes, fcntl, os, signal, sys
folder, parent = sys.argv[1], int(sys.argv[2])
try:
    ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG: end with the process that started it
except Exception:
    pass
if os.getppid() != parent:
    sys.exit(0)
os.nice(19)
lock = os.open(folder + ".bytecode_lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
try:
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
except OSError:
    sys.exit(0)  # another process compiles it
if not os.path.isfile(os.path.join(folder, "bytecode")):
    compileall.compile_dir(os.path.join(folder, "site-packages"), quiet=2, workers=1)
    with open(os.path.join(folder, "bytecode.tmp"), "w") as done:
        done.write("compiled\n")
    os.replace(os.path.join(folder, "bytecode.tmp"), os.path.join(folder, "bytecode"))
"""


def _unpack(archive, folder, tag, wheels, force):
    """Make ``folder`` a complete unpacked copy for ``tag``, once, whatever other processes do at the same time."""
    import fcntl
    import hashlib
    import shutil

    folder = str(folder)
    if not force and _verified(folder, tag):
        _compile_later(folder)
        return
    parent, name = os.path.split(folder)
    lock = None
    try:
        os.makedirs(parent, exist_ok=True)
        lock = os.open(os.path.join(parent, "." + name + "_lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not force and _verified(folder, tag):
            _compile_later(folder)
            return  # another process unpacked it while this one waited
        if os.path.isfile(os.path.join(folder, _COMPLETE)) and not force:
            sys.stderr.write(
                "shadowcode: the unpacked copy in {} no longer matches its record; unpacking again\n".format(folder)
            )
        partial = os.path.join(parent, name + ".tmp")
        shutil.rmtree(partial, ignore_errors=True)  # left by an interrupted run
        os.makedirs(partial)
        text = _record_text(tag, _extract(archive, partial, wheels)).encode("utf-8")
        with open(os.path.join(partial, _RECORD), "wb") as fh:
            fh.write(text)
        with open(os.path.join(partial, _COMPLETE), "w", encoding="ascii") as done:
            done.write(hashlib.sha256(text).hexdigest() + "\n")
        if os.path.lexists(folder):
            shutil.rmtree(folder)  # half-written or changed since, or SHIV_FORCE_EXTRACT
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
    _compile_later(folder)


def _bootstrap(tag, wheels):
    """Run shiv's bootstrap with its cache folder keyed by ``tag`` and holding that tag's compiled wheels."""
    import _bootstrap as shiv  # shiv's bootstrap, at the archive's root

    shiv_cache_path = shiv.cache_path

    def cache_path(archive, root_dir, build_id):
        folder = shiv_cache_path(archive, root_dir, build_id)
        folder = folder.with_name(folder.name + "_" + tag)
        _unpack(archive, folder, tag, wheels, force=False)
        return folder

    def extract_site_packages(archive, target_path, compile_pyc=False, compile_workers=0, force=False):
        _unpack(archive, target_path, tag, wheels, force=force)

    shiv.cache_path = cache_path
    shiv.extract_site_packages = extract_site_packages
    shiv.bootstrap()


_tag, _wheels = _interpreter_tag()
_status = _attached()
if _status is not None:
    sys.exit(_status)
_bootstrap(_tag, _wheels)
