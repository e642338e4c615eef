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
   inner ``_packed.zip``, read in place, see ``ci/put_zipapp_entry.py``) are unpacked into it
   by ``_shadowcode_unpack`` (``ci/zipapp_unpack.py``, at the archive's root, imported only
   here): first, under a lock, the packages the manifest names ``first`` (what the stdio
   server's first tool call imports), into a temporary folder renamed into place after the
   record ``record.sha256`` (each file's sha256, size and modification time) and the marker
   ``complete`` (the record's sha256) are written; the other packages afterwards, by a
   low-priority child or by the process that imports one first, with their own record and
   marker. Every start checks the markers, the records' digests and each file's size and time;
   a folder that fails (an interrupted first run, a file changed since) is unpacked again,
   never imported. A folder that cannot be written gets one clear line and exit status 1.
   Bytecode is not compiled on the way to the first answer: the same low-priority child
   compiles the whole copy once (marker ``bytecode``). Two interpreters never share a folder,
   and shiv's ``SHIV_ROOT``, ``SHIV_FORCE_EXTRACT`` and the other variables keep their meaning.
"""

import os
import sys

_SHIV_OVERRIDES = ("SHIV_ENTRY_POINT", "SHIV_CONSOLE_SCRIPT", "SHIV_INTERPRETER")
_MANIFEST = "_platlib/manifest.json"
_UNSUPPORTED_STATUS = 2
# environment.json settings the direct start does not apply itself: any set, shiv's bootstrap runs
_SHIV_SETTINGS_OFF = (
    "script",
    "preamble",
    "no_modify",
    "hashes",
    "extend_pythonpath",
    "prepend_pythonpath",
    "always_write_cache",
)


def _fail(message, status):
    """One line on stderr, nothing on stdout, exit ``status``."""
    sys.stderr.write("shadowcode: " + message + "\n")
    sys.stderr.flush()
    sys.exit(status)


def _manifest():
    """The manifest, ``{"tags": {tag: {"python", "machine", "glibc", "wheels"}}, "first": [...]}``, or None."""
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
        found = json.loads(data.decode("utf-8"))
        found["tags"].items()
        return found
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
    """``(tag, wheels, first)``: the running interpreter's tag (``cp312-manylinux_x86_64``), its wheels, and the
    top-level packages to unpack first (None: none is deferred); exits 2 when the archive lacks the tag.
    """
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
    manifest = _manifest()
    if manifest is None:
        _fail("this archive is damaged: it has no readable " + _MANIFEST, _UNSUPPORTED_STATUS)
    tags = manifest["tags"]
    wanted = tags.get(tag)
    if name == "cpython" and glibc is not None and wanted and glibc >= _version_tuple(wanted["glibc"]):
        first = manifest.get("first")
        return tag, wanted["wheels"], frozenset(first) if isinstance(first, list) else None
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


def _environment():
    """The archive's ``environment.json`` (shiv's build settings) as a dict, or None when unreadable."""
    try:
        data = __loader__.get_data(sys.path[0] + "/environment.json")  # noqa: F821
        import json

        found = json.loads(data.decode("utf-8"))
    except Exception:
        return None
    return found if isinstance(found, dict) else None


def _direct(tag, wheels):
    """Run the command from a verified unpacked copy without importing shiv's bootstrap (exits); None when shiv must.

    What shiv's bootstrap does for this archive's own settings, without its module (which
    imports compileall, hashlib, subprocess, typing and code, and is compiled from source at
    every start: 20 to 30 ms of CPU, on the way to the stdio front's child's first answer
    too, issue 32): the same cache folder, the
    same check of it (``_shadowcode_unpack.unpacked``: markers, records, each file's size and
    time), the same ``site.addsitedir`` and ``sys.path`` order, the same entry point. Only
    when the copy is already complete enough to serve (else None: shiv's bootstrap unpacks),
    no ``SHIV_`` variable but ``SHIV_ROOT`` is set, and ``environment.json`` holds the
    settings ``ci/build`` gives (an entry point ``module:function``; no script, preamble, hashes
    check or path changes).
    """
    if any(name.startswith("SHIV_") and name != "SHIV_ROOT" for name in os.environ):
        return None
    env = _environment()
    entry = env.get("entry_point") if env is not None else None
    if (
        not isinstance(entry, str)
        or ":" not in entry
        or not isinstance(env.get("build_id"), str)
        or any(env.get(name) for name in _SHIV_SETTINGS_OFF)
    ):
        return None
    from pathlib import Path  # imported by the command anyway

    from _shadowcode_unpack import later, unpacked  # ci/zipapp_unpack.py, at the archive's root

    # shiv's cache_path, then this entry's tag suffix (see _bootstrap)
    root = os.environ.get("SHIV_ROOT", env.get("root"))
    if root:
        if root.startswith("$"):
            root = os.environ.get(root[1:], root[1:])
        root = Path(root).expanduser()
    root = root or Path("~/.shiv").expanduser()
    folder = root / (Path(sys.argv[0]).resolve().name + "_" + env["build_id"] + "_" + tag)
    state = unpacked(str(folder), tag)
    if state is None:
        return None
    later(os.path.abspath(sys.argv[0]), str(folder), tag, wheels, state)
    import site

    # shiv's bootstrap from here: its site-packages first among the site folders
    length = len(sys.path)
    index = next((i for i, part in enumerate(sys.path) if Path(part).stem in ("site-packages", "dist-packages")), None)
    index = index or length
    site.addsitedir(folder / "site-packages")
    sys.path = sys.path[:index] + sys.path[length:] + sys.path[index:length]
    module, _, name = entry.partition(":")
    sys.exit(getattr(__import__(module, fromlist=[name]), name)())  # as shiv's run(): never falls through


def _bootstrap(tag, wheels, first):
    """Run shiv's bootstrap with its cache folder keyed by ``tag`` and holding that tag's compiled wheels."""
    import _bootstrap as shiv  # shiv's bootstrap, at the archive's root
    from _shadowcode_unpack import later, unpack  # ci/zipapp_unpack.py, at the archive's root

    shiv_cache_path = shiv.cache_path

    def cache_path(archive, root_dir, build_id):
        folder = shiv_cache_path(archive, root_dir, build_id)
        folder = folder.with_name(folder.name + "_" + tag)
        state = unpack(archive, folder, tag, wheels, first, force=False)
        later(os.path.abspath(archive.filename), str(folder), tag, wheels, state)
        return folder

    def extract_site_packages(archive, target_path, compile_pyc=False, compile_workers=0, force=False):
        state = unpack(archive, target_path, tag, wheels, first, force=force)
        later(os.path.abspath(archive.filename), str(target_path), tag, wheels, state)

    shiv.cache_path = cache_path
    shiv.extract_site_packages = extract_site_packages
    shiv.bootstrap()


if __name__ == "__main__":
    _tag, _wheels, _first = _interpreter_tag()
    _status = _attached()
    if _status is None:
        _direct(_tag, _wheels)
    if _status is not None:
        sys.exit(_status)
    _bootstrap(_tag, _wheels, _first)
