-- The schema of CMPay v2 (commit 76863e8) on PostgreSQL, as pg_dump --schema-only printed it
-- after the server migrated an empty database (search_path settings and schema names removed).

CREATE FUNCTION staff_audit_append_only() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
	 BEGIN
	   RAISE EXCEPTION 'the audit log is append-only: % refused', TG_OP;

	 END $$;

CREATE TABLE api_tokens (
    id character varying(40) NOT NULL,
    name character varying(100) NOT NULL,
    client_id character varying(100) DEFAULT ''::character varying NOT NULL,
    scopes character varying(200) NOT NULL,
    token_hash character varying(64) NOT NULL,
    created_at timestamp with time zone NOT NULL,
    last_used_at timestamp with time zone,
    revoked_at timestamp with time zone
);

CREATE TABLE currencies (
    code character varying(3) NOT NULL,
    digits bigint NOT NULL
);

CREATE TABLE event_batches (
    last_id bigint NOT NULL,
    first_id bigint NOT NULL,
    seqs bigint[] NOT NULL
);

CREATE TABLE event_cursors (
    name character varying(20) NOT NULL,
    frontier bigint DEFAULT 0 NOT NULL,
    numbered text DEFAULT ''::text NOT NULL,
    last_id bigint DEFAULT 0 NOT NULL
);

CREATE TABLE idempotency_attempts (
    id bigint NOT NULL,
    payment_id character varying(40) NOT NULL,
    operation character varying(20) DEFAULT 'CREATE_PAYMENT'::character varying NOT NULL,
    outcome character varying(16) NOT NULL,
    at timestamp with time zone NOT NULL,
    idempotency_key character varying(100) DEFAULT ''::character varying NOT NULL,
    params text,
    held_params text,
    refusal character varying(32) DEFAULT ''::character varying NOT NULL,
    refund_id character varying(40),
    differing_fields text DEFAULT ''::text NOT NULL,
    attempted_amount_minor bigint,
    attempted_currency character varying(3),
    attempted_method character varying(16),
    transport character varying(16) DEFAULT ''::character varying NOT NULL,
    actor character varying(100) DEFAULT ''::character varying NOT NULL,
    actor_address character varying(64) DEFAULT ''::character varying NOT NULL
);

CREATE SEQUENCE idempotency_attempts_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE idempotency_attempts_id_seq OWNED BY idempotency_attempts.id;

CREATE TABLE idempotency_keys (
    id bigint NOT NULL,
    client_id character varying(100) NOT NULL,
    idempotency_key character varying(100) NOT NULL,
    operation character varying(20) DEFAULT 'CREATE_PAYMENT'::character varying NOT NULL,
    fingerprint bytea NOT NULL,
    fingerprint_version bigint NOT NULL,
    params text,
    payment_id character varying(40) NOT NULL,
    refund_id character varying(40),
    created_at timestamp with time zone NOT NULL
);

CREATE SEQUENCE idempotency_keys_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE idempotency_keys_id_seq OWNED BY idempotency_keys.id;

CREATE TABLE payment_events (
    seq bigint NOT NULL,
    type character varying(24) NOT NULL,
    at timestamp with time zone NOT NULL,
    idempotency_key character varying(100) NOT NULL,
    refund_id character varying(40),
    payment_id character varying(40) NOT NULL,
    client_id character varying(100) NOT NULL,
    payment_key character varying(100) NOT NULL,
    amount_minor bigint NOT NULL,
    currency character varying(3) NOT NULL,
    method character varying(16) NOT NULL,
    payment_created_at timestamp with time zone NOT NULL,
    status character varying(20) NOT NULL,
    captured_minor bigint NOT NULL,
    refunded_minor bigint NOT NULL,
    captured_at timestamp with time zone,
    canceled_at timestamp with time zone,
    replay_count bigint NOT NULL,
    rejected_count bigint NOT NULL
);

CREATE SEQUENCE payment_events_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE payment_events_seq_seq OWNED BY payment_events.seq;

CREATE TABLE payments (
    id character varying(40) NOT NULL,
    client_id character varying(100) NOT NULL,
    idempotency_key character varying(100) NOT NULL,
    amount_minor bigint NOT NULL,
    currency character varying(3) NOT NULL,
    method character varying(16) NOT NULL,
    created_at timestamp with time zone NOT NULL,
    status character varying(20) DEFAULT 'CAPTURED'::character varying NOT NULL,
    captured_minor bigint DEFAULT 0 NOT NULL,
    refunded_minor bigint DEFAULT 0 NOT NULL,
    captured_at timestamp with time zone,
    canceled_at timestamp with time zone,
    replay_count bigint DEFAULT 0 NOT NULL,
    rejected_count bigint DEFAULT 0 NOT NULL,
    replayed_at timestamp with time zone,
    rejected_at timestamp with time zone,
    CONSTRAINT chk_payments_amounts CHECK (((refunded_minor >= 0) AND (refunded_minor <= captured_minor) AND (captured_minor <= amount_minor)))
)
WITH (fillfactor='90');

CREATE TABLE refunds (
    id character varying(40) NOT NULL,
    payment_id character varying(40) NOT NULL,
    amount_minor bigint NOT NULL,
    reason character varying(500),
    idempotency_key character varying(100) NOT NULL,
    created_at timestamp with time zone NOT NULL,
    CONSTRAINT chk_refunds_amount CHECK ((amount_minor > 0))
);

CREATE TABLE schema_versions (
    version bigint NOT NULL,
    applied_at timestamp with time zone NOT NULL
);

CREATE TABLE staff_accounts (
    id bigint NOT NULL,
    username character varying(64) NOT NULL,
    role character varying(16) NOT NULL,
    password_hash character varying(200) NOT NULL,
    must_change_password boolean DEFAULT false NOT NULL,
    disabled boolean DEFAULT false NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    password_changed_at timestamp with time zone NOT NULL,
    last_sign_in_at timestamp with time zone,
    disabled_at timestamp with time zone
);

CREATE SEQUENCE staff_accounts_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE staff_accounts_id_seq OWNED BY staff_accounts.id;

CREATE TABLE staff_audit (
    id bigint NOT NULL,
    at timestamp with time zone NOT NULL,
    actor character varying(100) NOT NULL,
    address character varying(64) DEFAULT ''::character varying NOT NULL,
    action character varying(32) NOT NULL,
    target character varying(200) DEFAULT ''::character varying NOT NULL,
    outcome character varying(16) NOT NULL,
    detail character varying(1000) DEFAULT ''::character varying NOT NULL
);

CREATE SEQUENCE staff_audit_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE staff_audit_id_seq OWNED BY staff_audit.id;

CREATE TABLE staff_sessions (
    id character varying(64) NOT NULL,
    account_id bigint NOT NULL,
    created_at timestamp with time zone NOT NULL,
    last_used_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    address character varying(64) DEFAULT ''::character varying NOT NULL
);

CREATE TABLE webhook_attempts (
    id bigint NOT NULL,
    delivery_id bigint NOT NULL,
    at timestamp with time zone NOT NULL,
    status bigint NOT NULL,
    error character varying(500) DEFAULT ''::character varying NOT NULL,
    duration_ms bigint NOT NULL
);

CREATE SEQUENCE webhook_attempts_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE webhook_attempts_id_seq OWNED BY webhook_attempts.id;

CREATE TABLE webhook_deliveries (
    id bigint NOT NULL,
    event_id bigint NOT NULL,
    event_seq bigint NOT NULL,
    endpoint_id character varying(40) NOT NULL,
    status character varying(16) NOT NULL,
    event_at timestamp with time zone NOT NULL,
    created_at timestamp with time zone NOT NULL,
    attempts bigint DEFAULT 0 NOT NULL,
    retries bigint DEFAULT 0 NOT NULL,
    next_attempt_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone,
    lease_until timestamp with time zone,
    claim_token bigint DEFAULT 0 NOT NULL,
    last_attempt_at timestamp with time zone,
    last_status bigint DEFAULT 0 NOT NULL,
    last_error character varying(500) DEFAULT ''::character varying NOT NULL,
    delivered_at timestamp with time zone
);

CREATE SEQUENCE webhook_deliveries_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE webhook_deliveries_id_seq OWNED BY webhook_deliveries.id;

CREATE TABLE webhook_endpoints (
    id character varying(40) NOT NULL,
    url character varying(2048) NOT NULL,
    secret character varying(100) NOT NULL,
    event_types character varying(200) DEFAULT ''::character varying NOT NULL,
    client_id character varying(100) DEFAULT ''::character varying NOT NULL,
    created_at timestamp with time zone NOT NULL,
    deleted_at timestamp with time zone
);

ALTER TABLE ONLY idempotency_attempts ALTER COLUMN id SET DEFAULT nextval('idempotency_attempts_id_seq'::regclass);

ALTER TABLE ONLY idempotency_keys ALTER COLUMN id SET DEFAULT nextval('idempotency_keys_id_seq'::regclass);

ALTER TABLE ONLY payment_events ALTER COLUMN seq SET DEFAULT nextval('payment_events_seq_seq'::regclass);

ALTER TABLE ONLY staff_accounts ALTER COLUMN id SET DEFAULT nextval('staff_accounts_id_seq'::regclass);

ALTER TABLE ONLY staff_audit ALTER COLUMN id SET DEFAULT nextval('staff_audit_id_seq'::regclass);

ALTER TABLE ONLY webhook_attempts ALTER COLUMN id SET DEFAULT nextval('webhook_attempts_id_seq'::regclass);

ALTER TABLE ONLY webhook_deliveries ALTER COLUMN id SET DEFAULT nextval('webhook_deliveries_id_seq'::regclass);

ALTER TABLE ONLY api_tokens
    ADD CONSTRAINT api_tokens_pkey PRIMARY KEY (id);

ALTER TABLE ONLY currencies
    ADD CONSTRAINT currencies_pkey PRIMARY KEY (code);

ALTER TABLE ONLY event_batches
    ADD CONSTRAINT event_batches_pkey PRIMARY KEY (last_id);

ALTER TABLE ONLY event_cursors
    ADD CONSTRAINT event_cursors_pkey PRIMARY KEY (name);

ALTER TABLE ONLY idempotency_attempts
    ADD CONSTRAINT idempotency_attempts_pkey PRIMARY KEY (id);

ALTER TABLE ONLY idempotency_keys
    ADD CONSTRAINT idempotency_keys_pkey PRIMARY KEY (id);

ALTER TABLE ONLY payment_events
    ADD CONSTRAINT payment_events_pkey PRIMARY KEY (seq);

ALTER TABLE ONLY payments
    ADD CONSTRAINT payments_pkey PRIMARY KEY (id);

ALTER TABLE ONLY refunds
    ADD CONSTRAINT refunds_pkey PRIMARY KEY (id);

ALTER TABLE ONLY schema_versions
    ADD CONSTRAINT schema_versions_pkey PRIMARY KEY (version);

ALTER TABLE ONLY staff_accounts
    ADD CONSTRAINT staff_accounts_pkey PRIMARY KEY (id);

ALTER TABLE ONLY staff_audit
    ADD CONSTRAINT staff_audit_pkey PRIMARY KEY (id);

ALTER TABLE ONLY staff_sessions
    ADD CONSTRAINT staff_sessions_pkey PRIMARY KEY (id);

ALTER TABLE ONLY webhook_attempts
    ADD CONSTRAINT webhook_attempts_pkey PRIMARY KEY (id);

ALTER TABLE ONLY webhook_deliveries
    ADD CONSTRAINT webhook_deliveries_pkey PRIMARY KEY (id);

ALTER TABLE ONLY webhook_endpoints
    ADD CONSTRAINT webhook_endpoints_pkey PRIMARY KEY (id);

CREATE UNIQUE INDEX idx_api_tokens_hash ON api_tokens USING btree (token_hash);

CREATE INDEX idx_idempotency_attempts_admin ON idempotency_attempts USING btree (at, id) WHERE ((transport)::text = 'admin'::text);

CREATE INDEX idx_idempotency_attempts_admin_actor ON idempotency_attempts USING btree (actor, at, id) WHERE ((transport)::text = 'admin'::text);

CREATE INDEX idx_idempotency_attempts_at ON idempotency_attempts USING btree (at);

CREATE INDEX idx_idempotency_attempts_payment ON idempotency_attempts USING btree (payment_id, at);

CREATE UNIQUE INDEX idx_idempotency_keys_client_key ON idempotency_keys USING btree (client_id, idempotency_key);

CREATE INDEX idx_idempotency_keys_created ON idempotency_keys USING btree (created_at);

CREATE INDEX idx_payments_client_created ON payments USING btree (client_id, created_at, id);

CREATE INDEX idx_payments_created ON payments USING btree (created_at, id);

CREATE INDEX idx_payments_flagged_at ON payments USING btree (created_at, id) WHERE ((replayed_at IS NOT NULL) OR (rejected_at IS NOT NULL));

CREATE INDEX idx_payments_key_created ON payments USING btree (idempotency_key, created_at, id);

CREATE INDEX idx_payments_rejected_at ON payments USING btree (created_at, id) WHERE (rejected_at IS NOT NULL);

CREATE INDEX idx_payments_replayed_at ON payments USING btree (created_at, id) WHERE (replayed_at IS NOT NULL);

CREATE INDEX idx_payments_status_created ON payments USING btree (status, created_at, id);

CREATE INDEX idx_refunds_payment ON refunds USING btree (payment_id, created_at);

CREATE UNIQUE INDEX idx_staff_accounts_username ON staff_accounts USING btree (username);

CREATE INDEX idx_staff_audit_action_at ON staff_audit USING btree (action, at, id);

CREATE INDEX idx_staff_audit_actor_at ON staff_audit USING btree (actor, at, id);

CREATE INDEX idx_staff_audit_at ON staff_audit USING btree (at, id);

CREATE INDEX idx_staff_sessions_account ON staff_sessions USING btree (account_id);

CREATE INDEX idx_staff_sessions_expires ON staff_sessions USING btree (expires_at);

CREATE INDEX idx_webhook_attempts_delivery ON webhook_attempts USING btree (delivery_id);

CREATE INDEX idx_webhook_deliveries_due ON webhook_deliveries USING btree (next_attempt_at) WHERE ((status)::text = 'PENDING'::text);

CREATE INDEX idx_webhook_deliveries_event ON webhook_deliveries USING btree (event_seq);

CREATE TRIGGER staff_audit_append_only BEFORE DELETE OR UPDATE ON staff_audit FOR EACH ROW EXECUTE FUNCTION staff_audit_append_only();

CREATE TRIGGER staff_audit_no_truncate BEFORE TRUNCATE ON staff_audit FOR EACH STATEMENT EXECUTE FUNCTION staff_audit_append_only();