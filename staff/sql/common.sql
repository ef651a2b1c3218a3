-- Statements of package staff that PostgreSQL and SQLite run as written.

-- name: insert_audit_entry
-- Appends one line to the audit log, in the transaction of the change it
-- records (a webhook delivery resent), so that both commit or neither does.
INSERT INTO staff_audit (at, actor, address, action, target, outcome, detail)
VALUES ($1, $2, $3, $4, $5, $6, $7)
