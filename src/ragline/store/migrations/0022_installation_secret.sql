-- Per-installation secrets, made once when the schema is created. 'ids' keys the
-- encryption of the ids the HTTP and MCP faces show (documents, chunks, jobs, keys), so
-- the internal sequences stay dense and fast while no caller can count or guess ids.
-- gen_random_uuid() draws from the server's strong random source (two of them: 244 bits).
CREATE TABLE installation_secrets (
    name       text PRIMARY KEY,
    value      bytea NOT NULL CHECK (length(value) >= 16),
    created_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO installation_secrets (name, value)
VALUES ('ids', decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'));
