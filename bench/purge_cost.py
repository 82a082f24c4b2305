"""What a purge costs: the table rewrite that makes erasure real, and how long queries wait.

Ingests one small document of a tenant of its own into an existing collection (e.g. the
SciFact collection ``ragline eval retrieval`` builds), purges it, and prints one JSON
object: the table sizes, the seconds of the deletion and of each table's rewrite
(``VACUUM FULL``) and WAL switch, and the latency of BM25 searches another thread runs
meanwhile (their maximum is how long a purge makes queries wait).

    python bench/purge_cost.py --data-dir /tmp/scifact --collection beir-scifact --runs 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
import uuid
from typing import Any


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--collection", default="beir-scifact")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()

    import ragline
    from ragline.ingest.sources import text_source
    from ragline.store import erasure

    index = ragline.open(args.data_dir, collection=args.collection, traces=False)
    tenant = "bench-purge"
    with index.db.connection() as conn:
        sizes = {
            t: int(conn.execute("SELECT pg_total_relation_size(%s)", (t,)).fetchone()[0])
            for t in erasure.TEXT_TABLES
            if conn.execute("SELECT to_regclass(%s)", (t,)).fetchone()[0] is not None
        }
        chunks = int(conn.execute("SELECT count(*) FROM chunks").fetchone()[0])

    latencies: list[float] = []
    stop = threading.Event()

    def searcher() -> None:
        with ragline.open(args.data_dir, collection=args.collection, traces=False) as other:
            while not stop.is_set():
                t = time.perf_counter()
                other.search("protein folding", mode="bm25", k=10)
                latencies.append(time.perf_counter() - t)

    runs: list[dict[str, Any]] = []
    for _ in range(args.runs):
        key = f"purge-{uuid.uuid4().hex[:8]}"
        index.ingest_sources(
            [text_source(key, "Purge me", "A short note to purge, about protein folding.")],
            tenant=tenant,
            embed=False,
        )
        latencies.clear()
        stop.clear()
        thread = threading.Thread(target=searcher, daemon=True)
        thread.start()
        time.sleep(1.0)  # the searcher's baseline
        baseline = list(latencies)
        t0 = time.perf_counter()
        result = index.purge_keys([key], tenant=tenant, erase=False)
        deleted_s = time.perf_counter() - t0
        t1 = time.perf_counter()
        rewrite, info = _timed_erasure(index.db)
        erase_s = time.perf_counter() - t1
        time.sleep(0.5)
        stop.set()
        thread.join(60)
        during = latencies[len(baseline) :]
        runs.append(
            {
                "versions": result["versions"],
                "delete_s": round(deleted_s, 3),
                "rewrite_s": round(erase_s, 3),
                "per_table_s": rewrite,
                "wal": info["wal"],
                "search_p50_ms_before": _ms(statistics.median(baseline)) if baseline else None,
                "search_max_ms_during": _ms(max(during)) if during else None,
            }
        )
    print(
        json.dumps(
            {
                "collection": args.collection,
                "chunks": chunks,
                "table_mb": {t: round(v / 2**20, 1) for t, v in sizes.items()},
                "runs": runs,
            },
            indent=2,
        )
    )
    index.close()


def _timed_erasure(db: Any) -> tuple[dict[str, float], dict[str, Any]]:
    """What erasure.erase_dead_rows does, one table at a time with a clock."""
    from ragline.store import erasure

    seconds: dict[str, float] = {}
    with db.connection() as conn:
        tables = [
            t
            for t in erasure.TEXT_TABLES
            if conn.execute("SELECT to_regclass(%s)", (t,)).fetchone()[0] is not None
        ]
    for table in tables:
        t0 = time.perf_counter()
        _vacuum_full(db, table)
        seconds[table] = round(time.perf_counter() - t0, 3)
    t0 = time.perf_counter()
    with db.connection() as conn:
        conn.autocommit = True
        wal = erasure._move_wal_on(conn)
        conn.autocommit = False
    seconds["wal_switch_checkpoint"] = round(time.perf_counter() - t0, 3)
    return seconds, {"wal": wal}


def _vacuum_full(db: Any, table: str) -> None:
    with db.connection() as conn:
        conn.autocommit = True
        try:
            conn.execute(f"VACUUM (FULL) {table}")
        finally:
            conn.autocommit = False


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


if __name__ == "__main__":
    main()
