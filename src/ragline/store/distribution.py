"""Citus: ragline's tables distributed by tenant, when the ``citus`` extension is present.

Nothing here runs on a plain PostgreSQL. On a Citus coordinator the schema the migrations
made is distributed once, right after them, in the migrating transaction:

- every table holding a tenant's data is distributed by ``tenant`` and co-located with
  ``documents`` (:data:`DISTRIBUTED`), so a tenant's documents, chunks, BM25 lists and
  statistics, traces, jobs and cache live in one shard group on one worker, and a query that
  says ``tenant = …`` for each of them is routed whole to that worker (it runs there as on a
  single server: joins, CTEs, ``SET LOCAL`` for HNSW, REPEATABLE READ);
- small tables every query may join are reference tables, copied to every node
  (:data:`REFERENCE`);
- ``schema_migrations`` stays on the coordinator.

Citus requires a distributed table's primary key and unique indexes to contain the
distribution column and its foreign keys to other distributed tables to include it, so the
keys made by the migrations on ``id`` alone become ``(tenant, id)`` and the foreign keys
from chunks and parent passages to documents ``(tenant, document_id)``. The trigger that
erases traces with the documents they cite cannot run on shards (it would query another
distributed table from inside one): :func:`ragline.store.writes.delete_versions` erases them
itself, in every deployment.

``citus.propagate_set_commands = 'local'`` is set on every connection (see
:class:`ragline.store.db.Database`): without it ``SET LOCAL hnsw.iterative_scan`` stays on
the coordinator and a filtered vector query on a worker returns too few rows.
"""

from __future__ import annotations

from typing import Any

from ..core.errors import StoreError

REFERENCE = (
    "collections",
    "index_versions",
    "api_keys",
    "installation_secrets",
    "bm25_pending",
    "sources",
)
"""Small tables joined by every query: one copy on every node."""

DISTRIBUTED = (
    "documents",
    "chunks",
    "chunk_parents",
    "bm25_classes",
    "bm25_languages",
    "bm25_terms",
    "bm25_blocks",
    "embedding_cache",
    "traces",
    "ingest_jobs",
    "source_failures",
    "ingest_tasks",
    "ingest_files",
)
"""Tenant data, distributed by ``tenant`` and co-located with ``documents``."""

LOCAL = ("schema_migrations",)

# primary keys that must gain the tenant: table -> new key columns
_KEYS = {
    "documents": "tenant, id",
    "chunks": "tenant, id",
    "chunk_parents": "tenant, document_id, ordinal",
    "traces": "tenant, id",
    "ingest_jobs": "tenant, id",
}
# foreign keys to documents, recreated with the tenant
_DOCUMENT_FKS = ("chunks", "chunk_parents")


def citus_present(conn: Any) -> bool:
    """Whether this database has the Citus extension (a coordinator)."""
    return conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'citus'").fetchone() is not None


def is_distributed(conn: Any, schema: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM pg_dist_partition WHERE logicalrelid = to_regclass(%s)",
        (f"{schema}.documents",),
    ).fetchone()
    return row is not None


def _tables(conn: Any, schema: str) -> set[str]:
    rows = conn.execute(
        "SELECT relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s AND c.relkind IN ('r', 'p')",
        (schema,),
    ).fetchall()
    return {r[0] for r in rows}


def distribute(conn: Any, schema: str) -> bool:
    """Distribute this schema's tables (idempotent; caller holds the migration lock and
    has ``search_path`` on the schema). Returns True when it changed anything."""
    if is_distributed(conn, schema):
        _check_new_tables(conn, schema)
        return False
    tables = _tables(conn, schema)
    unknown = tables - set(REFERENCE) - set(DISTRIBUTED) - set(LOCAL)
    if unknown:
        raise StoreError(_unknown_message(unknown))
    # DDL on reference tables and shards in one transaction: one connection per node
    conn.execute("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'")
    conn.execute("DROP TRIGGER IF EXISTS documents_erase_traces ON documents")
    for table in _DOCUMENT_FKS:
        conn.execute(f"ALTER TABLE {table} DROP CONSTRAINT IF EXISTS {table}_document_id_fkey")
    for table, cols in _KEYS.items():
        if table in tables:
            conn.execute(
                f"ALTER TABLE {table} DROP CONSTRAINT {table}_pkey, ADD PRIMARY KEY ({cols})"
            )
    for table in REFERENCE:
        if table in tables:
            conn.execute("SELECT create_reference_table(%s)", (f"{schema}.{table}",))
    conn.execute(
        "SELECT create_distributed_table(%s, 'tenant', colocate_with => 'none')",
        (f"{schema}.documents",),
    )
    for table in DISTRIBUTED[1:]:
        if table in tables:
            conn.execute(
                "SELECT create_distributed_table(%s, 'tenant', colocate_with => %s)",
                (f"{schema}.{table}", f"{schema}.documents"),
            )
    for table in _DOCUMENT_FKS:
        conn.execute(
            f"ALTER TABLE {table} ADD CONSTRAINT {table}_document_id_fkey "
            "FOREIGN KEY (tenant, document_id) REFERENCES documents (tenant, id) ON DELETE CASCADE"
        )
    return True


def _check_new_tables(conn: Any, schema: str) -> None:
    """A table a later migration made must be distributed (or referenced) too."""
    rows = conn.execute(
        "SELECT relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s AND c.relkind IN ('r', 'p') AND NOT EXISTS "
        "(SELECT 1 FROM pg_dist_partition p WHERE p.logicalrelid = c.oid)",
        (schema,),
    ).fetchall()
    pending = {r[0] for r in rows} - set(LOCAL)
    if not pending:
        return
    unknown = pending - set(REFERENCE) - set(DISTRIBUTED)
    if unknown:
        raise StoreError(_unknown_message(unknown))
    conn.execute("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'")
    for table in sorted(pending):
        if table in REFERENCE:
            conn.execute("SELECT create_reference_table(%s)", (f"{schema}.{table}",))
        else:
            conn.execute(
                "SELECT create_distributed_table(%s, 'tenant', colocate_with => %s)",
                (f"{schema}.{table}", f"{schema}.documents"),
            )


def _unknown_message(unknown: set[str]) -> str:
    return (
        f"the tables {sorted(unknown)} are not known to ragline.store.distribution: a table of "
        "tenant data must be listed in DISTRIBUTED (with a tenant column in its keys), a small "
        "table every query joins in REFERENCE"
    )


def shard_placement(conn: Any, schema: str, tenant: str) -> tuple[str, int]:
    """The worker (host, port) holding ``tenant``'s shard group."""
    row = conn.execute(
        "SELECT nodename, nodeport FROM citus_shards "
        "WHERE shardid = get_shard_id_for_distribution_column(%s::regclass, %s::text)",
        (f"{schema}.documents", tenant),
    ).fetchone()
    if row is None:
        raise StoreError(f"no shard holds tenant {tenant!r}")
    return str(row[0]), int(row[1])
