"""Search latency per mode on an ingested BEIR collection (default: SciFact).

One query at a time, after 10 warm-up queries, k=10 (hybrid: RRF over the top 50 of
each leg). Reports p50/p95 of the whole call (query embedding included) and, for the
modes with a vector leg, the same minus the query-embedding time. Run
`ragline eval retrieval --beir ../shared/data/scifact --mode hybrid` first so the
collection exists with vectors.

    python bench/search_latency.py [--data-dir .ragline] [--beir ../shared/data/scifact]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import ragline
from ragline.core.types import Principal
from ragline.evaluate.beir import load_beir
from ragline.evaluate.retrieval import beir_collection_name


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p * (len(s) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", default=".ragline")
    ap.add_argument(
        "--beir", default=str(Path(__file__).resolve().parents[1].parent / "shared/data/scifact")
    )
    ap.add_argument("--k", type=int, default=10)
    args = ap.parse_args()
    data = load_beir(args.beir, "test")
    queries = [data.queries[q] for q in sorted(data.qrels)]
    index = ragline.open(args.data_dir, collection=beir_collection_name(data.name))
    index.embedder.threads = 1  # one query at a time, one thread, like the peers' protocol
    out: dict[str, dict[str, float]] = {}
    p = Principal()
    for mode in ("bm25", "vector", "hybrid"):
        for q in queries[:10]:
            index.searcher.search(q, p, k=args.k, mode=mode)
        total, no_embed = [], []
        t0 = time.perf_counter()
        for q in queries:
            t = time.perf_counter()
            res = index.searcher.search(q, p, k=args.k, mode=mode)
            ms = (time.perf_counter() - t) * 1000
            total.append(ms)
            no_embed.append(ms - res.timings_ms.get("embed_query", 0.0))
        wall = time.perf_counter() - t0
        out[mode] = {
            "p50_ms": round(statistics.median(total), 2),
            "p95_ms": round(pct(total, 0.95), 2),
            "p50_ms_excl_query_embedding": round(statistics.median(no_embed), 2),
            "p95_ms_excl_query_embedding": round(pct(no_embed, 0.95), 2),
            "qps": round(len(queries) / wall, 1),
        }
    index.close()
    print(
        json.dumps(
            {"dataset": data.name, "queries": len(queries), "k": args.k, "modes": out}, indent=2
        )
    )


if __name__ == "__main__":
    main()
