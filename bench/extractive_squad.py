"""Calibrate ``ExtractiveAnswerer.min_evidence`` on SQuAD 2.0 (dev subset).

BM25 (bm25s, Lucene variant, k1=1.2, b=0.75, ragline's analyzer terms) over the
passages retrieves the top 5 for each question; the answerer runs once per question
with ``min_evidence=0`` and every threshold is then applied to the recorded evidence
(the answer text does not depend on the threshold). Questions with index % 3 == 0 tune
the threshold; the others report it.

Metrics:
  answer recall   answerable questions whose gold answer appears in the answer text
                  (SQuAD normalization, markers stripped, whole-word match);
                  an abstention counts as a miss
  abstain P/R/F1  abstention as the prediction of "unanswerable"
  cite ok         citations on answered answerable questions pointing at the gold
                  passage or at a passage containing a gold answer
  accuracy        answerable answered with the gold answer, or unanswerable abstained

Usage: python bench/extractive_squad.py [--data DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import re
import string
import sys
import time
from pathlib import Path

import bm25s
import numpy as np

from ragline.analysis import get_analyzer
from ragline.core.types import Hit
from ragline.generate import ExtractiveAnswerer, strip_markers

DATA = Path("/work/shared/data/squad2-dev")
THRESHOLDS = [round(0.025 * i, 3) for i in range(41)]


def normalize(text: str) -> str:
    """SQuAD answer normalization: lower, no punctuation, no articles, single spaces."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def contains(haystack_norm: str, answers: list[str]) -> bool:
    padded = f" {haystack_norm} "
    return any(n and f" {n} " in padded for n in (normalize(a) for a in answers))


def load(data: Path) -> tuple[list[dict], list[dict]]:
    with open(data / "passages.jsonl") as f:
        passages = [json.loads(line) for line in f]
    with open(data / "qa.jsonl") as f:
        qa = [json.loads(line) for line in f]
    return passages, qa


def retrieve(passages: list[dict], qa: list[dict], k: int = 5) -> list[list[Hit]]:
    analyzer = get_analyzer("english")
    corpus = [analyzer.terms(f"{p['title']}\n\n{p['text']}") for p in passages]
    bm25 = bm25s.BM25(method="lucene", k1=1.2, b=0.75)
    bm25.index(corpus, show_progress=False)
    vocab = set(bm25.vocab_dict)
    out: list[list[Hit]] = []
    for q in qa:
        terms = [t for t in analyzer.terms(q["question"]) if t in vocab]
        if not terms:
            out.append([])
            continue
        docs, scores = bm25.retrieve([terms], k=k, show_progress=False)
        hits = []
        for rank, (i, s) in enumerate(zip(docs[0].tolist(), scores[0].tolist()), start=1):
            if s <= 0:
                continue
            p = passages[i]
            hits.append(
                Hit(
                    chunk_id=i,
                    document_id=i,
                    doc_key=p["_id"],
                    title=p["title"],
                    source=f"squad2-dev/{p['_id']}",
                    text=p["text"],
                    score=float(s),
                    rank=rank,
                    scores={"bm25": float(s)},
                    ranks={"bm25": rank},
                )
            )
        out.append(hits)
    return out


def run(passages: list[dict], qa: list[dict], hits: list[list[Hit]]) -> list[dict]:
    """One record per question: evidence, whether an answer was possible, its quality."""
    answerer = ExtractiveAnswerer(min_evidence=0.0)
    norm_passage = {p["_id"]: normalize(p["text"]) for p in passages}
    records = []
    for q, h in zip(qa, hits):
        t0 = time.perf_counter()
        a = answerer.answer(q["question"], h)
        ms = 1000 * (time.perf_counter() - t0)
        gold = q["answers"]
        cites_ok = [
            c.doc_key == q["passage_id"] or (bool(gold) and contains(norm_passage[c.doc_key], gold))
            for c in a.citations
        ]
        records.append(
            {
                "impossible": q["is_impossible"],
                "evidence": a.evidence,
                "can_answer": not a.abstained,
                "hit": bool(gold)
                and not a.abstained
                and contains(normalize(strip_markers(a.text)), gold),
                "cites_ok": cites_ok,
                "gold_retrieved": any(x.doc_key == q["passage_id"] for x in h),
                "ms": ms,
            }
        )
    return records


def metrics(records: list[dict], answered: list[bool]) -> dict[str, float]:
    ans = [r for r in records if not r["impossible"]]
    n_ans = len(ans)
    recall = sum(r["hit"] and a for r, a in zip(records, answered) if not r["impossible"]) / n_ans
    tp = sum((not a) and r["impossible"] for r, a in zip(records, answered))
    pred = sum(not a for a in answered)
    pos = sum(r["impossible"] for r in records)
    p = tp / pred if pred else 0.0
    rc = tp / pos if pos else 0.0
    f1 = 2 * p * rc / (p + rc) if p + rc else 0.0
    cites = [
        ok for r, a in zip(records, answered) if a and not r["impossible"] for ok in r["cites_ok"]
    ]
    correct = sum(
        (r["impossible"] and not a) or (not r["impossible"] and a and r["hit"])
        for r, a in zip(records, answered)
    )
    return {
        "answer_recall": recall,
        "abstain_p": p,
        "abstain_r": rc,
        "abstain_f1": f1,
        "cite_ok": sum(cites) / len(cites) if cites else float("nan"),
        "accuracy": correct / len(records),
        "answered": sum(answered) / len(records),
        "objective": (recall + f1) / 2,
    }


def at(records: list[dict], threshold: float) -> dict[str, float]:
    return metrics(records, [r["can_answer"] and r["evidence"] >= threshold for r in records])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args(argv)

    passages, qa = load(args.data)
    t0 = time.perf_counter()
    hits = retrieve(passages, qa)
    t1 = time.perf_counter()
    records = run(passages, qa, hits)
    t2 = time.perf_counter()
    tune = [r for i, r in enumerate(records) if i % 3 == 0]
    test = [r for i, r in enumerate(records) if i % 3 != 0]

    sweep = [(t, at(tune, t)) for t in THRESHOLDS]
    best_t, _ = max(sweep, key=lambda tm: (round(tm[1]["objective"], 6), -tm[0]))
    rows = {
        f"min_evidence={best_t:.3f} (chosen)": at(test, best_t),
        "always answer": metrics(test, [True] * len(test)),
        "always abstain": metrics(test, [False] * len(test)),
    }
    for t in THRESHOLDS[::4]:
        rows.setdefault(f"min_evidence={t:.3f}", at(test, t))
    ms = np.array([r["ms"] for r in records])
    info = {
        "questions": len(records),
        "unanswerable": sum(r["impossible"] for r in records),
        "tune": len(tune),
        "test": len(test),
        "gold_passage_in_top5": float(np.mean([r["gold_retrieved"] for r in records])),
        "chosen_min_evidence": best_t,
        "retrieval_s": round(t1 - t0, 2),
        "answer_ms_mean": round(float(ms.mean()), 2),
        "answer_ms_p99": round(float(np.percentile(ms, 99)), 2),
        "answer_s_total": round(t2 - t1, 2),
    }
    if args.json:
        print(json.dumps({"info": info, "test": rows, "tune_sweep": dict(sweep)}, indent=2))
        return 0
    for k, v in info.items():
        print(f"{k:>22}: {v}")
    print("\ntuning sweep (every 3rd question):")
    print(f"{'min_evidence':>12} {'recall':>7} {'abst F1':>7} {'objective':>9} {'accuracy':>8}")
    for t, m in sweep:
        print(
            f"{t:>12.3f} {m['answer_recall']:>7.3f} {m['abstain_f1']:>7.3f}"
            f" {m['objective']:>9.3f} {m['accuracy']:>8.3f}"
        )
    print("\nheld-out questions (the other two thirds):")
    head = ["recall", "abst P", "abst R", "abst F1", "cite ok", "accuracy", "answered", "objective"]
    print(f"{'setting':<32}" + "".join(f"{h:>10}" for h in head))
    for name, m in rows.items():
        vals = [
            m[k]
            for k in (
                "answer_recall",
                "abstain_p",
                "abstain_r",
                "abstain_f1",
                "cite_ok",
                "accuracy",
                "answered",
                "objective",
            )
        ]
        print(f"{name:<32}" + "".join(f"{v:>10.3f}" for v in vals))
    return 0


if __name__ == "__main__":
    sys.exit(main())
