"""The extractive answerer on the example corpus and its golden questions.

Opens an index of ``examples/docs`` (the data directory is the first argument, default
``.ragline``; it is only read: nothing is ingested or deleted), asks every question of
``examples/questions.jsonl`` the way ``Index.ask`` does (same hits, same answerer
settings) and reports:

  answered correctly  answerable questions answered (not abstained) whose answer
                      contains the gold answer's key facts (see :func:`key_facts`)
  abstained           unanswerable questions abstained on (and answerable ones
                      wrongly abstained on)
  cites gold          answered answerable questions with a cited passage that
                      contains a gold ``relevant`` quote
  quotes gold         ... whose answer text itself contains a gold quote (or, for a
                      table row, every cell of it)
  retrieved gold      questions with a gold quote in any retrieved passage: the
                      ceiling for the two above

Key facts of a gold answer: its lead clause (the text before the first ``;``, ``(``
or ``, with``/``, which``), whose numbers must all appear in the answer (``$5,000`` =
``5000``; ``2.3.1`` whole) and, when the clause has no number, at least 60% of its
content words (stemmed, stop words dropped). Answers are compared without their
``[n]`` markers and without table pipes.

Usage: python bench/extractive_examples.py [DATA_DIR] [--questions FILE] [--show] [--json]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

import ragline
from ragline.analysis import get_analyzer
from ragline.core.types import Answer
from ragline.generate import check_citations, strip_markers

QUESTIONS = Path(__file__).resolve().parent.parent / "examples" / "questions.jsonl"
WORD_SHARE = 0.6
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_LEAD_END = re.compile(r";|\(|,\s+(?:with|which|and|then)\b")


def numbers(text: str) -> set[str]:
    """Numbers in ``text``, thousands separators removed (``$5,000`` -> ``5000``)."""
    out = set()
    for m in _NUMBER.finditer(text):
        n = m.group(0)
        if re.fullmatch(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?", n):
            n = n.replace(",", "")
        out.add(n.rstrip(".,"))
    return out


def key_facts(gold: str) -> tuple[set[str], set[str]]:
    """The numbers and content terms of the lead clause of a gold answer."""
    lead = _LEAD_END.split(gold, maxsplit=1)[0]
    nums = numbers(lead)
    terms = set() if nums else set(get_analyzer("english").terms(lead))
    return nums, terms


def plain(text: str) -> str:
    """Answer text for comparison: no markers, no table pipes, single spaces."""
    text = strip_markers(text).replace("|", " ")
    return " ".join(text.split()).casefold()


def correct(answer_text: str, gold: str) -> bool:
    nums, terms = key_facts(gold)
    if nums:
        return nums <= numbers(plain(answer_text))
    found = set(get_analyzer("english").terms(answer_text))
    return bool(terms) and len(terms & found) >= WORD_SHARE * len(terms)


def contains_quote(text: str, quote: str) -> bool:
    return plain(quote) in plain(text)


def evaluate(q: dict, ans: Answer) -> dict:
    quotes = [r["quote"] for r in q.get("relevant", [])]
    by_chunk = {h.chunk_id: h for h in ans.hits}
    cited = [by_chunk[c.chunk_id].text for c in ans.citations if c.chunk_id in by_chunk]
    return {
        "id": q["id"],
        "question": q["question"],
        "answerable": q["answerable"],
        "abstained": ans.abstained,
        "evidence": round(ans.evidence, 3),
        "correct": q["answerable"] and not ans.abstained and correct(ans.text, q["answer"]),
        "cites_gold": any(contains_quote(t, qt) for t in cited for qt in quotes),
        "quotes_gold": not ans.abstained and any(contains_quote(ans.text, qt) for qt in quotes),
        "retrieved_gold": any(contains_quote(h.text, qt) for h in ans.hits for qt in quotes),
        "citations_ok": not check_citations(ans.text, ans.citations),
        "answer": ans.text,
        "gold": q["answer"],
    }


def summary(rows: list[dict]) -> dict:
    ans = [r for r in rows if r["answerable"]]
    una = [r for r in rows if not r["answerable"]]
    answered = [r for r in ans if not r["abstained"]]

    def share(xs: list[bool], n: int) -> float:
        return round(sum(xs) / n, 3) if n else float("nan")

    return {
        "answerable": len(ans),
        "unanswerable": len(una),
        "answered_correctly": share([r["correct"] for r in ans], len(ans)),
        "abstained_unanswerable": share([r["abstained"] for r in una], len(una)),
        "abstained_answerable": share([r["abstained"] for r in ans], len(ans)),
        "cites_gold": share([r["cites_gold"] for r in answered], len(answered)),
        "quotes_gold": share([r["quotes_gold"] for r in answered], len(answered)),
        "retrieved_gold": share([r["retrieved_gold"] for r in ans], len(ans)),
        "citations_ok": share([r["citations_ok"] for r in rows], len(rows)),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data_dir", nargs="?", default=".ragline")
    ap.add_argument("--questions", type=Path, default=QUESTIONS)
    ap.add_argument("--show", action="store_true", help="print every question and answer")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args(argv)

    with open(args.questions) as f:
        questions = [json.loads(line) for line in f if line.strip()]
    idx = ragline.open(args.data_dir)
    try:
        rows, ask_ms = [], []
        for q in questions:
            t0 = time.perf_counter()
            ans = idx.ask(q["question"])
            ask_ms.append(1000 * (time.perf_counter() - t0))
            rows.append(evaluate(q, ans))
    finally:
        idx.close()
    result = summary(rows)
    result["ask_ms_mean"] = round(sum(ask_ms) / len(ask_ms), 1)
    if args.json:
        print(json.dumps({"summary": result, "questions": rows}, indent=2))
        return 0
    if args.show:
        for r in rows:
            flags = "abstained" if r["abstained"] else ("ok" if r["correct"] else "WRONG")
            if not r["answerable"]:
                flags = "ok (abstained)" if r["abstained"] else "WRONG (answered)"
            print(f"{r['id']} [{flags}] evidence={r['evidence']} {r['question']}")
            print(f"    answer: {r['answer']}")
            print(f"    gold:   {r['gold']}\n")
    for k, v in result.items():
        print(f"{k:>24}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
