"""Export a stored trace as OpenTelemetry spans (extra ``otel``): one span for the query,
one child per stage with its measured duration, under whatever tracer provider the
application configured (none configured: the API's no-op)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from .core.errors import MissingDependencyError

# stages in pipeline order; the BM25 leg runs beside query embedding and the vector leg
_ORDER = ("embed_query", "vector", "fuse", "hydrate", "rerank", "generate")
_PARALLEL = {"bm25": "embed_query"}


def export_spans(record: Mapping[str, Any], tracer: Any = None) -> None:
    try:
        from opentelemetry import trace as ot
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingDependencyError(
            "otel_export needs opentelemetry: install the otel extra (pip install 'ragline[otel]')"
        ) from exc
    tracer = tracer or ot.get_tracer("ragline")
    timings = {k: float(v) for k, v in (record.get("timings_ms") or {}).items()}
    stages = [s for s in _ORDER if s in timings]
    serial = sum(timings[s] for s in stages)
    end = time.time_ns()
    start = end - int(max(serial, timings.get("total", 0.0)) * 1e6)
    gen = record.get("generation") or {}
    root = tracer.start_span(
        f"ragline.{record.get('kind', 'search')}",
        start_time=start,
        attributes={
            "ragline.trace_id": str(record.get("id", "")),
            "ragline.mode": str(record.get("mode", "")),
            "ragline.collection": str(record.get("collection", "")),
            "ragline.hits": len(record.get("hits", ())),
            "ragline.abstained": bool(gen.get("abstained", False)),
        },
    )
    ctx = ot.set_span_in_context(root)
    t = start
    began: dict[str, int] = {}
    for stage in stages:
        began[stage] = t
        span = tracer.start_span(f"ragline.{stage}", context=ctx, start_time=t)
        t += int(timings[stage] * 1e6)
        span.end(end_time=t)
    for stage, beside in _PARALLEL.items():
        if stage in timings:
            s0 = began.get(beside, start)
            span = tracer.start_span(f"ragline.{stage}", context=ctx, start_time=s0)
            span.end(end_time=s0 + int(timings[stage] * 1e6))
    root.end(end_time=max(end, t))
