"""Prometheus metrics of one server: requests, latency per route and per pipeline stage,
the ingest queue. Kept in the app's own registry (no global state)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


class Metrics:
    def __init__(self, queue_counts: Callable[[], Mapping[str, int]]) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "ragline_requests_total",
            "HTTP requests by route and status",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "ragline_request_seconds",
            "HTTP request latency by route",
            ["route"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.stages = Histogram(
            "ragline_stage_seconds",
            "Pipeline stage latency (embed_query, bm25, vector, fuse, hydrate, rerank, generate)",
            ["stage"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.queue = Gauge(
            "ragline_ingest_jobs", "Ingest jobs by status", ["status"], registry=self.registry
        )
        self._queue_counts = queue_counts

    def observe_request(self, method: str, route: str, status: int, seconds: float) -> None:
        self.requests.labels(method, route, str(status)).inc()
        self.latency.labels(route).observe(seconds)

    def observe_stages(self, timings_ms: Mapping[str, float]) -> None:
        for stage, ms in timings_ms.items():
            if stage != "total":
                self.stages.labels(stage).observe(ms / 1000.0)

    def render(self) -> bytes:
        counts = self._queue_counts()
        for status in ("queued", "running", "done", "failed"):
            self.queue.labels(status).set(counts.get(status, 0))
        return generate_latest(self.registry)
