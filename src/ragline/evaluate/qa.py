"""``ragline eval qa``: answer quality on a SQuAD-style set, per generator.

Layout: ``passages.jsonl`` (``_id``, ``title``, ``text``) and ``qa.jsonl`` (``id``,
``question``, ``passage_id``, ``is_impossible``, ``answers``). The passages go into their
own collection; every question runs the whole online path (retrieval, context, the
configured generator, verification). Metrics:

* ``answer_recall`` — answerable questions whose answer contains a gold answer (SQuAD
  normalization, citation markers stripped, whole words); an abstention is a miss;
* ``token_f1`` — SQuAD token F1 against the best gold answer; on an unanswerable question
  1 for an abstention, else 0 (the SQuAD 2.0 convention);
* ``abstain_precision`` / ``abstain_recall`` / ``abstain_f1`` — abstention as the
  prediction of "unanswerable";
* ``citation_validity`` — citations of answered questions pointing at the gold passage or
  at a passage containing a gold answer;
* ``faithfulness`` — RAGAS-style supported claims / claims, by the lexical support scorer
  of :mod:`ragline.generate.verify`, over answered questions (every generator, so they
  compare on one scale); ``grounded_ratio`` — the generator's own verifier, where it has one.

``limit`` takes a deterministic sample: the questions with the smallest SHA-256 of their id.
"""

from __future__ import annotations

import hashlib
import re
import string
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..core.types import Answer, Hit

_PUNCT = set(string.punctuation)


def normalize_answer(text: str, *, punctuation: str = "") -> str:
    """SQuAD normalization: lower case, no punctuation, no articles, single spaces.
    ``punctuation=" "`` makes punctuation a word break instead ("Rollo's" → "rollo s")."""
    text = "".join(punctuation if ch in _PUNCT else ch for ch in text.lower())
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def contains_answer(text: str, answers: Sequence[str]) -> bool:
    """A gold answer occurs in ``text`` as whole words, under SQuAD normalization or with
    punctuation as a word break (an answer glued to punctuation: "Afrikaans-speaking")."""
    for punct in ("", " "):
        padded = f" {normalize_answer(text, punctuation=punct)} "
        golds = (normalize_answer(a, punctuation=punct) for a in answers)
        if any(n and f" {n} " in padded for n in golds):
            return True
    return False


def token_f1(prediction: str, answers: Sequence[str]) -> float:
    """The best SQuAD token F1 of ``prediction`` against the gold ``answers``."""
    pred = normalize_answer(prediction).split()
    best = 0.0
    for gold in answers:
        g = normalize_answer(gold).split()
        common = sum((Counter(pred) & Counter(g)).values())
        if not common:
            continue
        p, r = common / len(pred), common / len(g)
        best = max(best, 2 * p * r / (p + r))
    return best


def load_qa(passages: Path, questions: Path) -> tuple[list[dict], list[dict]]:
    from .beir import BeirFormatError, json_lines

    def read(path: Path, keys: tuple[str, ...]) -> list[dict]:
        out = []
        for n, row in json_lines(path):
            missing = [k for k in keys if k not in row]
            if missing:
                raise BeirFormatError(path, n, f"missing key(s) {', '.join(missing)}")
            out.append(row)
        return out

    return (
        read(passages, ("_id", "title", "text")),
        read(questions, ("id", "question", "passage_id", "is_impossible", "answers")),
    )


def sample(qa: list[dict], limit: int | None) -> list[dict]:
    if not limit or limit >= len(qa):
        return qa
    return sorted(qa, key=lambda q: hashlib.sha256(str(q["id"]).encode()).hexdigest())[:limit]


def evaluate_qa(
    index: Any,
    passages_file: Path,
    questions_file: Path,
    *,
    limit: int | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    explain: bool = False,
) -> dict[str, Any]:
    """Ingest the passages, ask every (sampled) question, score the answers.

    With ``explain``, every ask stores its trace and ``"explain"`` blames each answerable
    question answered wrongly on a stage (:mod:`ragline.evaluate.explain`): its gold
    passage's answer-holding chunks not chunked, not retrieved, retrieved but not packed
    into the context, or packed and ignored by the generator."""
    from ..analysis.analyzer import get_analyzer
    from ..generate import strip_markers
    from ..generate.verify import check_claims
    from ..ingest.sources import text_source

    passages, qa = load_qa(passages_file, questions_file)
    qa = sample(qa, limit)
    report = index.ingest_sources([text_source(p["_id"], p["title"], p["text"]) for p in passages])
    text_of = {p["_id"]: p["text"] for p in passages}
    terms = get_analyzer(index.settings.language).terms
    rows: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    for i, q in enumerate(qa):
        t = time.perf_counter()
        a: Answer = index.ask(q["question"], trace=True) if explain else index.ask(q["question"])
        ms = (time.perf_counter() - t) * 1000
        gold = list(q["answers"])
        body = strip_markers(a.text)
        cites = [
            c.doc_key == q["passage_id"]
            or (bool(gold) and contains_answer(text_of.get(c.doc_key, ""), gold))
            for c in a.citations
        ]
        by_chunk = {h.chunk_id: h for h in a.hits}
        cited_hits: list[Hit] = [
            by_chunk[c.chunk_id] for c in a.citations if c.chunk_id in by_chunk
        ]
        claims = [] if a.abstained else check_claims(a.text, cited_hits, terms)
        rows.append(
            {
                "impossible": bool(q["is_impossible"]),
                "abstained": a.abstained,
                "hit": bool(gold) and not a.abstained and contains_answer(body, gold),
                "f1": (1.0 if a.abstained else 0.0)
                if q["is_impossible"] or not gold
                else (0.0 if a.abstained else token_f1(body, gold)),
                "cites": cites,
                "claims": [c.supported for c in claims],
                "grounded": a.grounded_ratio,
                "ms": ms,
                "trace_id": a.trace_id,
                "prompt_tokens": a.prompt_tokens,
                "completion_tokens": a.completion_tokens,
                "generation_ms": a.generation_ms,
            }
        )
        if on_progress:
            on_progress(i + 1, len(qa))
    explained = {"explain": _explain(index, qa, rows)} if explain else {}
    return {
        **qa_metrics(rows),
        "generator": index.settings.generator,
        "collection": index.collection.name,
        "passages_added": len(report.added),
        "answer_ms_mean": round(sum(r["ms"] for r in rows) / max(len(rows), 1), 1),
        "elapsed_s": round(time.perf_counter() - t0, 1),
        **explained,
    }


def gold_chunks(chunks: Sequence[tuple[int, str]], answers: Sequence[str]) -> frozenset[int]:
    """The chunks of a gold passage (id, text) that hold one of the gold ``answers``: as
    :func:`contains_answer` finds it, or verbatim (case and spacing aside), since SQuAD
    normalization hides an answer glued to punctuation ("Rollo's", "Afrikaans-speaking")."""
    if not answers:
        return frozenset()
    plain = [" ".join(a.split()).casefold() for a in answers if a.strip()]

    def holds(text: str) -> bool:
        folded = " ".join(text.split()).casefold()
        return contains_answer(text, answers) or any(a in folded for a in plain)

    return frozenset(cid for cid, text in chunks if holds(text))


def _explain(index: Any, qa: list[dict], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Read the traces back and blame each answerable question answered wrongly."""
    from .explain import GoldItem, explain_answer, read_traces, summarize

    todo = [(q, r) for q, r in zip(qa, rows, strict=True) if not r["impossible"]]
    keys = sorted({str(q["passage_id"]) for q, _ in todo})
    by_passage: dict[str, list[tuple[int, str]]] = {}
    with index.db.connection() as conn:
        for key, cid, text, parent in conn.execute(
            "SELECT d.doc_key, c.id, c.text, p.text FROM chunks c "
            "JOIN documents d ON d.tenant = c.tenant AND d.id = c.document_id "
            "LEFT JOIN chunk_parents p ON p.tenant = c.tenant "
            "AND p.document_id = c.document_id AND p.ordinal = c.parent_ordinal "
            "WHERE c.collection_id = %s AND c.is_current AND c.tenant = 'default' "
            "AND d.doc_key = ANY(%s)",
            (index.collection.id, keys),
        ):
            by_passage.setdefault(key, []).append((int(cid), parent or text))
    wrong = {str(q["id"]): r["trace_id"] for q, r in todo if not r["hit"]}
    missing = [qid for qid, tid in wrong.items() if tid is None]
    if missing:
        from ..core.errors import RaglineError

        raise RaglineError(f"no trace was stored for question(s) {', '.join(missing[:5])}")
    traces = read_traces(index, wrong)
    misses = []
    for q, _ in todo:
        qid = str(q["id"])
        if qid not in wrong:
            continue
        gold = GoldItem(
            str(q["passage_id"]),
            gold_chunks(by_passage.get(str(q["passage_id"]), ()), list(q["answers"])),
            str(q["passage_id"]),
        )
        miss = explain_answer(qid, traces[qid], gold, correct=False, trace_id=wrong[qid])
        if miss is not None:
            misses.append(miss)
    return summarize(misses, gold_items=len(todo))


def qa_metrics(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    answerable = [r for r in rows if not r["impossible"]]
    impossible = [r for r in rows if r["impossible"]]
    abstained = [r for r in rows if r["abstained"]]
    tp = sum(r["impossible"] for r in abstained)
    p = tp / len(abstained) if abstained else 0.0
    rc = tp / len(impossible) if impossible else 0.0
    cites = [ok for r in rows if not r["abstained"] for ok in r["cites"]]
    claims = [ok for r in rows if not r["abstained"] for ok in r["claims"]]
    grounded = [r["grounded"] for r in rows if not r["abstained"] and r["grounded"] is not None]

    def rnd(x: float | None) -> float | None:
        return None if x is None else round(x, 4)

    return {
        "questions": len(rows),
        "answerable": len(answerable),
        "unanswerable": len(impossible),
        "answer_recall": rnd(sum(r["hit"] for r in answerable) / len(answerable))
        if answerable
        else None,
        "token_f1": rnd(sum(r["f1"] for r in rows) / len(rows)) if rows else None,
        "abstain_precision": rnd(p),
        "abstain_recall": rnd(rc),
        "abstain_f1": rnd(2 * p * rc / (p + rc) if p + rc else 0.0),
        "answered": len(rows) - len(abstained),
        "citation_validity": rnd(sum(cites) / len(cites)) if cites else None,
        "faithfulness": rnd(sum(claims) / len(claims)) if claims else None,
        "grounded_ratio": rnd(sum(grounded) / len(grounded)) if grounded else None,
        **model_call_metrics(rows),
    }


def model_call_metrics(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Model calls and their speed: mean prompt and reply sizes (the generator's tokens)
    and generated tokens per second of call time (prompt reading included, so it is a
    lower bound of the decoding speed). Empty for the extractive answerer."""
    calls = [r for r in rows if r.get("generation_ms") is not None]
    if not calls:
        return {"model_calls": 0}
    seconds = sum(r["generation_ms"] for r in calls) / 1000
    prompt = [r["prompt_tokens"] for r in calls if r.get("prompt_tokens") is not None]
    reply = [r["completion_tokens"] or 0 for r in calls]
    return {
        "model_calls": len(calls),
        "prompt_tokens_mean": round(sum(prompt) / len(prompt), 1) if prompt else None,
        "completion_tokens_mean": round(sum(reply) / len(calls), 1),
        "generation_s_mean": round(seconds / len(calls), 2),
        "tokens_per_s": round(sum(reply) / seconds, 2) if seconds > 0 else None,
        "prompt_and_reply_tokens_per_s": round((sum(prompt) + sum(reply)) / seconds, 1)
        if seconds > 0
        else None,
    }
