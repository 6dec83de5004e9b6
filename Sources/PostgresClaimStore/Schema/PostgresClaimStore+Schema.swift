extension PostgresClaimStore {
    /// The claims' schema, version by version. Run by every ``PostgresClaimStore/init(pool:)``;
    /// see ``PostgresMigrations`` for how servers starting together share the work.
    public static let migrations = PostgresMigrations(component: "idempotency_keys", versions: [
        [
            """
            CREATE TABLE idempotency_keys (
                business_id      text        NOT NULL,
                operation_type   text        NOT NULL,
                key              text        NOT NULL,
                fingerprint      bytea       NOT NULL CHECK (length(fingerprint) = 32),
                status           text        NOT NULL CHECK (status IN ('in_progress', 'completed')),
                token            uuid,
                lease_expires_at timestamptz,
                taken_at         timestamptz NOT NULL,
                completed_at     timestamptz,
                response_status  integer,
                response_headers jsonb,
                response_body    bytea,
                PRIMARY KEY (business_id, operation_type, key),
                CHECK (status <> 'in_progress' OR (token IS NOT NULL AND lease_expires_at IS NOT NULL AND completed_at IS NULL)),
                CHECK (status <> 'completed' OR (token IS NULL AND completed_at IS NOT NULL AND response_status IS NOT NULL
                                                 AND response_headers IS NOT NULL AND response_body IS NOT NULL))
            )
            """,
            "CREATE INDEX idempotency_keys_completed ON idempotency_keys (completed_at) WHERE status = 'completed'",
            "CREATE INDEX idempotency_keys_leases ON idempotency_keys (lease_expires_at) WHERE status = 'in_progress'",
        ],
    ])
}
