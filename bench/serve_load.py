"""Load test of `ragline serve` on loopback: concurrent search + ask while ingesting.

Starts `ragline serve` as a subprocess over an ingested BEIR collection (default: the
SciFact collection `ragline eval retrieval --beir ../shared/data/scifact` builds), creates
an admin key, then runs CLIENTS asyncio clients for DURATION seconds, each looping over
SciFact test queries (80 % search k=10, 20 % ask), while an ingester uploads a small
document every few seconds through the API (background ingest jobs). Prints throughput,
p50/p95/p99 latency per operation, errors by status (429 counted apart), and, as the peer
measured in the same run, the in-process `Index.search_result` latency on the same
queries (the HTTP overhead ratio).

    python bench/serve_load.py [--data-dir .ragline] [--clients 8] [--duration 120]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import httpx

from ragline.evaluate.beir import load_beir
from ragline.evaluate.retrieval import beir_collection_name

REPO = Path(__file__).resolve().parents[1]


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p * (len(s) - 1))))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ragline_cmd(data_dir: str, collection: str, *args: str) -> list[str]:
    exe = str(Path(sys.executable).with_name("ragline"))
    return [exe, "--data-dir", data_dir, "--collection", collection, *args]


async def client(
    http: httpx.AsyncClient,
    queries: list[str],
    stop: float,
    results: dict[str, list[float]],
    errors: dict[str, int],
    seed: int,
) -> None:
    rnd = random.Random(seed)
    while time.perf_counter() < stop:
        q = rnd.choice(queries)
        op = "ask" if rnd.random() < 0.2 else "search"
        body = {"question": q} if op == "ask" else {"query": q, "k": 10}
        t = time.perf_counter()
        try:
            r = await http.post(f"/v1/{op}", json=body)
            status = r.status_code
        except httpx.HTTPError as exc:
            errors[f"{op}:{type(exc).__name__}"] += 1
            continue
        ms = (time.perf_counter() - t) * 1000
        if status == 200:
            results[op].append(ms)
        elif status == 429:
            errors["429"] += 1
            await asyncio.sleep(float(r.headers.get("Retry-After", "1")))
        else:
            errors[f"{op}:{status}"] += 1


async def ingester(
    http: httpx.AsyncClient,
    stop: float,
    stats: dict[str, int],
    job_ids: list[int],
    every: float = 3.0,
) -> None:
    n = 0
    while time.perf_counter() < stop:
        n += 1
        words = " ".join(
            random.choice(["protein", "cell", "gene", "trial", "dose"]) for _ in range(150)
        )
        doc = f"# Load test note {n}\n\nThis note {n} was uploaded during the load test. {words}\n"
        r = await http.post(
            "/v1/documents",
            files=[("files", (f"load-{n}.md", doc.encode(), "text/markdown"))],
        )
        stats["uploads"] += 1
        if r.status_code != 202:
            stats[f"upload_status_{r.status_code}"] += 1
        else:
            job_ids.append(r.json()["job"]["id"])
        await asyncio.sleep(every)


async def run_load(
    url: str, key: str, ingest_key: str, queries: list[str], clients: int, duration: float
) -> dict:
    results: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, int] = defaultdict(int)
    ingest: dict[str, int] = defaultdict(int)
    job_ids: list[int] = []
    limits = httpx.Limits(max_connections=clients + 2)
    async with httpx.AsyncClient(
        base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60, limits=limits
    ) as http:
        for q in queries[:5]:  # warm up
            await http.post("/v1/search", json={"query": q, "k": 10})
        t0 = time.perf_counter()
        stop = t0 + duration
        # uploads go to a tenant of their own, so the benchmark leaves the corpus unchanged
        uploader = httpx.AsyncClient(
            base_url=url, headers={"Authorization": f"Bearer {ingest_key}"}, timeout=60
        )
        await asyncio.gather(
            ingester(uploader, stop, ingest, job_ids),
            *(client(http, queries, stop, results, errors, i) for i in range(clients)),
        )
        elapsed = time.perf_counter() - t0
        jobs = (await uploader.get("/v1/jobs")).json()["jobs"]
        for d in (await uploader.get("/v1/documents")).json()["documents"]:
            await uploader.delete(f"/v1/documents/{d['id']}", params={"purge": "true"})
        await uploader.aclose()
    done = sum(1 for j in jobs if j["status"] == "done" and j["id"] in job_ids)
    out = {
        "clients": clients,
        "seconds": round(elapsed, 1),
        "errors": dict(errors),
        "errors_other_than_429": sum(v for k, v in errors.items() if k != "429"),
        "uploads": dict(ingest),
        "ingest_jobs_done": done,
    }
    total = 0
    for op, ms in sorted(results.items()):
        total += len(ms)
        out[op] = {
            "requests": len(ms),
            "per_s": round(len(ms) / elapsed, 2),
            "p50_ms": round(pct(ms, 0.5), 1),
            "p95_ms": round(pct(ms, 0.95), 1),
            "p99_ms": round(pct(ms, 0.99), 1),
        }
    out["throughput_per_s"] = round(total / elapsed, 2)
    return out


def in_process(data_dir: str, collection: str, queries: list[str]) -> dict:
    import ragline

    idx = ragline.open(data_dir, collection=collection, traces=False)
    for q in queries[:5]:
        idx.search_result(q, k=10)
    ms = []
    for q in queries[:100]:
        t = time.perf_counter()
        idx.search_result(q, k=10)
        ms.append((time.perf_counter() - t) * 1000)
    idx.close()
    return {"p50_ms": round(pct(ms, 0.5), 1), "p99_ms": round(pct(ms, 0.99), 1), "n": len(ms)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", default=".ragline")
    ap.add_argument("--beir", default=str(REPO.parent / "shared/data/scifact"))
    ap.add_argument("--collection", default=None, help="default: the BEIR eval collection")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2, help="ragline serve --workers")
    ap.add_argument("--duration", type=float, default=120.0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    data = load_beir(args.beir, "test")
    queries = [data.queries[q] for q in sorted(data.qrels)]
    collection = args.collection or beir_collection_name(data.name)
    peer = in_process(args.data_dir, collection, queries)

    def new_key(tenant: str) -> str:
        out = subprocess.run(
            ragline_cmd(
                args.data_dir,
                collection,
                "keys",
                "create",
                "--tenant",
                tenant,
                "--admin",
                "--rate-limit",
                "100000",
                "--name",
                "serve-load-bench",
                "--json",
            ),
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        return str(json.loads(out)["key"])

    key, ingest_key = new_key("default"), new_key("serve-load-bench")
    started = time.time()
    port = free_port()
    server = subprocess.Popen(
        ragline_cmd(
            args.data_dir,
            collection,
            "serve",
            "--port",
            str(port),
            "--workers",
            str(args.workers),
            "--log-level",
            "warning",
        ),
        env={**os.environ, "RAGLINE_TRACE_RETENTION_DAYS": "1"},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                if httpx.get(f"{url}/ready", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        report = asyncio.run(run_load(url, key, ingest_key, queries, args.clients, args.duration))
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
        # the run's traces are not part of the benchmark collection: remove them
        from ragline.store.db import resolve_database

        db = resolve_database(args.data_dir)
        with db.connection() as conn:
            conn.execute("DELETE FROM traces WHERE created_at >= to_timestamp(%s)", (started,))
        db.close()
        for k in (key, ingest_key):
            subprocess.run(
                ragline_cmd(args.data_dir, collection, "keys", "revoke", k[:10]),
                capture_output=True,
            )
    report["in_process_search"] = peer
    report["workers"] = args.workers
    if "search" in report:
        report["search_p50_ratio_vs_in_process"] = round(
            report["search"]["p50_ms"] / peer["p50_ms"], 2
        )
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(
        f"{args.clients} clients, {report['seconds']} s, throughput {report['throughput_per_s']} req/s"
    )
    for op in ("search", "ask"):
        if op in report:
            r = report[op]
            print(
                f"  {op:<7} {r['requests']:>6} req  {r['per_s']:>7}/s  p50 {r['p50_ms']} ms  "
                f"p95 {r['p95_ms']} ms  p99 {r['p99_ms']} ms"
            )
    print(f"  errors: {report['errors']} (other than 429: {report['errors_other_than_429']})")
    print(f"  uploads: {report['uploads']}, ingest jobs done: {report['ingest_jobs_done']}")
    print(
        f"  peer, in-process search (same queries, one at a time): p50 {peer['p50_ms']} ms, "
        f"p99 {peer['p99_ms']} ms; HTTP/in-process p50 ratio "
        f"{report.get('search_p50_ratio_vs_in_process')}"
    )


if __name__ == "__main__":
    main()
