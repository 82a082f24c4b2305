"""Sanity-check examples/questions.jsonl against examples/docs/.

Every quote of an answerable question must occur verbatim in its source
file's visible text (HTML: tags, <script>/<style> removed, whitespace
collapsed), must be 5-20 words, and must not contain Markdown syntax or a
line break. Run: python examples/check_questions.py
"""
import html
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DOCS = HERE / "docs"
MD_CHARS = set("*_`#|[]<>")


def visible_text(path: Path) -> str:
    raw = path.read_text(encoding="utf-8")
    if path.suffix == ".html":
        raw = re.sub(r"<(script|style)\b.*?</\1>", " ", raw, flags=re.S | re.I)
        raw = re.sub(r"<[^>]+>", " ", raw)
        raw = html.unescape(raw)
    return re.sub(r"\s+", " ", raw)


def main() -> int:
    texts = {p.name: visible_text(p) for p in DOCS.iterdir() if p.is_file()}
    errors = []
    rows = [json.loads(line) for line in (HERE / "questions.jsonl").read_text().splitlines() if line.strip()]
    ids = [r["id"] for r in rows]
    if len(set(ids)) != len(ids):
        errors.append("duplicate ids")
    for r in rows:
        if r["answerable"] != bool(r["relevant"]):
            errors.append(f"{r['id']}: answerable flag does not match relevant list")
        for rel in r["relevant"]:
            q = rel["quote"]
            n = len(q.split())
            if not 5 <= n <= 20:
                errors.append(f"{r['id']}: quote has {n} words")
            if "\n" in q or MD_CHARS & set(q):
                errors.append(f"{r['id']}: quote has a line break or Markdown character")
            if rel["source"] not in texts:
                errors.append(f"{r['id']}: unknown source {rel['source']}")
            elif q not in texts[rel["source"]]:
                errors.append(f"{r['id']}: quote not found in {rel['source']}")
            others = [s for s, t in texts.items() if s != rel["source"] and q in t]
            if others:
                errors.append(f"{r['id']}: quote also occurs in {others}")
    n_ans = sum(r["answerable"] for r in rows)
    print(f"{len(rows)} questions, {n_ans} answerable, {len(rows) - n_ans} unanswerable")
    for e in errors:
        print("ERROR", e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
