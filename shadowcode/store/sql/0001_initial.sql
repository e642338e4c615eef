-- Projects, trust and the durable records the MCP inspection tools read and write.
CREATE TABLE projects (
    path        TEXT PRIMARY KEY,           -- canonical project path (ENG-02)
    trusted     INTEGER NOT NULL DEFAULT 0,
    level       TEXT NOT NULL DEFAULT 'read_only'
                CHECK (level IN ('read_only', 'workspace', 'elevated')),
    trusted_at  INTEGER,
    created_at  INTEGER NOT NULL
);

CREATE TABLE tasks (
    id          TEXT PRIMARY KEY,
    project     TEXT NOT NULL REFERENCES projects(path),
    owner       TEXT,                       -- owner id, NULL for detached CLI jobs
    mode        TEXT NOT NULL CHECK (mode IN ('build', 'plan', 'review', 'test')),
    status      TEXT NOT NULL,
    prompt      TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
CREATE INDEX tasks_project ON tasks(project, created_at);

CREATE TABLE events (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id     TEXT NOT NULL REFERENCES tasks(id),
    kind        TEXT NOT NULL,
    data        TEXT NOT NULL,              -- JSON object
    at          INTEGER NOT NULL
);
CREATE INDEX events_task ON events(task_id, id);

CREATE TABLE memory (
    project     TEXT NOT NULL REFERENCES projects(path),
    task_id     TEXT NOT NULL DEFAULT '',   -- '' for the project note
    content     TEXT NOT NULL,
    hash        TEXT NOT NULL,
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (project, task_id)
);

CREATE TABLE goals (
    id          TEXT PRIMARY KEY,
    project     TEXT NOT NULL REFERENCES projects(path),
    title       TEXT NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('active', 'done', 'abandoned')),
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
CREATE INDEX goals_project ON goals(project, created_at);

CREATE TABLE goal_progress (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    goal_id     TEXT NOT NULL REFERENCES goals(id),
    note        TEXT NOT NULL,
    at          INTEGER NOT NULL
);

CREATE TABLE blobs (
    sha256      TEXT PRIMARY KEY,
    data        BLOB NOT NULL
);

CREATE TABLE checkpoints (
    id          TEXT PRIMARY KEY,
    project     TEXT NOT NULL REFERENCES projects(path),
    task_id     TEXT NOT NULL REFERENCES tasks(id),
    created_at  INTEGER NOT NULL
);
CREATE INDEX checkpoints_project ON checkpoints(project, created_at);

CREATE TABLE changes (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    checkpoint_id TEXT NOT NULL REFERENCES checkpoints(id),
    project       TEXT NOT NULL,
    task_id       TEXT NOT NULL,
    path          TEXT NOT NULL,            -- relative to the project
    before_sha256 TEXT,                     -- NULL: the file did not exist
    after_sha256  TEXT,                     -- NULL: the file was deleted
    at            INTEGER NOT NULL
);
CREATE INDEX changes_path ON changes(project, path, id);

CREATE TABLE project_maps (
    project     TEXT PRIMARY KEY REFERENCES projects(path),
    map         TEXT NOT NULL,
    saved_at    INTEGER NOT NULL
);
