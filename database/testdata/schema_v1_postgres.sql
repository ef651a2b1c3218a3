-- The schema version 1 of CMPay (commit 82f9e9d) migrated to on PostgreSQL, as pg_dump -s printed it:
-- the upgrade test (database_test.go) builds an old database from it.


CREATE TABLE idempotency_attempts (
    id bigint NOT NULL,
    payment_id character varying(40) NOT NULL,
    outcome character varying(16) NOT NULL,
    at timestamp with time zone NOT NULL,
    differing_fields text DEFAULT ''::text NOT NULL,
    attempted_amount_minor bigint,
    attempted_currency character varying(3),
    attempted_method character varying(16),
    transport character varying(16) DEFAULT ''::character varying NOT NULL
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
    fingerprint bytea NOT NULL,
    fingerprint_version bigint NOT NULL,
    payment_id character varying(40) NOT NULL,
    created_at timestamp with time zone NOT NULL
);

CREATE SEQUENCE idempotency_keys_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE idempotency_keys_id_seq OWNED BY idempotency_keys.id;

CREATE TABLE payments (
    id character varying(40) NOT NULL,
    client_id character varying(100) NOT NULL,
    idempotency_key character varying(100) NOT NULL,
    amount_minor bigint NOT NULL,
    currency character varying(3) NOT NULL,
    method character varying(16) NOT NULL,
    created_at timestamp with time zone NOT NULL,
    replay_count bigint DEFAULT 0 NOT NULL,
    rejected_count bigint DEFAULT 0 NOT NULL,
    replayed_at timestamp with time zone,
    rejected_at timestamp with time zone
)
WITH (fillfactor='90');

ALTER TABLE ONLY idempotency_attempts ALTER COLUMN id SET DEFAULT nextval('idempotency_attempts_id_seq'::regclass);

ALTER TABLE ONLY idempotency_keys ALTER COLUMN id SET DEFAULT nextval('idempotency_keys_id_seq'::regclass);

ALTER TABLE ONLY idempotency_attempts
    ADD CONSTRAINT idempotency_attempts_pkey PRIMARY KEY (id);

ALTER TABLE ONLY idempotency_keys
    ADD CONSTRAINT idempotency_keys_pkey PRIMARY KEY (id);

ALTER TABLE ONLY payments
    ADD CONSTRAINT payments_pkey PRIMARY KEY (id);

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


