"""Extractive answers on the multilingual golden set (``eval/multilingual``), per language.

The 25 documents are ingested (BM25 only: no vectors needed for this measurement) and
each question is answered from the BM25 top 5 by the extractive answerer twice: as it
read passages before issue 17 (one English analyzer for every passage) and as it reads
them now (each passage in its document's language, as BM25 does). Hungarian and Czech
questions are also asked with their accents removed.

Counts, per language:
  correct     answerable: answered, and the first citation is a chunk of the relevant
              file that holds the quote (whitespace and case ignored); unanswerable:
              abstained
  answered    answerable questions answered at all
  cite ok     citations (all of them, on answered answerable questions) pointing at a
              chunk holding a relevant quote

With ``--crosslingual``: the English translations of the hu/cs/nl/uk questions
(``eval/multilingual/crosslingual.jsonl``), each asked over a collection of its
language's five documents (multilingual-e5-small, hybrid top 5), answered as before
(lexical only) and after (passages in another language than the question judged on the
embedding: :mod:`ragline.generate.semantic`); plus the questions as written over the same
collections, which the change must leave alone.

Usage: python bench/extractive_golden.py [--data-dir /tmp/rl-golden] [--json] [--crosslingual]
"""

from __future__ import annotations

import argparse
import json
import sys
import unicodedata
from collections import defaultdict
from pathlib import Path

import ragline
from ragline.generate import ExtractiveAnswerer

HERE = Path(__file__).resolve().parents[1] / "eval" / "multilingual"


def unaccented(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")


def collapse(text: str) -> str:
    return " ".join(text.split()).casefold()


def load(name: str = "questions.jsonl") -> list[dict]:
    return [json.loads(line) for line in (HERE / name).read_text().splitlines() if line]


def ask(rows, answerers, hits, text: str, q: dict, lang: str, variant: str) -> None:
    """Every answerer's answer to ``text`` from ``hits``, scored into ``rows``."""
    for name, a in answerers.items():
        r = score(a.answer(text, hits), q)
        r["answerable"] = q["answerable"]
        rows[name, lang, variant].append(r)
        rows[name, "all", variant].append(r)


def holds(hit, relevant: list[dict]) -> bool:
    name = Path(hit.source).name
    return any(name == r["source"] and collapse(r["quote"]) in collapse(hit.text) for r in relevant)


def score(answer, q: dict) -> dict[str, bool | list[bool]]:
    if not q["answerable"]:
        return {"correct": answer.abstained, "answered": not answer.abstained, "cites": []}
    if answer.abstained or not answer.citations:
        return {"correct": False, "answered": False, "cites": []}
    by_chunk = {h.chunk_id: h for h in answer.hits}
    cites = [holds(by_chunk[c.chunk_id], q["relevant"]) for c in answer.citations]
    return {"correct": cites[0], "answered": True, "cites": cites}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", default="/tmp/rl-golden")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--crosslingual", action="store_true")
    args = ap.parse_args(argv)
    if args.crosslingual:
        return report(crosslingual(args.data_dir), args.json)
    idx = ragline.open(args.data_dir, collection="golden17", embedder="minilm")
    if not idx.documents():
        idx.ingest_sources((s for s in _sources()), embed=False)
    answerers = {
        "before": ExtractiveAnswerer(language=idx.settings.language),
        "after": ExtractiveAnswerer(language=idx.settings.language, analyzer=idx.analyzer),
    }
    rows: dict[tuple[str, str, str], list[dict]] = defaultdict(list)
    for q in load():
        variants = [("as written", q["question"])]
        if q["language"] in ("hu", "cs"):
            variants.append(("no accents", unaccented(q["question"])))
        for variant, text in variants:
            hits = idx.search(text, k=5, mode="bm25")
            ask(rows, answerers, hits, text, q, q["language"], variant)
    idx.close()
    return report(rows, args.json)


def crosslingual(data_dir: str) -> dict[tuple[str, str, str], list[dict]]:
    rows: dict[tuple[str, str, str], list[dict]] = defaultdict(list)
    translated = load("crosslingual.jsonl")
    for lang in ("hu", "cs", "nl", "uk"):
        idx = ragline.open(data_dir, collection=f"golden17-e5-{lang}", embedder="e5")
        if not idx.documents():
            idx.ingest_sources(_sources(lang))
        answerers = {
            "before": ExtractiveAnswerer(language=idx.settings.language, analyzer=idx.analyzer),
            "after": ExtractiveAnswerer(
                language=idx.settings.language, analyzer=idx.analyzer, embedder=idx.embedder
            ),
        }
        asked = [("english", q) for q in translated if q["documents_language"] == lang]
        asked += [("as written", q) for q in load() if q["language"] == lang]
        for variant, q in asked:
            hits = idx.search(q["question"], k=5, mode="hybrid")
            ask(rows, answerers, hits, q["question"], q, lang, variant)
        idx.close()
    return rows


def report(rows: dict[tuple[str, str, str], list[dict]], as_json: bool) -> int:
    out = {}
    for (name, lang, variant), rs in sorted(rows.items()):
        ans = [r for r in rs if r["answerable"]]
        un = [r for r in rs if not r["answerable"]]
        cites = [c for r in ans for c in r["cites"]]
        out[f"{name} {lang} {variant}"] = {
            "answerable_correct": sum(r["correct"] for r in ans) / len(ans),
            "answerable_answered": sum(r["answered"] for r in ans) / len(ans),
            "unanswerable_abstained": sum(r["correct"] for r in un) / len(un) if un else None,
            "cite_ok": sum(cites) / len(cites) if cites else None,
            "questions": len(rs),
        }
    if as_json:
        print(json.dumps(out, indent=2))
    else:
        print(f"{'setting':<28}{'correct':>9}{'answered':>9}{'abst ok':>9}{'cite ok':>9}{'n':>5}")
        for k, m in out.items():
            f = lambda v: f"{v:>9.2f}" if v is not None else f"{'-':>9}"  # noqa: E731
            print(
                f"{k:<28}{f(m['answerable_correct'])}{f(m['answerable_answered'])}"
                f"{f(m['unanswerable_abstained'])}{f(m['cite_ok'])}{m['questions']:>5}"
            )
    return 0


def _sources(lang: str = "*"):
    from ragline.ingest.sources import file_source

    for path in sorted((HERE / "docs").glob(f"{lang}/*.md")):
        yield file_source(path)


if __name__ == "__main__":
    sys.exit(main())
