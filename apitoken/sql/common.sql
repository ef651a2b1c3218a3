-- Statements of package apitoken, which PostgreSQL and SQLite run as
-- written.

-- name: insert_token
-- Stores a new token: its id, name, client ('' for every client), scopes
-- (comma-separated), the SHA-256 of its secret, and when it was made.
INSERT INTO api_tokens (id, name, client_id, scopes, token_hash, created_at)
VALUES ($1, $2, $3, $4, $5, $6)

-- name: tokens
-- Every token, revoked ones too, oldest first: `cmpay tokens list` and the
-- admin's tokens page.
SELECT id, name, client_id, scopes, token_hash, created_at, last_used_at, revoked_at
FROM api_tokens ORDER BY created_at, id

-- name: token
-- The token $1, as it is now.
SELECT id, name, client_id, scopes, token_hash, created_at, last_used_at, revoked_at
FROM api_tokens WHERE id = $1

-- name: token_by_hash
-- The token whose secret's SHA-256 is $1: what a request's bearer token is
-- looked up by, through the unique index idx_api_tokens_hash.
SELECT id, name, client_id, scopes, token_hash, created_at, last_used_at, revoked_at
FROM api_tokens WHERE token_hash = $1

-- name: revoke_token
-- Stamps the token $1 revoked at $2 unless it is already: a second
-- revocation keeps the first one's time, and changes no row.
UPDATE api_tokens SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL

-- name: touch_token
-- Records the token $1's use at $2 unless it was recorded after $3 (a
-- minute ago): the condition is repeated here, so that of several servers
-- using the token at once, one writes.
UPDATE api_tokens SET last_used_at = $2
WHERE id = $1 AND (last_used_at IS NULL OR last_used_at <= $3)
