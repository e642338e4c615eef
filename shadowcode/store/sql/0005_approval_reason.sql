-- Record why an approval expired (ENG-07, ENG-08): its job was cancelled, finished, or its engine
-- died. A later approve or deny of it answers with this reason.
ALTER TABLE approvals ADD COLUMN reason TEXT;
