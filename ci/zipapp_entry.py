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
   the pure site-packages and the tag's compiled wheels (entries of the archive or of its inner
   ``_packed.zip``, see ``ci/put_zipapp_entry.py``) are unpacked together into it once, with
   every module's bytecode compiled, under a lock, into a temporary folder renamed into place
   after a ``complete`` marker is written. A
   folder without the marker (an interrupted first run) is unpacked again; a folder that cannot be
   written gets one clear line and exit status 1. Two interpreters never share a folder, and
   shiv's ``SHIV_ROOT``, ``SHIV_FORCE_EXTRACT`` and the other variables keep their meaning.
"""

import os
import sys

_SHIV_OVERRIDES = ("SHIV_ENTRY_POINT", "SHIV_CONSOLE_SCRIPT", "SHIV_INTERPRETER")
_MANIFEST = "_platlib/manifest.json"
_PACKED = "_packed.zip"  # what ci/put_zipapp_entry.py packs: every file no start reads
_COMPLETE = "complete"
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
    ``ci/put_zipapp_entry.py``), which is copied into ``into`` to be read and removed after.
    """
    import shutil
    import zipfile

    prefixes = ["site-packages/"] + ["_platlib/" + w + "/" for w in wheels]
    _extract_from(archive, into, prefixes)
    if _PACKED in archive.namelist():
        os.makedirs(into, exist_ok=True)
        packed = os.path.join(into, _PACKED)
        with archive.open(_PACKED) as src, open(packed, "wb") as dst:
            shutil.copyfileobj(src, dst)
        with zipfile.ZipFile(packed) as inner:
            _extract_from(inner, into, prefixes)
        os.remove(packed)


def _extract_from(archive, into, prefixes):
    """Write the files of ``archive`` under one of ``prefixes`` into ``into/site-packages``, modes kept."""
    import shutil

    for info in archive.infolist():
        name = info.filename
        prefix = next((p for p in prefixes if name.startswith(p)), None)
        if prefix is None or name.endswith(("/", ".pyc")):
            continue  # a folder, or bytecode for imports from inside the archive (never unpacked)
        target = os.path.join(into, "site-packages", *name[len(prefix) :].split("/"))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with archive.open(info) as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst)
        mode = (info.external_attr >> 16) & 0o777
        if mode:
            os.chmod(target, mode)


def _compile(into):
    """Write the bytecode of every unpacked module once, as pip does at install.

    Without it the interpreter writes each module's bytecode at its first import, unless
    ``PYTHONDONTWRITEBYTECODE`` is set (as in many container images): then every start compiled
    each module it imported again, about 0.3 s of CPU for a CLI command. Nothing is printed.
    """
    import compileall

    compileall.compile_dir(os.path.join(into, "site-packages"), quiet=2, workers=1)


def _unpack(archive, folder, tag, wheels, force):
    """Make ``folder`` a complete unpacked copy for ``tag``, once, whatever other processes do at the same time."""
    import fcntl
    import shutil

    marker = os.path.join(str(folder), _COMPLETE)
    if os.path.isfile(marker) and not force:
        return
    parent, name = os.path.split(str(folder))
    lock = None
    try:
        os.makedirs(parent, exist_ok=True)
        lock = os.open(os.path.join(parent, "." + name + "_lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.isfile(marker) and not force:
            return  # another process unpacked it while this one waited
        partial = os.path.join(parent, name + ".tmp")
        shutil.rmtree(partial, ignore_errors=True)  # left by an interrupted run
        _extract(archive, partial, wheels)
        _compile(partial)
        with open(os.path.join(partial, _COMPLETE), "w", encoding="utf-8") as done:
            done.write(tag + "\n")
        if os.path.lexists(str(folder)):
            shutil.rmtree(str(folder))  # half-written by an older run, or SHIV_FORCE_EXTRACT
        os.rename(partial, str(folder))
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
