-- Delegated work: engines, owners, task settings and results, approvals.
CREATE TABLE engines (
    id          TEXT PRIMARY KEY,
    pid         INTEGER NOT NULL,
    mode        TEXT NOT NULL CHECK (mode IN ('temporary', 'headless')),
    started_at  INTEGER NOT NULL,
    stopped_at  INTEGER
);

CREATE TABLE owners (
    id          TEXT PRIMARY KEY,
    engine_id   TEXT NOT NULL REFERENCES engines(id),
    kind        TEXT NOT NULL,              -- 'stdio', 'gateway', 'relay'
    project     TEXT NOT NULL,
    jobs        INTEGER NOT NULL DEFAULT 0, -- jobs submitted over the owner's lifetime
    opened_at   INTEGER NOT NULL,
    closed_at   INTEGER,
    close_reason TEXT
);

ALTER TABLE tasks ADD COLUMN engine_id TEXT;
ALTER TABLE tasks ADD COLUMN permission_level TEXT NOT NULL DEFAULT 'read_only';
ALTER TABLE tasks ADD COLUMN model TEXT;
ALTER TABLE tasks ADD COLUMN answer TEXT;
ALTER TABLE tasks ADD COLUMN error TEXT;
ALTER TABLE tasks ADD COLUMN finished_at INTEGER;
CREATE INDEX tasks_owner ON tasks(owner, created_at);

CREATE TABLE approvals (
    id          TEXT PRIMARY KEY,
    task_id     TEXT NOT NULL REFERENCES tasks(id),
    owner       TEXT,                       -- the task's owner, NULL for detached CLI jobs
    kind        TEXT NOT NULL,              -- 'command', 'test', 'background', 'mcp_call'
    action      TEXT NOT NULL,              -- JSON: the exact action approved
    status      TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'expired')),
    created_at  INTEGER NOT NULL,
    resolved_at INTEGER,
    resolved_by TEXT
);
CREATE INDEX approvals_status ON approvals(status, created_at);
