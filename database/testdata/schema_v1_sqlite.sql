-- The schema version 1 of CMPay (commit 82f9e9d) migrated to on SQLite, as .schema printed it.
CREATE TABLE `payments` (`id` text,`client_id` text NOT NULL,`idempotency_key` text NOT NULL,`amount_minor` integer NOT NULL,`currency` text NOT NULL,`method` text NOT NULL,`created_at` datetime NOT NULL,`replay_count` integer NOT NULL DEFAULT 0,`rejected_count` integer NOT NULL DEFAULT 0,`replayed_at` datetime,`rejected_at` datetime,PRIMARY KEY (`id`));
CREATE INDEX `idx_payments_rejected_at` ON `payments`(`created_at`,`id`) WHERE rejected_at IS NOT NULL;
CREATE INDEX `idx_payments_replayed_at` ON `payments`(`created_at`,`id`) WHERE replayed_at IS NOT NULL;
CREATE INDEX `idx_payments_flagged_at` ON `payments`(`created_at`,`id`) WHERE replayed_at IS NOT NULL OR rejected_at IS NOT NULL;
CREATE INDEX `idx_payments_key_created` ON `payments`(`idempotency_key`,`created_at`,`id`);
CREATE INDEX `idx_payments_client_created` ON `payments`(`client_id`,`created_at`,`id`);
CREATE INDEX `idx_payments_created` ON `payments`(`created_at`,`id`);
CREATE TABLE `idempotency_keys` (`id` integer PRIMARY KEY AUTOINCREMENT,`client_id` text NOT NULL,`idempotency_key` text NOT NULL,`fingerprint` blob NOT NULL,`fingerprint_version` integer NOT NULL,`payment_id` text NOT NULL,`created_at` datetime NOT NULL);
CREATE INDEX `idx_idempotency_keys_created` ON `idempotency_keys`(`created_at`);
CREATE UNIQUE INDEX `idx_idempotency_keys_client_key` ON `idempotency_keys`(`client_id`,`idempotency_key`);
CREATE TABLE `idempotency_attempts` (`id` integer PRIMARY KEY AUTOINCREMENT,`payment_id` text NOT NULL,`outcome` text NOT NULL,`at` datetime NOT NULL,`differing_fields` text NOT NULL DEFAULT "",`attempted_amount_minor` integer,`attempted_currency` text,`attempted_method` text,`transport` text NOT NULL DEFAULT "");
CREATE INDEX `idx_idempotency_attempts_at` ON `idempotency_attempts`(`at`);
CREATE INDEX `idx_idempotency_attempts_payment` ON `idempotency_attempts`(`payment_id`,`at`);
