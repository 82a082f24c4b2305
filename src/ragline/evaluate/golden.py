"""Golden-set retrieval evaluation over a folder of real documents.

Questions file: JSON lines ``{"id", "question", "relevant": [{"source": <file name>,
"quote": <exact text>}], "answerable": bool}``. A retrieved chunk is relevant to a quote
when it comes from that file and contains the quote (whitespace- and case-normalized),
so a golden set survives re-chunking. Each quote is one relevant item; a chunk that holds
several quotes counts for the first it holds. Metrics are averaged over answerable
questions, per stage (each leg alone and the fused list), so a miss can be traced to the
stage that lost it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import ConfigError
from .metrics import DEFAULT_METRICS, evaluate_run

GOLDEN_METRICS = (*DEFAULT_METRICS,)
STAGES = ("bm25", "vector", "hybrid")


@dataclass(frozen=True)
class GoldenQuestion:
    id: str
    question: str
    relevant: tuple[tuple[str, str], ...]  # (source file name, quote)
    answerable: bool
    language: str | None = None


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def load_questions(path: Path) -> list[GoldenQuestion]:
    out: list[GoldenQuestion] = []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigError(f"cannot read the questions file {path}: {exc}") from exc
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            rel = tuple((str(r["source"]), str(r["quote"])) for r in obj.get("relevant", []))
            q = GoldenQuestion(
                str(obj["id"]),
                str(obj["question"]),
                rel,
                bool(obj.get("answerable", bool(rel))),
                obj.get("language"),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(
                f'{path}:{n}: expected {{"id", "question", "relevant": [{{"source", "quote"}}], '
                f'"answerable"}}: {exc}'
            ) from exc
        if q.answerable and not q.relevant:
            raise ConfigError(
                f"{path}:{n}: question {q.id} is answerable but lists no relevant quote"
            )
        out.append(q)
    if not out:
        raise ConfigError(f"{path} holds no questions")
    return out


def _judge(hits: Any, q: GoldenQuestion) -> list[str]:
    """The ranking as item ids: ``quote<i>`` for a chunk holding quote i, else ``chunk<id>``."""
    quotes = [(Path(src).name, _norm(quote)) for src, quote in q.relevant]
    ranking = []
    for h in hits:
        name, text = Path(h.source).name, _norm(h.text)
        item = next(
            (f"quote{i}" for i, (s, qt) in enumerate(quotes) if s == name and qt in text), None
        )
        ranking.append(item or f"chunk{h.chunk_id}")
    return ranking


def evaluate_golden(
    index: Any,
    docs: Path,
    questions: Path,
    *,
    stages: tuple[str, ...] = STAGES,
    depth: int = 100,
    on_progress: Any = None,
    explain_k: int | None = None,
) -> dict[str, Any]:
    """Ingest ``docs`` (incrementally) into ``index`` and score each stage on ``questions``.

    With ``explain_k``, every search also stores a trace and each stage gets an
    ``"explain"`` object blaming each quote missing from its top ``explain_k`` on a stage
    (:mod:`ragline.evaluate.explain`); the metrics are the same either way."""
    from ..core.types import Principal
    from .retrieval import eval_params

    qs = load_questions(questions)
    principal = Principal()
    report = index.ingest(docs, on_progress=on_progress, tenant=principal.tenant)
    # a quote no chunk holds is a parse/chunk failure, not a retrieval one: report it.
    # Only the chunks the evaluation searches count (its tenant, no groups): on a served
    # collection another tenant's file of the same name must neither hide a miss nor
    # tell the evaluation what that tenant holds.
    with index.db.connection() as conn:
        rows = conn.execute(
            "SELECT d.source_uri, c.id, c.text, p.text FROM chunks c "
            "JOIN documents d ON d.tenant = c.tenant AND d.id = c.document_id "
            "LEFT JOIN chunk_parents p ON p.tenant = c.tenant "
            "AND p.document_id = c.document_id AND p.ordinal = c.parent_ordinal "
            "WHERE c.collection_id = %s AND c.is_current AND c.tenant = %s "
            "AND c.groups = '{}'::text[]",
            (index.collection.id, principal.tenant),
        ).fetchall()
    stored: dict[str, set[str]] = {}
    by_source: dict[str, list[tuple[int, str]]] = {}  # chunk id, its text as a hit carries it
    for src, cid, text, parent in rows:
        name = Path(src).name
        stored.setdefault(name, set()).add(_norm(text))
        if parent is not None:
            stored[name].add(_norm(parent))
        by_source.setdefault(name, []).append((int(cid), _norm(parent or text)))
    not_chunked = [
        {"id": q.id, "source": s, "quote": quote}
        for q in qs
        for s, quote in q.relevant
        if not any(_norm(quote) in t for t in stored.get(Path(s).name, ()))
    ]
    answerable = [q for q in qs if q.answerable]
    qrels = {q.id: {f"quote{i}": 1 for i in range(len(q.relevant))} for q in answerable}
    params = eval_params(index, depth)
    result: dict[str, Any] = {"stages": {}}
    runs: dict[str, dict[str, list[str]]] = {}
    for stage in stages:
        run = {}
        trace_ids: dict[str, str] = {}
        for q in answerable:
            res = index.searcher.search(q.question, principal, k=depth, mode=stage, params=params)
            run[q.id] = _judge(res.hits, q)
            if explain_k is not None:
                from .explain import record_search_trace

                trace_ids[q.id] = record_search_trace(
                    index, res, principal, question=q.question, query_id=q.id, leg_depth=depth
                )
        runs[stage] = run
        result["stages"][stage] = _rounded(evaluate_run(run, qrels, GOLDEN_METRICS))
        if explain_k is not None:
            result["stages"][stage]["explain"] = _explain(
                index, trace_ids, answerable, by_source, explain_k
            )
    languages = sorted({q.language for q in answerable if q.language})
    if languages:
        result["languages"] = {}
        for lang in languages:
            ids = {q.id for q in answerable if q.language == lang}
            sub = {i: qrels[i] for i in ids}
            result["languages"][lang] = {
                stage: _rounded(evaluate_run({i: runs[stage][i] for i in ids}, sub, GOLDEN_METRICS))
                for stage in stages
            }
    headline = "hybrid" if "hybrid" in result["stages"] else stages[-1]
    result.update(result["stages"][headline])
    result.update(
        {
            "stage": headline,
            "questions": len(qs),
            "unanswerable": len(qs) - len(answerable),
            "documents_added": len(report.added),
            "documents_failed": [f.source for f in report.failed],
            "not_chunked": not_chunked,
        }
    )
    return result


def gold_items(q: GoldenQuestion, by_source: dict[str, list[tuple[int, str]]]) -> list[Any]:
    """The quotes of ``q`` as gold items (``quote<i>``, as :func:`_judge` labels them), each
    with the chunks a hit of which :func:`_judge` would count for it."""
    from .explain import GoldItem

    return [
        GoldItem(
            f"quote{i}",
            frozenset(
                cid for cid, text in by_source.get(Path(src).name, ()) if _norm(quote) in text
            ),
        )
        for i, (src, quote) in enumerate(q.relevant)
    ]


def _explain(
    index: Any,
    trace_ids: dict[str, str],
    answerable: list[GoldenQuestion],
    by_source: dict[str, list[tuple[int, str]]],
    k: int,
) -> dict[str, Any]:
    """Read one stage's traces back and blame each quote outside the top ``k``."""
    from .explain import explain_retrieval, read_traces, summarize

    traces = read_traces(index, trace_ids)
    misses = []
    total = 0
    for q in answerable:
        gold = gold_items(q, by_source)
        total += len(gold)
        misses += explain_retrieval(
            q.id, traces[q.id], gold, k, unit="chunk", trace_id=trace_ids[q.id]
        )
    return summarize(misses, gold_items=total, k=k)


def _rounded(metrics: dict[str, Any]) -> dict[str, Any]:
    return {m: round(v, 4) if isinstance(v, float) else v for m, v in metrics.items()}


def render_table(result: dict[str, Any]) -> str:
    stages = list(result["stages"])
    metrics = [m for m in GOLDEN_METRICS]
    width = max(len(m) for m in metrics) + 2
    lines = ["metric".ljust(width) + "".join(s.rjust(10) for s in stages)]
    for m in metrics:
        lines.append(m.ljust(width) + "".join(f"{result['stages'][s][m]:10.4f}" for s in stages))
    for lang, per in result.get("languages", {}).items():
        for m in ("recall@5", "mrr@10"):
            lines.append(f"{lang} {m}".ljust(width) + "".join(f"{per[s][m]:10.4f}" for s in stages))
    lines.append(
        f"{result['queries']} answerable questions ({result['unanswerable']} unanswerable not scored)"
    )
    if "explain" in result:
        from .explain import render_summary

        lines.append(
            render_summary(
                {s: result["stages"][s]["explain"] for s in stages}, headline=result["stage"]
            )
        )
    if result["not_chunked"]:
        lines.append(
            f"{len(result['not_chunked'])} quote(s) are in no chunk (a parse/chunk problem): "
            + ", ".join(x["id"] for x in result["not_chunked"])
        )
    return "\n".join(lines)
