"""Entry point: ``python -m shadowcode``, the console script and the zipapp's entry.

``mcp serve`` over stdio takes a fast path of standard-library modules: a relay into the
profile's running headless engine, or, with no engine, the stdio front that answers discovery
at once and runs the full server behind it. Anything else goes to the full CLI.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing itself is too heavy to import on the fast path
if TYPE_CHECKING:
    from collections.abc import Callable

    from shadowcode.mcp.server.discovery import Manifest


_FAST_FLAGS = ("--allow-write", "--allow-approvals", "--approve-in-host", "--approval-page")


def main() -> None:
    """Run the ``shadowcode`` command line; exits the process with the command's status."""
    status = attached_fast_path(sys.argv[1:])
    if status is None:
        status = front_child(sys.argv[1:])
    if status is not None:
        sys.exit(status)
    from shadowcode.cli import run

    run()


def _serve_argv(argv: list[str]) -> tuple[dict[str, str], list[str]] | None:
    """``({"--profile": P, "--workspace": W}, flags)`` for ``[--profile P] [--workspace W] mcp serve [FLAG ...]``.

    None for any other command line, or a flag outside ``--allow-write``, ``--allow-approvals``,
    ``--approve-in-host`` and ``--approval-page`` (the latter only with ``--approve-in-host``).
    """
    options: dict[str, str] = {}
    rest = list(argv)
    while rest and rest[0] in ("--profile", "--workspace"):
        if len(rest) < 2:
            return None
        options[rest[0]] = rest[1]
        rest = rest[2:]
    if rest[:2] != ["mcp", "serve"]:
        return None
    flags = rest[2:]
    if any(f not in _FAST_FLAGS for f in flags) or ("--approval-page" in flags and "--approve-in-host" not in flags):
        return None  # the full CLI refuses --approval-page without --approve-in-host
    return options, flags


def front_child(argv: list[str]) -> int | None:
    """Serve as the stdio front's child without loading the full CLI (issue 32).

    The front (:mod:`shadowcode.mcp.server.front`) starts ``mcp serve`` again, with the same
    arguments, as its child; the child's first tool answer waits for every module it imports,
    and the full CLI (typer and every command's module) is not needed to serve. So the child
    calls :func:`shadowcode.mcp.server.launch.serve_stdio` itself with what the front parsed,
    and reports an error before serving as the CLI would: ``shadowcode: <message>`` on stderr
    and the error's exit status (2 for a bad workspace or profile).

    Returns:
        None (the full CLI runs) unless this process is the front's child and ``argv`` is a
        command line the front serves; else the exit status, when serving failed before it began
        (a served session ends the process itself, SRV-07).
    """
    import os

    from shadowcode.mcp.server import READY_FD_ENV

    parsed = _serve_argv(argv)
    if parsed is None or not os.environ.get(READY_FD_ENV):
        return None
    options, flags = parsed
    from pathlib import Path

    from shadowcode.errors import ShadowcodeError

    try:
        workspace = Path(options["--workspace"]) if "--workspace" in options else Path.cwd()
    except OSError:
        return None  # the working directory is gone: the full CLI says so
    from shadowcode.mcp.server.launch import serve_stdio

    try:
        serve_stdio(
            workspace=workspace,
            profile=options.get("--profile"),
            allow_write="--allow-write" in flags,
            allow_approvals="--allow-approvals" in flags,
            approve_in_host="--approve-in-host" in flags,
            approval_page="--approval-page" in flags,
        )
    except ShadowcodeError as exc:
        from shadowcode.inert_text import inert

        message = inert(exc.message, "\n\t")  # as the full CLI writes it
        sys.stderr.write(f"shadowcode: {message}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    return 0


def attached_fast_path(argv: list[str]) -> int | None:
    """Serve ``[--profile P] [--workspace W] mcp serve [FLAG ...]`` without the full CLI.

    The flags it takes: ``--allow-write``, ``--allow-approvals``, ``--approve-in-host``,
    ``--approval-page``.

    With the profile's headless engine running, stdio is relayed into it
    (:mod:`shadowcode.mcp.server.relay`), which answers discovery from the build-time
    recording until the engine's session answers. Otherwise the stdio front answers discovery at once
    and runs the full server as its child (:mod:`shadowcode.mcp.server.front`), unless
    ``SHADOWCODE_STDIO_FRONT=0`` or this process is that child.

    Returns:
        The exit status, or None to run the full CLI (any other argv, bad values, the front
        turned off): the full CLI then reports errors exactly as usual.
    """
    parsed = _serve_argv(argv)
    if parsed is None:
        return None
    options, flags = parsed
    import os

    from shadowcode.mcp.server import READY_FD_ENV

    if os.environ.get(READY_FD_ENV):
        return None  # the front's child: serve in this process
    from shadowcode.profile_paths import control_socket_for

    try:
        workspace = os.path.realpath(options["--workspace"] if "--workspace" in options else os.getcwd())
    except OSError:  # the working directory is gone: the full CLI says so
        return None
    if not os.path.isdir(workspace):
        return None
    socket_path = control_socket_for(options.get("--profile"))
    if socket_path is None:
        return None
    from shadowcode.mcp.server.discovery import load_manifest

    if not os.path.exists(socket_path):
        return _front(argv, load_manifest)  # read once the front's child is started
    manifest = load_manifest()  # read once: the relay and the front both answer discovery from it
    from shadowcode.mcp.server.relay import try_relay

    status = try_relay(
        socket_path,
        workspace,
        allow_write="--allow-write" in flags,
        allow_approvals="--allow-approvals" in flags,
        approve_in_host="--approve-in-host" in flags,
        approval_page="--approval-page" in flags,
        manifest=manifest,
    )
    if status is not None:
        return status
    return _front(argv, manifest)


def _front(argv: list[str], manifest: Manifest | Callable[[], Manifest | None] | None) -> int | None:
    """Run ``mcp serve`` behind the stdio front; None when it is turned off, has no manifest or cannot run here.

    ``manifest`` may be the function reading it: the front then reads it after starting its child.
    """
    import os

    if os.environ.get("SHADOWCODE_STDIO_FRONT") == "0" or not sys.executable or manifest is None:
        return None
    import zipimport

    from shadowcode.mcp.server.front import serve_front

    main_module = sys.modules.get("__main__")
    spec = getattr(main_module, "__spec__", None)
    if spec is not None and spec.name == "shadowcode.__main__":
        program = ["-m", "shadowcode"]  # python -m shadowcode
    elif sys.argv and sys.argv[0] and isinstance(getattr(main_module, "__loader__", None), zipimport.zipimporter):
        # The archive needs nothing of the interpreter's own site-packages (its bootstrap adds
        # its copy), so its child skips their start-up files (``.pth``): faster, and nothing
        # installed beside the interpreter can stand in for a module of the archive.
        program = ["-S", os.path.abspath(sys.argv[0])]
    elif sys.argv and sys.argv[0]:
        program = [os.path.abspath(sys.argv[0])]  # the console script
    else:
        return None
    return serve_front([sys.executable, *program, *argv], manifest)


if __name__ == "__main__":
    main()
