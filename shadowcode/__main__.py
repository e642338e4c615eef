"""Entry point: ``python -m shadowcode``, the console script and the zipapp's entry.

``mcp serve`` over stdio first tries the attached fast path (a stdlib-only relay into the
profile's running headless engine); anything else, or no engine, goes to the full CLI.
"""

from __future__ import annotations

import sys


def main() -> None:
    """Run the ``shadowcode`` command line; exits the process with the command's status."""
    status = attached_fast_path(sys.argv[1:])
    if status is not None:
        sys.exit(status)
    from shadowcode.cli import run

    run()


def attached_fast_path(argv: list[str]) -> int | None:
    """Relay ``[--profile P] [--workspace W] mcp serve [--allow-write] [--allow-approvals]`` when possible.

    Returns the relay's exit status, or None to run the full CLI (any other argv, bad values,
    no running engine): the full CLI then reports errors exactly as usual.
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
    if any(f not in ("--allow-write", "--allow-approvals") for f in flags):
        return None
    import os

    from shadowcode.profile_paths import control_socket_for

    try:
        workspace = os.path.realpath(options["--workspace"] if "--workspace" in options else os.getcwd())
    except OSError:  # the working directory is gone: the full CLI says so
        return None
    if not os.path.isdir(workspace):
        return None
    socket_path = control_socket_for(options.get("--profile"))
    if socket_path is None or not os.path.exists(socket_path):
        return None
    from shadowcode.mcp.server.relay import try_relay

    return try_relay(
        socket_path, workspace, allow_write="--allow-write" in flags, allow_approvals="--allow-approvals" in flags
    )


if __name__ == "__main__":
    main()
