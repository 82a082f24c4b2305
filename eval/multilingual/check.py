#!/usr/bin/env python3
"""Consistency check for the multilingual golden set.

Verifies that:
- every line of questions.jsonl is a JSON object with id, question, relevant,
  answerable and language, and that ids are unique;
- each id starts with its language code and the language has a docs/<lang>/ folder;
- answerable questions list at least one quote, unanswerable ones list none;
- every quote is 5-20 words on one line, free of Markdown characters (# * | `),
  occurs verbatim (whitespace-collapsed) in its source file, and occurs
  (whitespace-collapsed, case-insensitive) in no other document;
- every language has at least 15 answerable questions.

Run from the repository root: python3 eval/multilingual/check.py
Exits 0 when everything passes, 1 otherwise.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
DOCS = HERE / "docs"
QUESTIONS = HERE / "questions.jsonl"
LANGS = ("en", "hu", "cs", "nl", "uk")
MIN_ANSWERABLE = 15
MARKDOWN_CHARS = set("#*|`")


def collapse(text: str) -> str:
    return " ".join(text.split())


def main() -> int:
    errors: list[str] = []
    docs: dict[str, str] = {}
    doc_lang: dict[str, str] = {}
    for path in sorted(DOCS.glob("*/*.md")):
        if path.name in docs:
            errors.append(f"duplicate document file name: {path.name}")
        docs[path.name] = collapse(path.read_text(encoding="utf-8"))
        doc_lang[path.name] = path.parent.name
    folded = {name: text.casefold() for name, text in docs.items()}

    ids: Counter[str] = Counter()
    answerable: Counter[str] = Counter()
    unanswerable: Counter[str] = Counter()
    n_quotes = 0
    lines = QUESTIONS.read_text(encoding="utf-8").splitlines()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"questions.jsonl:{n}"
        try:
            q = json.loads(line)
            qid, lang = str(q["id"]), str(q["language"])
            question, rel, ans = q["question"], q["relevant"], q["answerable"]
        except (ValueError, KeyError, TypeError) as exc:
            errors.append(f"{where}: malformed line: {exc}")
            continue
        where = f"{where} ({qid})"
        ids[qid] += 1
        if lang not in LANGS:
            errors.append(f"{where}: unknown language {lang!r}")
        if not qid.startswith(lang + "-"):
            errors.append(f"{where}: id does not start with '{lang}-'")
        if not isinstance(question, str) or not question.strip():
            errors.append(f"{where}: empty question")
        if not isinstance(ans, bool) or not isinstance(rel, list):
            errors.append(f"{where}: answerable must be a bool and relevant a list")
            continue
        if ans and not rel:
            errors.append(f"{where}: answerable but no relevant quote")
        if not ans and rel:
            errors.append(f"{where}: unanswerable but lists relevant quotes")
        (answerable if ans else unanswerable)[lang] += 1
        for r in rel:
            n_quotes += 1
            src, quote = r.get("source", ""), r.get("quote", "")
            if src != Path(src).name:
                errors.append(f"{where}: source must be a file name only: {src!r}")
            if src not in docs:
                errors.append(f"{where}: unknown source {src!r}")
                continue
            if doc_lang[src] != lang:
                errors.append(f"{where}: source {src} is not a {lang} document")
            if "\n" in quote or "\r" in quote:
                errors.append(f"{where}: quote contains a line break")
            if MARKDOWN_CHARS & set(quote):
                errors.append(f"{where}: quote contains Markdown characters: {quote!r}")
            words = len(quote.split())
            if not 5 <= words <= 20:
                errors.append(f"{where}: quote has {words} words (want 5-20): {quote!r}")
            cq = collapse(quote)
            if cq not in docs[src]:
                errors.append(f"{where}: quote not found verbatim in {src}: {quote!r}")
            others = [o for o, t in folded.items() if o != src and cq.casefold() in t]
            if others:
                errors.append(f"{where}: quote also occurs in {', '.join(others)}: {quote!r}")

    for qid, count in ids.items():
        if count > 1:
            errors.append(f"duplicate id {qid} ({count} times)")
    for lang in LANGS:
        if answerable[lang] < MIN_ANSWERABLE:
            errors.append(
                f"{lang}: {answerable[lang]} answerable questions (want >= {MIN_ANSWERABLE})"
            )

    errors += check_crosslingual()
    for e in errors:
        print("FAIL", e)
    summary = ", ".join(f"{lang} {answerable[lang]}+{unanswerable[lang]}" for lang in LANGS)
    print(
        f"{len(docs)} documents, {sum(ids.values())} questions, {n_quotes} quotes "
        f"(answerable+unanswerable: {summary})"
    )
    print("FAILED" if errors else "OK")
    return 1 if errors else 0


def check_crosslingual() -> list[str]:
    """crosslingual.jsonl: English translations of the other languages' questions, each
    naming the question it translates and keeping its answerability and quotes."""
    path = HERE / "crosslingual.jsonl"
    if not path.exists():
        return []
    originals = {}
    for line in QUESTIONS.read_text(encoding="utf-8").splitlines():
        if line.strip():
            q = json.loads(line)
            originals[q["id"]] = q
    errors = []
    seen = set()
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        q = json.loads(line)
        o = originals.get(q.get("translates"))
        where = f"crosslingual.jsonl:{n}"
        if o is None:
            errors.append(f"{where}: translates unknown question {q.get('translates')!r}")
            continue
        if q["id"] != f"xl-{o['id']}" or q["id"] in seen:
            errors.append(f"{where}: id {q['id']!r} should be xl-{o['id']} and unique")
        seen.add(q["id"])
        if q["language"] != "en" or q["documents_language"] != o["language"] == o["id"][:2]:
            errors.append(f"{where}: want language en over {o['language']} documents")
        if q["relevant"] != o["relevant"] or q["answerable"] != o["answerable"]:
            errors.append(f"{where}: relevant/answerable differ from {o['id']}")
    return errors


if __name__ == "__main__":
    sys.exit(main())
