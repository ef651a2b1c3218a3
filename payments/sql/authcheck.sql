-- The reads of old authorizations at their processor (authcheck.go): what
-- a read that finds the authorization standing records. The claim is each
-- dialect's claim_authorizations (postgres.sql, sqlite.sql); what a read
-- that finds it canceled or captured writes is learned.sql's
-- settle_elsewhere.

-- name: authorization_stands
-- Records that the processor said at $2 that payment $1's authorization
-- stands: its next read is due a day later. Nothing when it is no longer
-- AUTHORIZED.
UPDATE payments SET auth_checked_at = $2 WHERE id = $1 AND status = 'AUTHORIZED'
