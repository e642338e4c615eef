-- Mark each recorded change as a tool write or as part of a rollback (ENG-06, SRV-19), so the
-- change history tells a restore apart from the writes it undid.
ALTER TABLE changes ADD COLUMN kind TEXT NOT NULL DEFAULT 'write' CHECK (kind IN ('write', 'rollback'));
CREATE INDEX changes_task ON changes(project, task_id, id);
