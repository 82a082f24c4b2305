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
) -> dict[str, Any]:
    """Ingest ``docs`` (incrementally) into ``index`` and score each stage on ``questions``."""
    from ..core.types import Principal
    from ..retrieve.search import SearchParams

    qs = load_questions(questions)
    report = index.ingest(docs, on_progress=on_progress)
    # a quote no chunk holds is a parse/chunk failure, not a retrieval one: report it
    with index.db.connection() as conn:
        rows = conn.execute(
            "SELECT d.source_uri, c.text FROM chunks c JOIN documents d ON d.id = c.document_id "
            "WHERE c.collection_id = %s AND c.is_current "
            "UNION ALL SELECT d.source_uri, p.text FROM chunk_parents p "
            "JOIN documents d ON d.id = p.document_id WHERE d.collection_id = %s AND d.is_current",
            (index.collection.id, index.collection.id),
        ).fetchall()
    stored: dict[str, list[str]] = {}
    for src, text in rows:
        stored.setdefault(Path(src).name, []).append(_norm(text))
    not_chunked = [
        {"id": q.id, "source": s, "quote": quote}
        for q in qs
        for s, quote in q.relevant
        if not any(_norm(quote) in t for t in stored.get(Path(s).name, []))
    ]
    answerable = [q for q in qs if q.answerable]
    qrels = {q.id: {f"quote{i}": 1 for i in range(len(q.relevant))} for q in answerable}
    params = SearchParams(
        depth=depth,
        rrf_k=index.settings.rrf_k,
        ef_search=max(index.settings.ef_search, 200),
        dedup_threshold=None,
    )
    result: dict[str, Any] = {"stages": {}}
    runs: dict[str, dict[str, list[str]]] = {}
    for stage in stages:
        run = {}
        for q in answerable:
            res = index.searcher.search(q.question, Principal(), k=depth, mode=stage, params=params)
            run[q.id] = _judge(res.hits, q)
        runs[stage] = run
        result["stages"][stage] = _rounded(evaluate_run(run, qrels, GOLDEN_METRICS))
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
    if result["not_chunked"]:
        lines.append(
            f"{len(result['not_chunked'])} quote(s) are in no chunk (a parse/chunk problem): "
            + ", ".join(x["id"] for x in result["not_chunked"])
        )
    return "\n".join(lines)
