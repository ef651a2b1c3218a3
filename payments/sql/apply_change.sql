-- apply_change.sql: the one place a capture, cancel or refund changes a
-- payment, run by both dialects (store_postgres.go puts it in its batched
-- statement; store_sqlite.go runs it for one request at a time).
--
-- It is a conditional update whose WHERE is the payment lifecycle, so that
-- the database, not a check in Go, decides whether a change is allowed:
-- concurrent requests on one payment queue on its row lock, and each is
-- judged against the row as the ones before it left it. Refunds can never
-- add up to more than was captured; of a capture and a cancel, one wins.
-- (The check constraint on payments backs this up: models.Payment.)
-- decide.go holds the same rules in Go, to say why a request was refused;
-- rules_test.go checks that the two agree for every status and operation.
--
-- It reads its requests from a relation named target, one row per payment:
--   req_operation   CAPTURE_PAYMENT, CANCEL_PAYMENT or REFUND_PAYMENT
--   req_payment_id  the payment
--   req_amount      the amount in minor units (0 for a cancel): the one
--                   given, or all that was available when the request read
--                   the payment
--   req_all         no amount was given: a refund then applies only if what
--                   is left is still what the request read, so that "refund
--                   all that is left" never refunds a stale figure
--   req_ready       false when an earlier check already stopped the request
--   req_now         the time of the change
-- and returns the changed payments. (SQLite's RETURNING may name only the
-- updated table's columns, and only bare: hence no "p." below.)
UPDATE payments AS p SET
	status = CASE t.req_operation
		WHEN 'CAPTURE_PAYMENT' THEN 'CAPTURED'
		WHEN 'CANCEL_PAYMENT' THEN 'CANCELED'
		WHEN 'REFUND_PAYMENT' THEN CASE
			WHEN p.refunded_minor + t.req_amount = p.captured_minor THEN 'REFUNDED'
			ELSE 'PARTIALLY_REFUNDED' END
		END,
	captured_minor = CASE t.req_operation WHEN 'CAPTURE_PAYMENT' THEN t.req_amount ELSE p.captured_minor END,
	captured_at = CASE t.req_operation WHEN 'CAPTURE_PAYMENT' THEN t.req_now ELSE p.captured_at END,
	canceled_at = CASE t.req_operation WHEN 'CANCEL_PAYMENT' THEN t.req_now ELSE p.canceled_at END,
	refunded_minor = CASE t.req_operation WHEN 'REFUND_PAYMENT' THEN p.refunded_minor + t.req_amount ELSE p.refunded_minor END
FROM target AS t
WHERE p.id = t.req_payment_id AND t.req_ready AND CASE t.req_operation
	-- A capture takes an authorization, for at most what was authorized
	-- (capturing less releases the rest).
	WHEN 'CAPTURE_PAYMENT' THEN p.status = 'AUTHORIZED' AND t.req_amount BETWEEN 1 AND p.amount_minor
	-- A cancel takes an authorization that was not captured.
	WHEN 'CANCEL_PAYMENT' THEN p.status = 'AUTHORIZED'
	-- A refund takes a captured payment, for at most what is left (nothing
	-- once REFUNDED: see the rules in decide.go).
	WHEN 'REFUND_PAYMENT' THEN p.status IN ('CAPTURED', 'PARTIALLY_REFUNDED', 'REFUNDED')
		AND t.req_amount BETWEEN 1 AND p.captured_minor - p.refunded_minor
		AND (NOT t.req_all OR t.req_amount = p.captured_minor - p.refunded_minor)
	ELSE false END
RETURNING {{payment_columns}}
