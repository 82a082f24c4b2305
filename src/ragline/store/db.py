"""Connections, schema migrations and the choice between embedded and external PostgreSQL.

All ragline tables live in one PostgreSQL schema (default ``ragline``), so ragline can
share a production database with other applications, and tests can isolate themselves
in schemas of their own. Connections come from a small pool; auto-prepare is off
(``prepare_threshold=None``) so per-query ``SET LOCAL`` for HNSW takes effect, and JIT
is off for the short queries ragline runs. The BM25 leg's fixed statements are prepared
explicitly (``Database.prepare``; ``prepared_statements = false`` turns it off behind a
pooler that cannot keep them).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any

from ..core.errors import ConfigError, StoreError

DEFAULT_SCHEMA = "ragline"
_SCHEMA_RE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_MIGRATION_LOCK = 0x7261676C  # 'ragl': one migrator at a time per database
_PREPARE_ONLY_WHEN_ASKED = 2**62
"""A connection's ``prepare_threshold`` when statements may be prepared: only those
executed with ``prepare=True`` are (psycopg's automatic preparation after N runs stays
off)."""


def migrations() -> list[tuple[int, str, str]]:
    """(version, name, sql) of every bundled migration, in order."""
    out = []
    for entry in resources.files("ragline.store").joinpath("migrations").iterdir():
        m = re.match(r"^(\d{4})_(\w+)\.sql$", entry.name)
        if m:
            out.append((int(m.group(1)), m.group(2), entry.read_text(encoding="utf-8")))
    return sorted(out)


class Database:
    """A pool of connections to one PostgreSQL database and one ragline schema."""

    def __init__(
        self, url: str, *, schema: str = DEFAULT_SCHEMA, max_size: int = 4, prepare: bool = True
    ) -> None:
        if not _SCHEMA_RE.match(schema):
            raise ConfigError(
                f"invalid schema name {schema!r}: use lower-case letters, digits and _"
            )
        self.url = url
        self.schema = schema
        self._ext_schema = "public"
        self.distributed = False  # a Citus coordinator (see ragline.store.distribution)
        self.prepare = prepare
        """Whether the BM25 leg prepares its fixed statements on each connection (parsed
        once per connection instead of per query, and planned generically where PostgreSQL
        finds that as good: the leg's p50 up to 19 % lower at 100k chunks; bench/README, stop
        38). Off for a pooler in transaction mode that does not
        track prepared statements (PgBouncer before 1.21, or ``max_prepared_statements =
        0``): another client's session would not have them."""
        self._check_and_migrate()
        from psycopg_pool import ConnectionPool

        self.pool = ConnectionPool(
            url,
            min_size=1,
            max_size=max_size,
            kwargs={"prepare_threshold": None, "autocommit": False},
            configure=self._configure,
            open=True,
            timeout=60,
        )

    # -- connections -----------------------------------------------------------------
    def _connect_raw(self) -> Any:
        import psycopg

        try:
            return psycopg.connect(
                self.url, prepare_threshold=None, autocommit=True, connect_timeout=30
            )
        except psycopg.OperationalError as exc:
            raise StoreError(
                f"cannot connect to PostgreSQL at {_redact(self.url)}: {str(exc).strip()}; "
                "check RAGLINE_DATABASE_URL (or unset it to use the embedded server)"
            ) from exc

    def _configure(self, conn: Any) -> None:
        from pgvector.psycopg.vector import register_vector_info
        from psycopg.types import TypeInfo

        conn.autocommit = True
        # psycopg prepares a statement asked to (``prepare=True``) only on a connection with
        # a threshold; one no statement reaches keeps auto-prepare off for the rest
        conn.prepare_threshold = _PREPARE_ONLY_WHEN_ASKED if self.prepare else None
        conn.execute(f"SET search_path = {self.schema}, {self._ext_schema}")
        conn.execute("SET jit = off")
        if self.distributed:
            # SET LOCAL (hnsw.iterative_scan, ef_search) must reach the workers
            conn.execute("SET citus.propagate_set_commands = 'local'")
            # a statement touching many shards (DDL, a reference table's cascade, an admin
            # listing) uses one connection per node, so it may follow other statements
            # of the same transaction (tenant queries route to one shard and are unaffected)
            conn.execute("SET citus.multi_shard_modify_mode = 'sequential'")
        info = TypeInfo.fetch(conn, "vector")
        if info is None:  # pragma: no cover - migrations create it
            raise StoreError("the pgvector extension is not installed in this database")
        register_vector_info(conn, info)
        conn.autocommit = False

    @contextmanager
    def connection(self) -> Iterator[Any]:
        """A pooled connection; the block is one transaction (commit on success)."""
        if not self.distributed:
            with self.pool.connection() as conn:
                yield conn
            return
        import psycopg

        try:
            with self.pool.connection() as conn:
                yield conn
        except psycopg.Error as exc:
            err = _node_error(exc)
            if err is None:
                raise
            raise err from exc

    def close(self) -> None:
        self.pool.close()

    # -- schema ----------------------------------------------------------------------
    def _check_and_migrate(self) -> None:

        conn = self._connect_raw()
        try:
            version = conn.info.server_version
            if version < 150000:
                raise StoreError(
                    f"PostgreSQL {version // 10000} is too old: ragline needs PostgreSQL >= 15 with pgvector >= 0.8"
                )
            conn.autocommit = False
            with conn.transaction():
                # One process at a time creates the extension and applies migrations.
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
                self._ensure_vector(conn)
                self._migrate(conn)
        finally:
            conn.close()

    def _ensure_vector(self, conn: Any) -> None:
        import psycopg

        row = conn.execute(
            "SELECT n.nspname, e.extversion FROM pg_extension e "
            "JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'"
        ).fetchone()
        if row is None:
            try:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
            except psycopg.Error as exc:
                raise StoreError(
                    "the pgvector extension is missing and could not be created "
                    f"({str(exc).strip()}); ask an administrator to run CREATE EXTENSION vector"
                ) from exc
            row = conn.execute(
                "SELECT n.nspname, e.extversion FROM pg_extension e "
                "JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'"
            ).fetchone()
        self._ext_schema, ext_version = row
        if tuple(int(p) for p in ext_version.split(".")[:2]) < (0, 8):
            raise StoreError(
                f"pgvector {ext_version} is too old: ragline needs >= 0.8 (ALTER EXTENSION vector UPDATE)"
            )

    def _migrate(self, conn: Any) -> None:
        """Apply the bundled migrations not yet applied (caller holds the migration lock)."""
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {self.schema}")
        conn.execute(f"SET LOCAL search_path = {self.schema}, {self._ext_schema}")
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " version integer PRIMARY KEY, name text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now())"
        )
        done = {r[0] for r in conn.execute("SELECT version FROM schema_migrations")}
        known = migrations()
        newest = max((v for v, _, _ in known), default=0)
        if done and max(done) > newest:
            raise StoreError(
                f"the database schema {self.schema!r} is at version {max(done)}, newer than this "
                f"ragline ({newest}); upgrade ragline"
            )
        for version, name, sql in known:
            if version in done:
                continue
            conn.execute(sql)
            conn.execute(
                "INSERT INTO schema_migrations (version, name) VALUES (%s, %s)", (version, name)
            )
        if 8 in {v for v, _, _ in known} and 8 not in done and done:
            # an index from before BM25 blocks: build them from the migrated forward index
            from .bm25 import build_pending

            build_pending(conn)
        from .distribution import citus_present, distribute

        if citus_present(conn):
            distribute(conn, self.schema)
            self.distributed = True

    def schema_version(self) -> int:
        with self.connection() as conn:
            return int(
                conn.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchone()[
                    0
                ]
            )

    def drop_schema(self) -> None:
        """Remove every ragline table in this schema (tests, `ragline reset`)."""
        with self.connection() as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {self.schema} CASCADE")


_NODE_DOWN = re.compile(
    r"connection to the remote node (\S+) failed|could not establish any connections to the node"
    r"|connection not open|terminating connection due to administrator|server closed the connection"
)


def _node_error(exc: Exception) -> StoreError | None:
    """A Citus worker that cannot be reached: a StoreError saying so (Citus fails the whole
    statement, so no partial result was returned), or None for any other error."""
    text = str(exc).strip()
    m = _NODE_DOWN.search(text)
    if m is None:
        return None
    return StoreError(
        f"a Citus node is unreachable ({text.splitlines()[0]}): the query was not answered "
        "(Citus never returns a partial result); start the worker again or check "
        "citus_get_active_worker_nodes() on the coordinator"
    )


def _redact(url: str) -> str:
    return re.sub(r"://([^:/@]+):[^@]*@", r"://\1:***@", url)


def resolve_database(
    target: str | Path | None,
    *,
    schema: str = DEFAULT_SCHEMA,
    max_size: int = 4,
    prepare: bool = True,
) -> Database:
    """Open the database for a data directory or a ``postgresql://`` URL.

    ``None`` means: ``RAGLINE_DATABASE_URL`` if set, else the embedded server under
    ``RAGLINE_DATA_DIR`` (default ``./.ragline``).
    """
    import os

    from .server import ensure_server

    if target is None:
        target = (
            os.environ.get("RAGLINE_DATABASE_URL")
            or os.environ.get("RAGLINE_DATA_DIR")
            or ".ragline"
        )
    text = str(target)
    if text.startswith(("postgresql://", "postgres://")):
        return Database(text, schema=schema, max_size=max_size, prepare=prepare)
    return Database(ensure_server(Path(text)), schema=schema, max_size=max_size, prepare=prepare)
