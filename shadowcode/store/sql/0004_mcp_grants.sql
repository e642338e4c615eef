-- External MCP servers: global registrations, per-project grants bound to a content hash,
-- and the tool catalog each definition hash last reported (CLI-01, CLI-02, CLI-05, CLI-08).
CREATE TABLE mcp_definitions (
    name        TEXT PRIMARY KEY,           -- the id is 'config:' || name
    content     BLOB NOT NULL,              -- the exact registered bytes
    format      TEXT NOT NULL CHECK (format IN ('json', 'yaml')),
    sha256      TEXT NOT NULL,
    added_at    INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);

CREATE TABLE mcp_grants (
    project       TEXT NOT NULL REFERENCES projects(path),
    definition_id TEXT NOT NULL,            -- 'config:NAME' or 'project:<relative path>'
    sha256        TEXT NOT NULL,            -- the reviewed content hash
    granted_at    INTEGER NOT NULL,
    PRIMARY KEY (project, definition_id)
);
CREATE INDEX mcp_grants_definition ON mcp_grants(definition_id);

CREATE TABLE mcp_catalogs (
    project       TEXT NOT NULL,            -- '' for global definitions, else the canonical project
    definition_id TEXT NOT NULL,
    sha256        TEXT NOT NULL,
    tools         TEXT NOT NULL,            -- JSON array of tools, configured values redacted
    fetched_at    INTEGER NOT NULL,
    PRIMARY KEY (project, definition_id, sha256)
);
