"""Other MCP hosts' configs as ShadowCode definitions: parsing and conversion only (CW-01).

Nothing here reads a file, starts a server or contacts anything: bytes go in, definition bytes
and per-server reasons come out. :mod:`shadowcode.engine.mcp.config_import` reads the files and
registers the definitions.

- :mod:`~shadowcode.mcp.client.imports.formats`: the hosts' files → server entries.
- :mod:`~shadowcode.mcp.client.imports.convert`: one entry → definition bytes, or why not.
- :mod:`~shadowcode.mcp.client.imports.values`: variable references and credential-looking literals.
- :mod:`~shadowcode.mcp.client.imports.fields`: the table of fields this build carries.
- :mod:`~shadowcode.mcp.client.imports.locations`: where each host keeps its config.
"""

from __future__ import annotations

from shadowcode.mcp.client.imports.convert import SSE_REASON, FieldNote, PlannedServer, plan_server
from shadowcode.mcp.client.imports.fields import FIELDS, NOT_SUPPORTED
from shadowcode.mcp.client.imports.formats import HOSTS, ParsedConfig, guess_host, parse_config
from shadowcode.mcp.client.imports.locations import Location, well_known

__all__ = [
    "FIELDS",
    "HOSTS",
    "NOT_SUPPORTED",
    "SSE_REASON",
    "FieldNote",
    "Location",
    "ParsedConfig",
    "PlannedServer",
    "guess_host",
    "parse_config",
    "plan_server",
    "well_known",
]
