"""End-to-end ingest throughput vs the raw embedder, measured in the same run.

Takes the first N documents of a BEIR corpus (default SciFact, N=400), ingests them into
a fresh schema (empty embedding cache) of the embedded PostgreSQL, and embeds the very
same chunk texts with the bare model. Ratio = ingest chunks/s ÷ raw embedder chunks/s
(1.0 would mean ragline adds nothing to the model's own cost). Also: unchanged re-ingest
time (zero embedding calls) and peak RSS.

    python bench/ingest_throughput.py [--data-dir .ragline] [--docs 400]
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
    args = ap.parse_args()
    url = ensure_server(Path(args.data_dir))
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    docs = []
    for d in iter_corpus(args.beir):
        docs.append(d)
        if len(docs) >= args.docs:
            break
    index = Index(Settings(database_url=url, db_schema=schema, embedder="minilm"))
    try:
        # both models load once per process (as `ragline serve` does at start): the
        # embedder and the language detector (~0.75 s), outside the timed ingest
        index.embedder.warm_up()
        language.warm_up()
        sources = [text_source(f"beir:{d.doc_id}", d.title, d.text) for d in docs]
        t = time.perf_counter()
        report = index.ingest_sources(sources)
        ingest_s = time.perf_counter() - t
        with index.db.connection() as conn:
            texts = [
                h + "\n\n" + x if h else x
                for h, x in conn.execute("SELECT header, text FROM chunks ORDER BY id")
            ]
        t = time.perf_counter()
        index.embedder.embed_documents(texts)
        raw_s = time.perf_counter() - t
        calls = index.embedder.calls
        t = time.perf_counter()
        again = index.ingest_sources(
            [text_source(f"beir:{d.doc_id}", d.title, d.text) for d in docs]
        )
        noop_s = time.perf_counter() - t
        result = {
            "documents": len(docs),
            "chunks": report.chunks,
            "failed": len(report.failed),
            "ingest_s": round(ingest_s, 2),
            "ingest_chunks_per_s": round(report.chunks / ingest_s, 2),
            "raw_embedder_s": round(raw_s, 2),
            "raw_embedder_chunks_per_s": round(len(texts) / raw_s, 2),
            "ratio_ingest_to_raw_embedder": round(
                (report.chunks / ingest_s) / (len(texts) / raw_s), 3
            ),
            "unchanged_reingest_s": round(noop_s, 3),
            "unchanged_reingest_embedding_calls": index.embedder.calls - calls,
            "unchanged_reingest_unchanged_docs": len(again.unchanged),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        }
    finally:
        index.close()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
