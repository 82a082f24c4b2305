"""Physical erasure after a purge: no byte of a purged document left in any file.

Deleting rows is not enough. PostgreSQL keeps a deleted row's bytes in its page until the
space is reused: a plain VACUUM marks the space free but does not overwrite it, so the
text stays in the table file (measured: after DELETE + VACUUM + CHECKPOINT the purged
text was still in the files of ``documents``, ``chunks``, the BM25 postings and their
indexes). The write-ahead log holds the inserted rows as well, and by default a
checkpoint *recycles* old WAL segments (renames them for reuse) instead of removing
them, so their bytes survive until overwritten.

So after the rows are gone :func:`erase_dead_rows` rewrites every table that held text of
documents (``VACUUM FULL``: a new file, the old one unlinked; indexes rebuilt), then
makes the WAL move on (``pg_switch_wal()`` and ``CHECKPOINT``, twice), so that, with
``wal_recycle = off`` (ragline sets it on its embedded server), the segments that held
the text are removed. Cost: a rewrite takes time proportional to the tables' size and
holds an exclusive lock on each table while it runs (queries wait; see
``bench/README.md``). What this cannot reach is reported in the result: WAL segments kept
for archiving or replication, WAL recycled on a server with ``wal_recycle = on``, and
freed disk blocks (the file system may keep them until reused).

On a Citus coordinator (:mod:`ragline.store.distribution`) the rows live in the workers'
shards: ``VACUUM (FULL)`` of a distributed table is propagated by Citus to every shard, and
the WAL step runs on every worker as well (``run_command_on_workers``), each worker's
settings checked as the coordinator's are; a worker that cannot be reached is named in the
result, its segments kept.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from .collections import Collection
from .db import Database

TEXT_TABLES = (
    "documents",
    "chunks",
    "chunk_parents",
    "bm25_blocks",
    "bm25_terms",
    "traces",
    "embedding_cache",
    "ingest_jobs",
    "source_failures",
    "ingest_tasks",  # the job queue (issue 16), where it exists
    "ingest_files",
)
"""Every table that can hold text (or names) of a document (those that exist are
rewritten)."""
PURGED = "(purged)"


def scrub_records(
    conn: Any, tenant: str, names: Sequence[str], file_names: Sequence[str] = ()
) -> int:
    """Remove a purged document's key and source (``names``, wherever they occur) and its
    upload file name (``file_names``, as a whole value) from the tenant's job records
    (file lists, reports) and failure records; returns how many records changed."""
    names = [n for n in dict.fromkeys(names) if n]
    if not names:
        return 0
    changed = conn.execute(
        "DELETE FROM source_failures WHERE tenant = %s AND source = ANY(%s)", (tenant, names)
    ).rowcount
    needles = [json.dumps(n, ensure_ascii=False)[1:-1] for n in names]
    needles += [json.dumps(n, ensure_ascii=False) for n in file_names if n]
    rows = conn.execute(
        "SELECT id, detail FROM ingest_jobs WHERE tenant = %s AND "
        "EXISTS (SELECT 1 FROM unnest(%s::text[]) n WHERE strpos(detail::text, n) > 0)",
        (tenant, needles),
    ).fetchall()
    for job_id, detail in rows:
        conn.execute(
            "UPDATE ingest_jobs SET detail = %s::jsonb WHERE id = %s",
            (json.dumps(_scrub(detail, names, set(file_names))), job_id),
        )
    return int(changed) + len(rows)


def _scrub(value: Any, names: Sequence[str], whole: set[str]) -> Any:
    if isinstance(value, str):
        if value in whole:
            return PURGED
        for n in sorted(names, key=len, reverse=True):
            value = value.replace(n, PURGED)
        return value
    if isinstance(value, list):
        return [_scrub(v, names, whole) for v in value]
    if isinstance(value, dict):
        return {k: _scrub(v, names, whole) for k, v in value.items()}
    return value


def erase_dead_rows(
    db: Database, tables: Sequence[str] = TEXT_TABLES, *, max_bytes: int | None = None
) -> dict[str, Any]:
    """Rewrite ``tables`` and move the WAL on (see the module docstring); what was done
    and what could not be. Tables larger than ``max_bytes`` together are not rewritten
    (each rewrite locks its table, and rebuilds its indexes, the vector index included):
    the result says the erasure is pending, for ``ragline index compact`` off-peak."""
    out: dict[str, Any] = {"rewritten": [], "wal": "removed"}
    with db.connection() as conn:
        conn.autocommit = True
        try:
            present = conn.execute(_SIZES[db.distributed], (list(tables),)).fetchall()
            size = sum(int(r[1]) for r in present)
            if max_bytes is not None and size > max_bytes:
                out.update(
                    wal="not moved",
                    pending=f"the tables holding document text take {size >> 20} MB, more than "
                    f"purge_rewrite_max_mb = {max_bytes >> 20}: the document is gone from every "
                    "answer and API, its bytes stay in the files until `ragline index compact` "
                    "(run it off-peak: it locks each table while it rewrites it)",
                )
                return out
            for table, _size in present:
                conn.execute(f"VACUUM (FULL) {table}")
                out["rewritten"].append(table)
            out["wal"] = _move_wal_on(conn)
            if db.distributed:
                out["wal"] = _merge_wal(out["wal"], _move_wal_on_workers(conn))
        finally:
            conn.autocommit = False
    return out


_SIZES = {
    False: "SELECT t, pg_total_relation_size(to_regclass(t)) FROM unnest(%s::text[]) t "
    "WHERE to_regclass(t) IS NOT NULL",
    # a distributed table's rows are in its shards: the coordinator's table is empty
    True: "SELECT t, CASE WHEN EXISTS (SELECT 1 FROM pg_dist_partition p "
    "WHERE p.logicalrelid = to_regclass(t)) THEN citus_total_relation_size(to_regclass(t)) "
    "ELSE pg_total_relation_size(to_regclass(t)) END FROM unnest(%s::text[]) t "
    "WHERE to_regclass(t) IS NOT NULL",
}


_WAL_STEPS = ("SELECT pg_switch_wal()", "CHECKPOINT") * 2
"""Twice: the second round retires the segment the first one closed."""

_WAL_KEEPERS = (
    (
        "SHOW wal_recycle",
        lambda v: v == "on",
        lambda v: "wal_recycle is on: recycled segments keep the bytes until overwritten",
    ),
    (
        "SHOW archive_mode",
        lambda v: v != "off",
        lambda v: f"archive_mode is {v}: archived WAL copies keep the bytes",
    ),
    (
        "SELECT count(*) FROM pg_replication_slots",
        lambda v: v not in ("0", ""),
        lambda v: f"{v} replication slot(s) may hold old segments",
    ),
)
"""What keeps old WAL segments on a server: (query, whether its value keeps them, why)."""


def _move_wal_on(conn: Any) -> str:
    import psycopg

    try:
        for command in _WAL_STEPS:
            conn.execute(command)
    except psycopg.Error as exc:  # not superuser (or pg_checkpoint + switch rights)
        return (
            "kept: could not switch and checkpoint the WAL "
            f"({str(exc).strip()}); old segments keep the purged bytes until recycled"
        )
    notes = []
    for query, keeps, why in _WAL_KEEPERS:
        value = str(conn.execute(query).fetchone()[0])
        if keeps(value):
            notes.append(why(value))
    return "removed" if not notes else "kept: " + "; ".join(notes)


def _move_wal_on_workers(conn: Any) -> list[str]:
    """:func:`_move_wal_on` on every Citus worker; what each worker keeps ([] when none)."""
    notes: dict[str, list[str]] = {}

    def on_workers(command: str) -> list[tuple[str, bool, str]]:
        rows = conn.execute(
            "SELECT nodename, nodeport, success, result FROM run_command_on_workers(%s)",
            (command,),
        ).fetchall()
        return [(f"{r[0]}:{r[1]}", bool(r[2]), str(r[3] or "").strip()) for r in rows]

    for command in _WAL_STEPS:
        for node, ok, result in on_workers(command):
            if not ok:
                notes.setdefault(node, []).append(f"{command} failed ({result})")
    for query, keeps, why in _WAL_KEEPERS:
        for node, ok, value in on_workers(query):
            if ok and keeps(value):
                notes.setdefault(node, []).append(why(value))
    return [f"worker {node}: {', '.join(dict.fromkeys(n))}" for node, n in notes.items()]


def _merge_wal(coordinator: str, workers: list[str]) -> str:
    if not workers:
        return coordinator
    kept = [] if coordinator == "removed" else [coordinator.removeprefix("kept: ")]
    return "kept: " + "; ".join(kept + workers)


def purge_everywhere(
    db: Database,
    name: str,
    serving: Collection,
    tenant: str,
    keys: Iterable[str],
    *,
    erase: bool = True,
    max_bytes: int | None = None,
) -> dict[str, Any]:
    """Purge documents ``keys`` of ``tenant`` from every index version of collection
    ``name`` (a version not serving still holds a copy), then (``erase``) rewrite the
    files once (:func:`erase_dead_rows`)."""
    from .documents import purge_document
    from .versions import list_versions

    physical = [v.collection for v in list_versions(db, name)] or [serving]
    total: dict[str, Any] = {"versions": 0, "cache_entries": 0, "traces": 0}
    for key in keys:
        for col in physical:
            for k, v in purge_document(db, col, tenant, key, erase=False).items():
                total[k] += v
    if total["versions"] and erase:
        total["erasure"] = erase_dead_rows(db, max_bytes=max_bytes)
    return total
