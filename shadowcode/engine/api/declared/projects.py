"""The verbs of the engine API's projects part, as :class:`ProjectVerbs` declares them (ENG-03).

Their request and result types are in :mod:`shadowcode.engine.api.projects`, named here for the
type checker only: :func:`shadowcode.engine.api.verbs` reads the annotations in that module's
names, so declaring the verbs imports none of the types (issue 32). The in-process handlers are
in :mod:`shadowcode.engine.verbs.projects`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shadowcode.engine.api._base import NOBODY, ApiBase, Caller, Empty, verb

if TYPE_CHECKING:
    from shadowcode.engine.api.projects import ProjectInfo, ProjectRef, ProjectTrust, Status

__all__ = ["ProjectVerbs"]


class ProjectVerbs(ApiBase):
    """The verbs of this part of :class:`~shadowcode.engine.api.EngineApi`."""

    @verb("project/get")
    async def project_get(self, request: Empty, caller: Caller = NOBODY) -> ProjectInfo:
        """The caller's project, canonicalized and recorded (untrusted if new) (ENG-02).

        Raises:
            ConfigError: the folder does not exist or is not a folder.
        """
        ...

    @verb("project/trust")
    async def project_trust(self, request: ProjectTrust, caller: Caller = NOBODY) -> ProjectInfo:
        """Trust a project folder at a permission level (ENG-02).

        Raises:
            ConfigError: the folder is not usable.
        """
        ...

    @verb("project/untrust")
    async def project_untrust(self, request: ProjectRef, caller: Caller = NOBODY) -> ProjectInfo:
        """Remove a project's trust; its records stay (ENG-02)."""
        ...

    @verb("project/list")
    async def project_list(self, request: Empty, caller: Caller = NOBODY) -> list[ProjectInfo]:
        """Every trusted project, by path (ENG-02)."""
        ...

    @verb("status/get")
    async def status(self, request: Empty, caller: Caller = NOBODY) -> Status:
        """The caller's project, the profile, the engine and its models (SRV-20)."""
        ...
