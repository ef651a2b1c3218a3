-- The schema of CMPay v2 (commit 76863e8) on SQLite, as .schema printed it after the server
-- migrated an empty database.
CREATE TABLE `payments` (`id` text,`client_id` text NOT NULL,`idempotency_key` text NOT NULL,`amount_minor` integer NOT NULL,`currency` text NOT NULL,`method` text NOT NULL,`created_at` datetime NOT NULL,`status` text NOT NULL DEFAULT "CAPTURED",`captured_minor` integer NOT NULL DEFAULT 0,`refunded_minor` integer NOT NULL DEFAULT 0,`captured_at` datetime,`canceled_at` datetime,`replay_count` integer NOT NULL DEFAULT 0,`rejected_count` integer NOT NULL DEFAULT 0,`replayed_at` datetime,`rejected_at` datetime,PRIMARY KEY (`id`),CONSTRAINT `chk_payments_amounts` CHECK (refunded_minor >= 0 AND refunded_minor <= captured_minor AND captured_minor <= amount_minor));
CREATE INDEX `idx_payments_rejected_at` ON `payments`(`created_at`,`id`) WHERE rejected_at IS NOT NULL;
CREATE INDEX `idx_payments_replayed_at` ON `payments`(`created_at`,`id`) WHERE replayed_at IS NOT NULL;
CREATE INDEX `idx_payments_flagged_at` ON `payments`(`created_at`,`id`) WHERE replayed_at IS NOT NULL OR rejected_at IS NOT NULL;
CREATE INDEX `idx_payments_status_created` ON `payments`(`status`,`created_at`,`id`);
CREATE INDEX `idx_payments_key_created` ON `payments`(`idempotency_key`,`created_at`,`id`);
CREATE INDEX `idx_payments_client_created` ON `payments`(`client_id`,`created_at`,`id`);
CREATE INDEX `idx_payments_created` ON `payments`(`created_at`,`id`);
CREATE TABLE `refunds` (`id` text,`payment_id` text NOT NULL,`amount_minor` integer NOT NULL,`reason` text,`idempotency_key` text NOT NULL,`created_at` datetime NOT NULL,PRIMARY KEY (`id`),CONSTRAINT `chk_refunds_amount` CHECK (amount_minor > 0));
CREATE INDEX `idx_refunds_payment` ON `refunds`(`payment_id`,`created_at`);
CREATE TABLE `idempotency_keys` (`id` integer PRIMARY KEY AUTOINCREMENT,`client_id` text NOT NULL,`idempotency_key` text NOT NULL,`operation` text NOT NULL DEFAULT "CREATE_PAYMENT",`fingerprint` blob NOT NULL,`fingerprint_version` integer NOT NULL,`params` text,`payment_id` text NOT NULL,`refund_id` text,`created_at` datetime NOT NULL);
CREATE INDEX `idx_idempotency_keys_created` ON `idempotency_keys`(`created_at`);
CREATE UNIQUE INDEX `idx_idempotency_keys_client_key` ON `idempotency_keys`(`client_id`,`idempotency_key`);
CREATE TABLE `idempotency_attempts` (`id` integer PRIMARY KEY AUTOINCREMENT,`payment_id` text NOT NULL,`operation` text NOT NULL DEFAULT "CREATE_PAYMENT",`outcome` text NOT NULL,`at` datetime NOT NULL,`idempotency_key` text NOT NULL DEFAULT "",`params` text,`held_params` text,`refusal` text NOT NULL DEFAULT "",`refund_id` text,`differing_fields` text NOT NULL DEFAULT "",`attempted_amount_minor` integer,`attempted_currency` text,`attempted_method` text,`transport` text NOT NULL DEFAULT "",`actor` text NOT NULL DEFAULT "",`actor_address` text NOT NULL DEFAULT "");
CREATE INDEX `idx_idempotency_attempts_at` ON `idempotency_attempts`(`at`);
CREATE INDEX `idx_idempotency_attempts_payment` ON `idempotency_attempts`(`payment_id`,`at`);
CREATE TABLE `currencies` (`code` text,`digits` integer NOT NULL,PRIMARY KEY (`code`));
CREATE TABLE `schema_versions` (`version` integer,`applied_at` datetime NOT NULL,PRIMARY KEY (`version`));
CREATE TABLE `api_tokens` (`id` text,`name` text NOT NULL,`client_id` text NOT NULL DEFAULT "",`scopes` text NOT NULL,`token_hash` text NOT NULL,`created_at` datetime NOT NULL,`last_used_at` datetime,`revoked_at` datetime,PRIMARY KEY (`id`));
CREATE UNIQUE INDEX `idx_api_tokens_hash` ON `api_tokens`(`token_hash`);
CREATE TABLE `staff_accounts` (`id` integer PRIMARY KEY AUTOINCREMENT,`username` text NOT NULL,`role` text NOT NULL,`password_hash` text NOT NULL,`must_change_password` numeric NOT NULL DEFAULT false,`disabled` numeric NOT NULL DEFAULT false,`created_at` datetime NOT NULL,`updated_at` datetime NOT NULL,`password_changed_at` datetime NOT NULL,`last_sign_in_at` datetime,`disabled_at` datetime);
CREATE UNIQUE INDEX `idx_staff_accounts_username` ON `staff_accounts`(`username`);
CREATE TABLE `staff_sessions` (`id` text,`account_id` integer NOT NULL,`created_at` datetime NOT NULL,`last_used_at` datetime NOT NULL,`expires_at` datetime NOT NULL,`address` text NOT NULL DEFAULT "",PRIMARY KEY (`id`));
CREATE INDEX `idx_staff_sessions_expires` ON `staff_sessions`(`expires_at`);
CREATE INDEX `idx_staff_sessions_account` ON `staff_sessions`(`account_id`);
CREATE TABLE `staff_audit` (`id` integer PRIMARY KEY AUTOINCREMENT,`at` datetime NOT NULL,`actor` text NOT NULL,`address` text NOT NULL DEFAULT "",`action` text NOT NULL,`target` text NOT NULL DEFAULT "",`outcome` text NOT NULL,`detail` text NOT NULL DEFAULT "");
CREATE INDEX `idx_staff_audit_action_at` ON `staff_audit`(`action`,`at`,`id`);
CREATE INDEX `idx_staff_audit_actor_at` ON `staff_audit`(`actor`,`at`,`id`);
CREATE INDEX `idx_staff_audit_at` ON `staff_audit`(`at`,`id`);
CREATE TABLE `payment_events` (`seq` integer PRIMARY KEY AUTOINCREMENT,`type` text NOT NULL,`at` datetime NOT NULL,`idempotency_key` text NOT NULL,`refund_id` text,`payment_id` text NOT NULL,`client_id` text NOT NULL,`payment_key` text NOT NULL,`amount_minor` integer NOT NULL,`currency` text NOT NULL,`method` text NOT NULL,`payment_created_at` datetime NOT NULL,`status` text NOT NULL,`captured_minor` integer NOT NULL,`refunded_minor` integer NOT NULL,`captured_at` datetime,`canceled_at` datetime,`replay_count` integer NOT NULL,`rejected_count` integer NOT NULL);
CREATE TABLE `event_cursors` (`name` text,`frontier` integer NOT NULL DEFAULT 0,`numbered` text NOT NULL DEFAULT "",`last_id` integer NOT NULL DEFAULT 0,PRIMARY KEY (`name`));
CREATE TABLE `webhook_endpoints` (`id` text,`url` text NOT NULL,`secret` text NOT NULL,`event_types` text NOT NULL DEFAULT "",`client_id` text NOT NULL DEFAULT "",`created_at` datetime NOT NULL,`deleted_at` datetime,PRIMARY KEY (`id`));
CREATE TABLE `webhook_deliveries` (`id` integer PRIMARY KEY AUTOINCREMENT,`event_id` integer NOT NULL,`event_seq` integer NOT NULL,`endpoint_id` text NOT NULL,`status` text NOT NULL,`event_at` datetime NOT NULL,`created_at` datetime NOT NULL,`attempts` integer NOT NULL DEFAULT 0,`retries` integer NOT NULL DEFAULT 0,`next_attempt_at` datetime NOT NULL,`expires_at` datetime,`lease_until` datetime,`claim_token` integer NOT NULL DEFAULT 0,`last_attempt_at` datetime,`last_status` integer NOT NULL DEFAULT 0,`last_error` text NOT NULL DEFAULT "",`delivered_at` datetime);
CREATE INDEX `idx_webhook_deliveries_due` ON `webhook_deliveries`(`next_attempt_at`) WHERE status = 'PENDING';
CREATE INDEX `idx_webhook_deliveries_event` ON `webhook_deliveries`(`event_seq`);
CREATE TABLE `webhook_attempts` (`id` integer PRIMARY KEY AUTOINCREMENT,`delivery_id` integer NOT NULL,`at` datetime NOT NULL,`status` integer NOT NULL,`error` text NOT NULL DEFAULT "",`duration_ms` integer NOT NULL);
CREATE INDEX `idx_webhook_attempts_delivery` ON `webhook_attempts`(`delivery_id`);
CREATE TRIGGER staff_audit_no_update BEFORE UPDATE ON staff_audit
	 BEGIN SELECT RAISE(ABORT, 'the audit log is append-only: UPDATE refused'); END;
CREATE TRIGGER staff_audit_no_delete BEFORE DELETE ON staff_audit
	 BEGIN SELECT RAISE(ABORT, 'the audit log is append-only: DELETE refused'); END;
CREATE INDEX idx_idempotency_attempts_admin
			 ON idempotency_attempts (at, id) WHERE transport = 'admin';
CREATE INDEX idx_idempotency_attempts_admin_actor
			 ON idempotency_attempts (actor, at, id) WHERE transport = 'admin';
