"""ragline at 10^5–10^6 chunks on one machine, with the peers measured on the same corpus.

    python bench/scale.py --chunks 100000            # ~15 min here (first run: +20 min base embedding)
    python bench/scale.py --chunks 1000000           # ~1.5 h: load, HNSW build, queries, peers
    python bench/scale.py --chunks 1000000 --reuse   # queries only, on the loaded collection

The corpus (``bench/scale_corpus.py``) is SciFact grown to N chunks with its own word
statistics and perturbed real MiniLM vectors; the 300 SciFact test queries with their
real embeddings. It is loaded through ``Index.ingest_vectors`` (the write path a user with
precomputed vectors has), into one tenant whose documents carry groups so that three
readers see everything, ~30 % and ~1 %. Printed per size:

- BM25 leg (analysis + SQL + pruning), vector leg (without the query embedding) and
  hybrid search (``Index.search_result``, query embedding included) p50/p95/p99, one query
  at a time and with 4 concurrent client processes, per visibility mix; BM25 on 1–3-term
  queries too;
- BM25 top-10 equality with exhaustive BM25 over the same postings (and scores to 1e-6),
  vector recall@10 against exact search over what the reader may see, results returned at
  1 % visibility;
- load time and chunks/s (writes, then the HNSW build), disk bytes per chunk besides the
  vector, server (PSS of its processes) and client peak RSS;
- peers on the same corpus and queries: bm25s in memory (same terms, same formula) and
  pg_textsearch 1.4.0 (Block-Max WAND inside PostgreSQL; run
  ``../shared/pg-extensions/install.sh .venv/bin/python`` first, else it is skipped).

Results go to ``bench/results/scale-N.json``; when several sizes are there, the growth
from the smallest to the largest is printed too.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import resource
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale_corpus import READERS, Synthetic, build_base, group_of  # noqa: E402

import ragline  # noqa: E402
from ragline.core.types import Principal  # noqa: E402
from ragline.store.bm25_topk import Work  # noqa: E402
from ragline.store.search import bm25_search, vector_search  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
TENANT = "acme"


def pct(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p * (len(s) - 1))))] if s else float("nan")


def summary(ms):
    return {
        "p50": round(pct(ms, 0.5), 2),
        "p95": round(pct(ms, 0.95), 2),
        "p99": round(pct(ms, 0.99), 2),
    }


# -- memory -----------------------------------------------------------------------------
def server_pids(data_dir: Path) -> list[int]:
    pidfile = data_dir / "pg" / "postmaster.pid"
    try:
        master = int(pidfile.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return []
    pids = [master]
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                for line in open(f"/proc/{p}/status"):
                    if line.startswith("PPid:") and int(line.split()[1]) == master:
                        pids.append(int(p))
                        break
            except OSError:
                pass
    return pids


PEAK_EVERY_S = 5.0
"""Reading a process's PSS walks its page tables: with the server's shared buffers at
6 GB, sampling every 0.5 s took ~20 % of the loading client's CPU at 700k chunks."""


def pss_mb(pids) -> float:
    total = 0
    for p in pids:
        try:
            for line in open(f"/proc/{p}/smaps_rollup"):
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


class Peak:
    """Samples the server's PSS while a block runs, every :data:`PEAK_EVERY_S`."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir, self.peak, self._stop = data_dir, 0.0, threading.Event()

    def __enter__(self):
        def loop():
            while not self._stop.is_set():
                self.peak = max(self.peak, pss_mb(server_pids(self.data_dir)))
                self._stop.wait(PEAK_EVERY_S)

        self._t = threading.Thread(target=loop, daemon=True)
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()


def client_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# -- load ---------------------------------------------------------------------------------
def open_index(data_dir: Path, n: int):
    return ragline.open(
        data_dir, collection=f"scale-{n}", embedder="minilm", ingest_batch_chunks=4000, traces=False
    )


def load(index, syn: Synthetic, vectors: np.ndarray, data_dir: Path) -> dict:
    done = [0]
    t0 = time.perf_counter()
    last = [t0]

    def progress(_key, chunks, *_):
        done[0] += chunks
        if time.perf_counter() - last[0] > 30:
            last[0] = time.perf_counter()
            rate = done[0] / (last[0] - t0)
            print(f"  loaded {done[0]:,} chunks ({rate:,.0f}/s)", flush=True)

    with Peak(data_dir) as peak:
        report = index.ingest_vectors(syn.records(vectors), tenant=TENANT, on_progress=progress)
    total = time.perf_counter() - t0
    assert report.ok, report.failed[:3]
    t = time.perf_counter()
    with index.db.connection() as conn:
        conn.autocommit = True
        for table in ("chunks", "documents", "bm25_blocks", "bm25_terms", "bm25_classes"):
            conn.execute(f"VACUUM (ANALYZE) {table}")
        conn.autocommit = False
    vac = time.perf_counter() - t
    build = report.vector_index_seconds + report.tops_seconds
    return {
        "chunks": report.chunks,
        "documents": len(report.added),
        "seconds_total": round(total, 1),
        "seconds_writes": round(total - build, 1),
        "seconds_hnsw_build": round(report.vector_index_seconds, 1),
        "seconds_bm25_tops": round(report.tops_seconds, 1),
        "seconds_vacuum_analyze": round(vac, 1),
        "chunks_per_s_writes": round(report.chunks / max(total - build, 1e-9), 0),
        "chunks_per_s_with_hnsw": round(report.chunks / max(total, 1e-9), 0),
        "server_peak_pss_mb": round(peak.peak, 0),
        "client_peak_rss_mb": round(client_rss_mb(), 0),
    }


def disk(index) -> dict:
    cid = index.collection.id
    with index.db.connection() as conn:
        n = conn.execute("SELECT count(*) FROM chunks WHERE collection_id = %s", (cid,)).fetchone()[
            0
        ]
        sizes = {
            t: conn.execute("SELECT pg_total_relation_size(%s)", (t,)).fetchone()[0]
            for t in (
                "chunks",
                "documents",
                "chunk_parents",
                "bm25_blocks",
                "bm25_terms",
                "bm25_classes",
            )
        }
        hnsw = conn.execute(
            "SELECT pg_relation_size(%s)", (index.collection.hnsw_index,)
        ).fetchone()[0]
        vec = conn.execute(
            "SELECT coalesce(sum(pg_column_size(embedding)), 0) FROM chunks WHERE collection_id = %s",
            (cid,),
        ).fetchone()[0]
    total = sum(sizes.values())
    besides = total - hnsw - vec
    return {
        "chunks": n,
        "bytes_by_table": sizes,
        "hnsw_bytes": hnsw,
        "vector_bytes": vec,
        "bytes_per_chunk_total": round(total / n),
        "bytes_per_chunk_besides_vector": round(besides / n),
        "bm25_bytes_per_chunk": round((sizes["bm25_blocks"] + sizes["bm25_terms"]) / n),
    }


# -- exact references ----------------------------------------------------------------------
def exhaustive_bm25(index, terms, principal: Principal, k=10):
    """BM25 over every posting of the reader's lists: the same formula, no pruning."""
    from ragline.store import bm25_codec as codec
    from ragline.store.bm25 import visible_classes
    from ragline.store.bm25_topk import _tf_part, idf

    with index.db.connection() as conn:
        classes, n, sdl = visible_classes(conn, index.collection.id, principal, False)
        rows = conn.execute(
            "SELECT term, data FROM bm25_blocks WHERE collection_id = %s AND tenant = %s AND term = ANY(%s) "
            "AND class_id = ANY(%s)",
            (index.collection.id, principal.tenant, sorted(set(terms)), classes),
        ).fetchall()
    by = {}
    for t, d in rows:
        by.setdefault(t, []).append(d)
    ids_l, sc_l = [], []
    for t, ds in by.items():
        ids, tfs, dls = codec.decode_blocks(ds)
        ids_l.append(ids)
        sc_l.append(idf(n, len(ids)) * _tf_part(tfs, dls, sdl / n, 1.2, 0.75))
    if not ids_l:
        return []
    ids = np.concatenate(ids_l)
    u, inv = np.unique(ids, return_inverse=True)
    s = np.bincount(inv, weights=np.concatenate(sc_l))
    order = np.lexsort((u, -s))[:k]
    return [(int(u[i]), float(s[i])) for i in order]


def chunk_ids(index, syn: Synthetic) -> np.ndarray:
    """Database id of every synthetic chunk (in corpus order)."""
    out = np.zeros(syn.total, dtype=np.int64)
    first = {f"s{j}": f for j, _bd, f in syn.docs}
    with index.db.connection() as conn:
        cur = conn.execute(
            "SELECT d.doc_key, c.ordinal, c.id FROM chunks c JOIN documents d ON d.id = c.document_id "
            "WHERE c.collection_id = %s AND c.is_current",
            (index.collection.id,),
        )
        for key, ordinal, cid in cur:
            out[first[key] + ordinal] = cid
    return out


# -- measuring -----------------------------------------------------------------------------
def short_queries(queries, analyzer, seed=3):
    """1–3 analysed terms of each query, re-joined (for the short-query target)."""
    rng = random.Random(seed)
    out = []
    for q in queries:
        terms = analyzer.terms(q)
        out.append(" ".join(rng.sample(terms, min(len(terms), rng.randint(1, 3)))) or q)
    return out


def run_queries(index, queries, qvecs, principal: Principal, k=10, work_out=None):
    """Latencies (ms) of the BM25 leg, the vector leg and hybrid search, one at a time."""
    searcher = index.searcher
    lat = {"bm25": [], "vector": [], "hybrid": []}
    results = {"bm25": [], "vector": []}
    works = []
    for i, q in enumerate(queries):
        t = time.perf_counter()
        terms, _ = index.analyzer.query_analysis(q, ["en"], detect=True)
        w = Work()
        got = bm25_search(index.db, index.collection, terms, principal, k, work=w)
        lat["bm25"].append((time.perf_counter() - t) * 1000)
        results["bm25"].append((terms, got))
        works.append(w)
        t = time.perf_counter()
        v = vector_search(
            index.db, index.collection, qvecs[i], principal, k, ef_search=index.settings.ef_search
        )
        lat["vector"].append((time.perf_counter() - t) * 1000)
        results["vector"].append(v)
        t = time.perf_counter()
        searcher.search(q, principal, k=k, mode="hybrid")
        lat["hybrid"].append((time.perf_counter() - t) * 1000)
    if work_out is not None:
        work_out.extend(works)
    return lat, results


def _client(args):
    data_dir, n, queries, qvecs, groups, seed, out_q = args
    index = open_index(Path(data_dir), n)
    index.embedder.threads = 1
    p = Principal(TENANT, tuple(groups))
    order = list(range(len(queries)))
    random.Random(seed).shuffle(order)
    qs = [queries[i] for i in order]
    qv = qvecs[order]
    run_queries(index, qs[:10], qv[:10], p)  # warm
    lat, _ = run_queries(index, qs, qv, p)
    index.close()
    out_q.put(lat)


def concurrent(data_dir, n, queries, qvecs, groups, clients):
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [
        ctx.Process(target=_client, args=((str(data_dir), n, queries, qvecs, groups, s, q),))
        for s in range(clients)
    ]
    t = time.perf_counter()
    for p in procs:
        p.start()
    lats = [q.get() for _ in procs]
    for p in procs:
        p.join()
    wall = time.perf_counter() - t
    merged = {m: [x for lat in lats for x in lat[m]] for m in ("bm25", "vector", "hybrid")}
    out = {m: summary(v) for m, v in merged.items()}
    out["queries_per_s_all_legs"] = round(clients * len(queries) * 3 / wall, 1)
    return out


# -- peers ----------------------------------------------------------------------------------
def forward_tokens(index):
    """Every chunk's terms (with repeats) from the forward index, for the peers."""
    ids, docs = [], []
    with index.db.connection() as conn:
        cur = conn.execute(
            "SELECT id, terms, tfs FROM chunks WHERE collection_id = %s AND is_current ORDER BY id",
            (index.collection.id,),
        )
        from ragline.store.bm25_write import decode_forward

        for cid, terms, tfs in cur:
            terms, tfs = decode_forward(terms, tfs)
            ids.append(cid)
            docs.append([t for t, f in zip(terms, tfs) for _ in range(f)])
    return ids, docs


def peer_bm25s(ids, docs, query_terms, k=10):
    import bm25s

    vocab = {}
    corpus = [[vocab.setdefault(t, len(vocab)) for t in d] for d in docs]
    t = time.perf_counter()
    r = bm25s.BM25(method="lucene", k1=1.2, b=0.75)
    r.index(bm25s.tokenization.Tokenized(ids=corpus, vocab=vocab), show_progress=False)
    build = time.perf_counter() - t
    del corpus
    lat, tops = [], []
    ids_a = np.array(ids)
    for terms in query_terms:
        q = [vocab[t] for t in dict.fromkeys(terms) if t in vocab]
        t = time.perf_counter()
        scores = r.get_scores(q) if q else np.zeros(len(ids))
        top = np.argpartition(-scores, k)[:k] if len(scores) > k else np.arange(len(scores))
        top = top[np.lexsort((ids_a[top], -scores[top]))]
        lat.append((time.perf_counter() - t) * 1000)
        tops.append([(int(ids_a[i]), float(scores[i])) for i in top if scores[i] > 0])
    return {"index_seconds": round(build, 1), **summary(lat)}, tops


def _letters(i: int) -> str:
    s = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        s = chr(97 + r) + s
    return s


def peer_pg_textsearch(index, data_dir, ids, docs, query_terms, k=10):
    """pg_textsearch on the same server: our terms as letter-only tokens, 'simple' config."""
    from ragline.store.server import stop_server

    with index.db.connection() as conn:
        avail = conn.execute(
            "SELECT 1 FROM pg_available_extensions WHERE name = 'pg_textsearch'"
        ).fetchone()
        preload = conn.execute("SHOW shared_preload_libraries").fetchone()[0]
    if not avail:
        return {
            "skipped": "pg_textsearch is not installed (run ../shared/pg-extensions/install.sh .venv/bin/python)"
        }, None
    if "pg_textsearch" not in preload:
        with index.db.connection() as conn:
            conn.autocommit = True
            conn.execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_textsearch'")
        index.db.close()  # its connections die with the restart; the peer uses its own
        stop_server(data_dir)
    vocab = {}
    import psycopg

    # started from a fresh process: the wheel caches the server it started in this one
    url = (
        subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from pathlib import Path; "
                "from ragline.store.server import ensure_server; print(ensure_server(Path(sys.argv[1])))",
                str(data_dir),
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_textsearch")
        conn.execute("DROP TABLE IF EXISTS scale_ts")
        conn.execute("CREATE TABLE scale_ts (id bigint PRIMARY KEY, body text)")
        with conn.cursor() as cur, cur.copy("COPY scale_ts (id, body) FROM STDIN") as cp:
            for cid, d in zip(ids, docs):
                cp.write_row((cid, " ".join(_letters(vocab.setdefault(t, len(vocab))) for t in d)))
        t = time.perf_counter()
        conn.execute("SET maintenance_work_mem = '2GB'")
        conn.execute(
            "CREATE INDEX scale_ts_bm25 ON scale_ts USING bm25 (body) WITH (text_config = 'simple')"
        )
        build = time.perf_counter() - t
        size = conn.execute("SELECT pg_relation_size('scale_ts_bm25')").fetchone()[0]
        lat, tops = [], []
        for terms in query_terms:
            q = " ".join(_letters(vocab[t]) for t in dict.fromkeys(terms) if t in vocab)
            t = time.perf_counter()
            rows = conn.execute(
                "SELECT id, -(body <@> to_bm25query(%s, 'scale_ts_bm25')) FROM scale_ts "
                "ORDER BY body <@> to_bm25query(%s, 'scale_ts_bm25') LIMIT %s",
                (q, q, k),
            ).fetchall()
            lat.append((time.perf_counter() - t) * 1000)
            tops.append([(int(r[0]), float(r[1])) for r in rows])
        conn.execute("DROP TABLE scale_ts")
    return {
        "index_seconds": round(build, 1),
        "index_bytes_per_chunk": round(size / len(ids)),
        **summary(lat),
    }, tops


# -- main ----------------------------------------------------------------------------------
def measure(args, n: int) -> dict:
    data_dir = Path(args.data_dir).resolve()
    print(f"== {n:,} chunks (data dir {data_dir})", flush=True)
    base = build_base()
    syn = Synthetic(base, n)
    vectors = syn.vectors()
    index = open_index(data_dir, n)
    index.embedder.threads = 1
    out: dict = {"chunks": syn.total, "machine": f"{os.cpu_count()} cores"}
    loaded = (
        index.collection is not None
        and index.status(check_sources=False).get("chunks", 0) >= syn.total
    )
    if args.reuse and loaded:
        print("  reusing the loaded collection", flush=True)
        prev = RESULTS / f"scale-{n}.json"
        if prev.exists():
            out["load"] = json.loads(prev.read_text()).get("load")
    else:
        if index.collection is not None and index.status(check_sources=False).get("chunks", 0):
            raise SystemExit(
                f"collection scale-{n} is partly loaded in {data_dir}: remove the data dir or pass --reuse"
            )
        out["load"] = load(index, syn, vectors, data_dir)
        print(f"  load: {out['load']}", flush=True)
    out["disk"] = disk(index)
    print(
        f"  disk: {out['disk']['bytes_per_chunk_besides_vector']} B/chunk besides the vector",
        flush=True,
    )
    ids = chunk_ids(index, syn)
    group_chunk = np.empty(syn.total, dtype=object)
    for j, _bd, first in syn.docs:
        group_chunk[first : first + len(base.doc_chunks[_bd])] = group_of(j)
    queries, qvecs = base.queries[: args.queries], base.query_vectors[: args.queries]
    shorts = short_queries(queries, index.analyzer)
    out["readers"] = {}
    for name, groups in READERS.items():
        p = Principal(TENANT, groups)
        # warm cache (the targets' condition): every query once before the measured pass;
        # a short warm-up left the first reader's figures to whatever the OS had evicted
        run_queries(index, queries, qvecs, p)
        works: list[Work] = []
        lat, res = run_queries(index, queries, qvecs, p, work_out=works)
        short_works: list[Work] = []
        slat, sres = run_queries(index, shorts, qvecs, p, work_out=short_works)
        # exactness
        equal = scores_ok = 0
        for terms, got in res["bm25"]:
            ref = exhaustive_bm25(index, terms, p)
            equal += [c for c, _ in got] == [c for c, _ in ref]
            scores_ok += all(abs(a[1] - b[1]) < 1e-6 for a, b in zip(got, ref)) and len(got) == len(
                ref
            )
        short_equal = sum(
            [c for c, _ in got] == [c for c, _ in exhaustive_bm25(index, terms, p)]
            for terms, got in sres["bm25"]
        )
        mask = np.isin(group_chunk, groups)
        allowed = np.flatnonzero(mask)
        sims = qvecs @ vectors[allowed].T
        recall, full = [], 0
        for i, got in enumerate(res["vector"]):
            top = allowed[np.argpartition(-sims[i], 10)[:10]]
            recall.append(len({int(x) for x in ids[top]} & {c for c, _ in got}) / 10)
            full += len(got) == 10
        out["readers"][name] = {
            "visible_chunks": int(mask.sum()),
            "bm25": summary(lat["bm25"]),
            "bm25_1_3_terms": summary(slat["bm25"]),
            "bm25_1_3_terms_top10_equal_exhaustive": f"{short_equal}/{len(sres['bm25'])}",
            "bm25_1_3_terms_decided_by_tops": f"{sum(w.tops == 1 for w in short_works)}/{len(short_works)}",
            "vector": summary(lat["vector"]),
            "hybrid": summary(lat["hybrid"]),
            "bm25_top10_equal_exhaustive": f"{equal}/{len(res['bm25'])}",
            "bm25_scores_equal_1e-6": f"{scores_ok}/{len(res['bm25'])}",
            "bm25_postings_read_share": round(
                sum(w.postings for w in works) / max(1, sum(w.postings_total for w in works)), 3
            ),
            "bm25_terms_median": statistics.median(len(t) for t, _ in res["bm25"]),
            "vector_recall_at_10": round(float(np.mean(recall)), 4),
            "vector_queries_with_k_results": f"{full}/{len(res['vector'])}",
        }
        print(f"  {name}: {out['readers'][name]}", flush=True)
    if args.clients > 1:
        out["concurrent"] = {
            "clients": args.clients,
            "all": concurrent(data_dir, n, queries, qvecs, READERS["all"], args.clients),
        }
        print(f"  {args.clients} clients: {out['concurrent']}", flush=True)
    out["client_peak_rss_mb"] = round(client_rss_mb(), 0)
    out["server_pss_mb_after_queries"] = round(pss_mb(server_pids(data_dir)), 0)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"scale-{n}.json").write_text(json.dumps(out, indent=2))  # kept if a peer fails
    if args.peers:
        p = Principal(TENANT, READERS["all"])
        terms = [index.analyzer.query_analysis(q, ["en"], detect=True)[0] for q in queries]
        ours = [bm25_search(index.db, index.collection, t, p, 10) for t in terms]
        fids, fdocs = forward_tokens(index)
        peers = {}
        res_b, tops_b = peer_bm25s(fids, fdocs, terms)
        res_b["top10_equal_ragline"] = (
            f"{sum([c for c, _ in a] == [c for c, _ in b] for a, b in zip(ours, tops_b))}/{len(ours)}"
        )
        peers["bm25s (in memory)"] = res_b
        print(f"  bm25s: {res_b}", flush=True)
        res_t, tops_t = peer_pg_textsearch(index, data_dir, fids, fdocs, terms)
        if tops_t is not None:
            res_t["top10_equal_ragline"] = (
                f"{sum([c for c, _ in a] == [c for c, _ in b] for a, b in zip(ours, tops_t))}/{len(ours)}"
            )
        peers["pg_textsearch 1.4.0"] = res_t
        print(f"  pg_textsearch: {res_t}", flush=True)
        out["peers_all_visible"] = peers
    index.close()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"scale-{n}.json").write_text(json.dumps(out, indent=2))
    return out


def print_table(res: dict) -> None:
    n = res["chunks"]
    print(f"\n### {n:,} chunks")
    if res.get("load"):
        ld = res["load"]
        print(
            f"load: {ld['seconds_total']} s ({ld['chunks_per_s_writes']:,.0f} chunks/s writes, HNSW build "
            f"{ld['seconds_hnsw_build']} s, BM25 tops {ld.get('seconds_bm25_tops', 0)} s); server peak PSS {ld['server_peak_pss_mb']} MB, client peak RSS "
            f"{ld['client_peak_rss_mb']} MB"
        )
    d = res["disk"]
    print(
        f"disk: {d['bytes_per_chunk_besides_vector']} B/chunk besides the vector ({d['bm25_bytes_per_chunk']} B of it BM25)"
    )
    print(
        "| reader | visible | BM25 p50/p95/p99 | BM25 1–3 terms p50 | vector p50/p95/p99 | hybrid p50/p95/p99 | BM25 top-10 = exact | vector recall@10 |"
    )
    print("|---|---:|---|---:|---|---|---|---:|")
    for name, r in res["readers"].items():
        f = lambda s: f"{s['p50']} / {s['p95']} / {s['p99']}"  # noqa: E731
        print(
            f"| {name} | {r['visible_chunks']:,} | {f(r['bm25'])} | {r['bm25_1_3_terms']['p50']} "
            f"({r.get('bm25_1_3_terms_top10_equal_exhaustive', '?')} exact, "
            f"{r.get('bm25_1_3_terms_decided_by_tops', '?')} by tops) | {f(r['vector'])} | "
            f"{f(r['hybrid'])} | {r['bm25_top10_equal_exhaustive']} | {r['vector_recall_at_10']} |"
        )
    if res.get("concurrent"):
        c = res["concurrent"]["all"]
        print(
            f"{res['concurrent']['clients']} clients (all visible): BM25 {c['bm25']}, vector {c['vector']}, hybrid {c['hybrid']}"
        )
    for name, pr in (res.get("peers_all_visible") or {}).items():
        print(f"peer {name}: {pr}")


def growth() -> None:
    runs = sorted(
        (json.loads(p.read_text()) for p in RESULTS.glob("scale-*.json")), key=lambda r: r["chunks"]
    )
    if len(runs) < 2:
        return
    a, b = runs[0], runs[-1]
    print(
        f"\n### growth {a['chunks']:,} → {b['chunks']:,} chunks (×{b['chunks'] / a['chunks']:.0f})"
    )
    for name in a["readers"]:
        for leg in ("bm25", "bm25_1_3_terms", "vector", "hybrid"):
            x, y = a["readers"][name][leg]["p50"], b["readers"][name][leg]["p50"]
            print(f"  {name:>4} {leg:<15} p50 {x} → {y} ms (×{y / x:.2f})")
    if a.get("load") and b.get("load"):
        print(
            f"  writes chunks/s {a['load']['chunks_per_s_writes']} → {b['load']['chunks_per_s_writes']}"
        )
    print(
        f"  bytes/chunk besides vector {a['disk']['bytes_per_chunk_besides_vector']} → {b['disk']['bytes_per_chunk_besides_vector']}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--chunks", type=int, action="append", help="corpus size (repeatable); default 100000"
    )
    ap.add_argument("--data-dir", default="/tmp/ragline-scale")
    ap.add_argument("--reuse", action="store_true", help="query an already loaded collection")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--peers", action=argparse.BooleanOptionalAction, default=True)
    args = ap.parse_args()
    for n in args.chunks or [100_000]:
        print_table(measure(args, n))
    growth()


if __name__ == "__main__":
    main()
