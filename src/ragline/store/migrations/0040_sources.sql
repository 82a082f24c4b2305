-- Sources for the agent's routing (issue 18): a collection declared a source, with a
-- description the router reads and the groups that may search it (empty: every caller).
-- Documents keep their own permissions inside every source; these groups only decide
-- which sources a caller may route to at all.
CREATE TABLE sources (
    name        text PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$'),
    description text NOT NULL DEFAULT '',
    groups      text[] NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
