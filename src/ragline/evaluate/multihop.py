"""``ragline eval multihop``: the research loop against one-shot answers on a multi-hop set.

The set (``eval/multihop``): questions whose answer needs two or more passages, some of
another source. The SQuAD passages go into the evaluation collection, the named files of
``documents`` into a second collection declared a source; each question is asked in
each mode (``plain``: one-shot over the evaluation collection only; ``off``: one-shot routed
between the sources; ``auto``; ``on``) and scored:

* ``gold_recall`` — share of gold parts whose passage is in the final evidence (the
  passages the answerer read: ``Answer.hits``);
* ``answer_recall`` — answerable questions whose answer holds an answer of every part that
  has one; ``part_recall`` — the same per part;
* ``abstain_precision`` / ``abstain_recall`` — abstention as the prediction of
  "unanswerable";
* ``citation_validity`` — citations pointing at a gold passage or at a passage holding a
  gold answer;
* per question: steps, model calls, tokens, latency (medians and means reported).
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..core.types import Answer, Hit
from .qa import contains_answer, sample

SQUAD_DESCRIPTION = (
    "Wikipedia articles: the Normans, Warsaw, the French and Indian War, the Huguenots, "
    "European Union law, the Scottish Parliament, imperialism, the 1973 oil crisis"
)
DOCS_DESCRIPTION = (
    "mixed office documents: the Wikipedia article on ducks (birds, their biology and "
    "behaviour) and a Word sample about a duck's summer activities"
)


def load_set(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def _is_gold(h: Hit, g: dict[str, Any]) -> bool:
    if g["source"] == "squad":
        return h.doc_key == g["passage_id"]
    norm = " ".join(h.text.split()).casefold()
    return g["doc"] in h.doc_key and " ".join(g["quote"].split()).casefold() in norm


def score(q: dict[str, Any], a: Answer, ms: float) -> dict[str, Any]:
    """One question's row (see the module docstring)."""
    from ..generate import strip_markers

    gold = q["gold"]
    body = strip_markers(a.text)
    parts = [g for g in gold if g["answers"]]
    got = [not a.abstained and contains_answer(body, g["answers"]) for g in parts]
    by_chunk = {h.chunk_id: h for h in a.hits}
    cites = []
    for c in a.citations:
        h = by_chunk.get(c.chunk_id)
        ok = h is not None and any(
            _is_gold(h, g) or (g["answers"] and contains_answer(h.text, g["answers"])) for g in gold
        )
        cites.append(ok)
    ag = a.agent or {}
    return {
        "id": q["id"],
        "kind": q["kind"],
        "impossible": not gold,
        "abstained": a.abstained,
        "gold_found": [any(_is_gold(h, g) for h in a.hits) for g in gold],
        "parts": got,
        "hit": bool(parts) and all(got),
        "cites": cites,
        "steps": ag.get("steps", 1),
        "model_calls": ag.get("model_calls", 0 if a.prompt_tokens is None else 1),
        "tokens": ag.get("tokens", a.prompt_tokens or 0),
        "stop": ag.get("stop_reason", "one_shot"),
        "loop": ag.get("loop", False),
        "ms": round(ms, 1),
    }


def metrics(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    ans = [r for r in rows if not r["impossible"]]
    imp = [r for r in rows if r["impossible"]]
    abst = [r for r in rows if r["abstained"]]
    tp = sum(r["impossible"] for r in abst)
    golds = [x for r in ans for x in r["gold_found"]]
    parts = [x for r in ans for x in r["parts"]]
    cites = [x for r in rows if not r["abstained"] for x in r["cites"]]

    def rnd(x: float | None) -> float | None:
        return None if x is None else round(x, 4)

    def med(key: str) -> float:
        return statistics.median(r[key] for r in rows) if rows else 0.0

    def mean(key: str) -> float:
        return round(sum(r[key] for r in rows) / len(rows), 2) if rows else 0.0

    stops: dict[str, int] = {}
    for r in rows:
        stops[r["stop"]] = stops.get(r["stop"], 0) + 1
    return {
        "questions": len(rows),
        "unanswerable": len(imp),
        "gold_recall": rnd(sum(golds) / len(golds)) if golds else None,
        "answer_recall": rnd(sum(r["hit"] for r in ans) / len(ans)) if ans else None,
        "part_recall": rnd(sum(parts) / len(parts)) if parts else None,
        "abstain_precision": rnd(tp / len(abst)) if abst else None,
        "abstain_recall": rnd(tp / len(imp)) if imp else None,
        "answered": len(rows) - len(abst),
        "citation_validity": rnd(sum(cites) / len(cites)) if cites else None,
        "loop_share": rnd(sum(r["loop"] for r in rows) / len(rows)) if rows else None,
        "steps_median": med("steps"),
        "steps_mean": mean("steps"),
        "model_calls_median": med("model_calls"),
        "model_calls_mean": mean("model_calls"),
        "tokens_median": med("tokens"),
        "latency_ms_median": med("ms"),
        "latency_ms_mean": mean("ms"),
        "stop_reasons": stops,
    }


def prepare(
    index: Any, documents_dir: Path | None, squad_passages: Path, docs: Sequence[str]
) -> Any:
    """Ingest the SQuAD passages into ``index``'s collection and the named files of
    ``documents_dir`` into ``<collection>-docs``, both declared sources."""
    from ..index import Index
    from ..ingest.sources import text_source

    passages = [json.loads(x) for x in squad_passages.read_text().splitlines() if x.strip()]
    index.ingest_sources([text_source(p["_id"], p["title"], p["text"]) for p in passages])
    name = index.settings.collection
    index.declare_source(name, SQUAD_DESCRIPTION)
    if documents_dir is None or not docs:
        return None
    other = Index(
        index.settings.model_copy(update={"collection": f"{name}-docs"[:64]}),
        embedder=index.embedder,
    )
    files = [f for d in docs for f in documents_dir.rglob(f"{d}*") if f.is_file()]
    other.ingest(files)
    index.declare_source(other.settings.collection, DOCS_DESCRIPTION)
    return other


def evaluate_multihop(
    index: Any,
    questions_file: Path,
    squad_passages: Path,
    documents_dir: Path | None,
    *,
    modes: Sequence[str] = ("plain", "off", "on"),
    limit: int | None = None,
    on_progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, Any]:
    """Each mode's metrics and rows over the (sampled) set."""
    qs = sample(load_set(questions_file), limit)
    docs = sorted({g["doc"] for q in qs for g in q["gold"] if g["source"] == "documents"})
    other = prepare(index, documents_dir, squad_passages, docs)
    out: dict[str, Any] = {"generator": index.settings.generator, "modes": {}}
    try:
        for mode in modes:
            rows = []
            for i, q in enumerate(qs):
                t = time.perf_counter()
                if mode == "plain":  # one-shot, not routed: the index's own collection only
                    *_, a = index.ask_stream(q["question"], stream=False, trace=False)
                else:
                    a = index.ask(q["question"], agent=mode, trace=False)
                rows.append(score(q, a, (time.perf_counter() - t) * 1000))
                if on_progress:
                    on_progress(mode, i + 1, len(qs))
            by_kind = {}
            for kind in sorted({r["kind"] for r in rows}):
                by_kind[kind] = metrics([r for r in rows if r["kind"] == kind])
            out["modes"][mode] = {**metrics(rows), "by_kind": by_kind, "rows": rows}
    finally:
        if other is not None:
            other.close()
    return out
