"""Diagnostics behind ``shadow_doctor`` (SRV-19): read and report, never repair."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread

if TYPE_CHECKING:
    from shadowcode.engine import Engine

__all__ = ["diagnose"]


async def diagnose(engine: Engine, root: Path, *, probe_model: bool = False) -> dict[str, Any]:
    """Check the profile, the store, trust, models and the project.

    Args:
        engine: the open engine.
        root: the canonical project.
        probe_model: also contact the default model (only when asked).

    Returns:
        ``{"checks": [{"name", "status": "ok"|"warn"|"fail", "detail"}], "ok": bool}``; ``ok`` is
        False when any check failed.
    """
    from shadowcode.errors import ShadowcodeError
    from shadowcode.project.doctor import project_checks

    checks: list[dict[str, Any]] = [
        {"name": "python", "status": "ok", "detail": sys.version.split()[0]},
        {"name": "profile", "status": "ok", "detail": f"{engine.profile.name} at {engine.profile.root}"},
    ]
    try:
        todo = engine.store.pending_migrations()
        checks.append(
            {
                "name": "store",
                "status": "ok" if not todo else "fail",
                "detail": "schema current" if not todo else f"pending migrations: {', '.join(todo)}",
            }
        )
    except Exception as exc:  # noqa: BLE001 - a diagnostic reports, it does not raise
        checks.append({"name": "store", "status": "fail", "detail": type(exc).__name__})
    project = engine.projects.get(root)
    checks.append(
        {
            "name": "trust",
            "status": "ok" if project.trusted else "warn",
            "detail": f"trusted at level {project.level}"
            if project.trusted
            else f"untrusted: run `shadowcode trust --level workspace {root}` to allow changes",
        }
    )
    try:
        settings = engine.settings()
        if settings.models:
            checks.append(
                {
                    "name": "models",
                    "status": "ok",
                    "detail": f"{len(settings.models)} configured, "
                    f"default {settings.default_model or settings.models[0].name}",
                }
            )
        else:
            checks.append(
                {
                    "name": "models",
                    "status": "warn",
                    "detail": "no model configured: delegated tasks need one in the profile settings",
                }
            )
    except ShadowcodeError as exc:
        checks.append({"name": "models", "status": "fail", "detail": exc.message})
    if probe_model:
        checks.append(
            {
                "name": "model_probe",
                "status": "warn",
                "detail": "not available in this build: model providers arrive with the task runner",
            }
        )
    checks.extend(await anyio.to_thread.run_sync(project_checks, root))
    return {"checks": checks, "ok": all(c["status"] != "fail" for c in checks)}
