"""A profile's settings file, ``settings.json``: its pydantic models (ENG-05, CLI-07, CLI-11).

Apart from :mod:`shadowcode.profile` so that finding a profile's folders, store and sockets
imports no pydantic: :meth:`~shadowcode.profile.Profile.settings` imports this module when it
reads the file (issue 32).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from shadowcode.limits import MCP_INLINE_TOOLS_MAX

__all__ = ["NO_SETTINGS", "McpSettings", "ModelSettings", "Settings"]


class ModelSettings(BaseModel):
    """One configured model provider entry (ENG-05).

    Attributes:
        name: the name tasks select it by.
        provider: ``scripted`` or ``openai``.
        model: the provider's model id (``openai``), or None.
        base_url: OpenAI-compatible endpoint (``openai``), or None.
        script: path of a model script (``scripted``), or None.
        api_key_env: name of the variable or stored secret holding the key; never the key.
        request_log: file that receives one JSON line per model request, or None for
            ``model-requests.jsonl`` in the profile; a relative path is taken from the profile.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    provider: str = Field(pattern="^(scripted|openai)$")
    model: str | None = None
    base_url: str | None = None
    script: str | None = None
    api_key_env: str | None = None
    request_log: str | None = None


class McpSettings(BaseModel):
    """The ``mcp`` section of the settings (CLI-07).

    Attributes:
        inline_tools: external tools offered to a Build task as first-class functions at most;
            past it only ``mcp_tools`` and ``mcp_call`` are offered; 0 turns first-class tools off.
        network_hosts: the network permission of HTTP servers (CLI-11): host names (or
            addresses) outside the loopback interface that enabled HTTP servers may reach, exact
            and case-insensitive. Empty by default: only loopback servers are contacted.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    inline_tools: int = Field(default=MCP_INLINE_TOOLS_MAX, ge=0)
    network_hosts: tuple[str, ...] = ()

    @field_validator("network_hosts")
    @classmethod
    def _hosts(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for host in value:
            if not host or any(c in host for c in "/@*?# \t") or host != host.strip():
                raise ValueError(f"{host!r} is not a host name or address (no scheme, path, port or wildcard)")
        return value


class Settings(BaseModel):
    """A profile's settings file (``settings.json``); unknown keys are refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    models: tuple[ModelSettings, ...] = ()
    default_model: str | None = None
    mcp: McpSettings = McpSettings()


NO_SETTINGS = Settings()
"""The settings of a profile without a settings file."""
