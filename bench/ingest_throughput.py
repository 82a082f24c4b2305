"""End-to-end ingest throughput vs the raw embedder, measured in the same run.

Takes the first N documents of a BEIR corpus (default SciFact, N=400) and, ``--rounds``
times (default 2), ingests them into a fresh schema (empty embedding cache) of the
embedded PostgreSQL, then embeds the very same chunk texts with the bare model. Ratio =
ingest chunks/s ÷ raw embedder chunks/s over all rounds (1.0 would mean ragline adds
nothing to the model's own cost); alternating the two sides keeps a VM's drift in speed
(several percent within a minute) out of the ratio. Also: unchanged re-ingest time (zero
embedding calls) and peak RSS.

    python bench/ingest_throughput.py [--data-dir .ragline] [--docs 400] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import resource
import time
import uuid
from pathlib import Path

import psycopg

from ragline.analysis import language
from ragline.core.settings import Settings
from ragline.evaluate.beir import iter_corpus
from ragline.index import Index
from ragline.ingest.sources import text_source
from ragline.store.server import ensure_server


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", default=".ragline")
    ap.add_argument(
        "--beir", default=str(Path(__file__).resolve().parents[1].parent / "shared/data/scifact")
    )
    ap.add_argument("--docs", type=int, default=400)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    url = ensure_server(Path(args.data_dir))
    docs = []
    for d in iter_corpus(args.beir):
        docs.append(d)
        if len(docs) >= args.docs:
            break

    def sources() -> list:
        return [text_source(f"beir:{d.doc_id}", d.title, d.text) for d in docs]

    embedder = None  # one model for every round, as one process keeps it
    ingest_s, raw_s, rounds = 0.0, 0.0, []
    chunks = texts_n = failed = 0
    noop_s, noop_calls, noop_unchanged = 0.0, 0, 0
    for r in range(args.rounds):
        schema = f"bench_{uuid.uuid4().hex[:8]}"
        index = Index(
            Settings(database_url=url, db_schema=schema, embedder="minilm"), embedder=embedder
        )
        embedder = index.embedder
        try:
            # both models load once per process (as `ragline serve` does at start): the
            # embedder and the language detector (~0.75 s), outside the timed ingest
            index.embedder.warm_up()
            language.warm_up()
            t = time.perf_counter()
            report = index.ingest_sources(sources())
            one_ingest = time.perf_counter() - t
            with index.db.connection() as conn:
                texts = [
                    h + "\n\n" + x if h else x
                    for h, x in conn.execute("SELECT header, text FROM chunks ORDER BY id")
                ]
            t = time.perf_counter()
            index.embedder.embed_documents(texts)
            one_raw = time.perf_counter() - t
            ingest_s += one_ingest
            raw_s += one_raw
            chunks += report.chunks
            texts_n += len(texts)
            failed += len(report.failed)
            rounds.append(
                {
                    "ingest_s": round(one_ingest, 2),
                    "raw_embedder_s": round(one_raw, 2),
                    "ratio": round((report.chunks / one_ingest) / (len(texts) / one_raw), 3),
                    # the two steps after the last write: the vector index build (none
                    # under GRAPH_FROM chunks) and the BM25 tops refresh
                    "vector_index_s": round(report.vector_index_seconds, 3),
                    "tops_s": round(report.tops_seconds, 3),
                }
            )
            if r == args.rounds - 1:
                calls = index.embedder.calls
                t = time.perf_counter()
                again = index.ingest_sources(sources())
                noop_s = time.perf_counter() - t
                noop_calls = index.embedder.calls - calls
                noop_unchanged = len(again.unchanged)
        finally:
            index.close()
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    result = {
        "documents": len(docs),
        "chunks_per_round": chunks // args.rounds,
        "failed": failed,
        "rounds": rounds,
        "ingest_s": round(ingest_s, 2),
        "ingest_chunks_per_s": round(chunks / ingest_s, 2),
        "raw_embedder_s": round(raw_s, 2),
        "raw_embedder_chunks_per_s": round(texts_n / raw_s, 2),
        "ratio_ingest_to_raw_embedder": round((chunks / ingest_s) / (texts_n / raw_s), 3),
        "unchanged_reingest_s": round(noop_s, 3),
        "unchanged_reingest_embedding_calls": noop_calls,
        "unchanged_reingest_unchanged_docs": noop_unchanged,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
