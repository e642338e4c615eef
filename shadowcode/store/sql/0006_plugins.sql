-- Trusted plugin bundles: the reviewed snapshot (content digest and manifest bytes) of each,
-- by plugin name (CW-12). Enabling one for a project writes an mcp_grants row per server
-- ('plugin:<identity>', at the digest); revoking deletes the row, those grants and catalogs.
CREATE TABLE plugins (
    name        TEXT PRIMARY KEY,
    root        TEXT NOT NULL,              -- the bundle's absolute folder
    digest      TEXT NOT NULL,              -- the content digest reviewed and trusted
    manifest    BLOB NOT NULL,              -- the exact plugin.json bytes of that snapshot
    trusted_at  INTEGER NOT NULL
);
