"""Agent = auto vs one-shot on the multilingual golden set (eval/multilingual): does the
research loop lose anything on single-hop questions in five languages?

For each answerable question: whether a passage holding its gold quote is among the
passages the answerer read (evidence recall), whether the answer cites such a passage
(answered with the quote's passage), abstention; for the unanswerable ones, abstention.
Extractive answerer, embedder e5 (what embedder=auto picks for these documents).

    python bench/agent_multilingual.py --data-dir /tmp/ml [--limit N]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import ragline

HERE = Path(__file__).resolve().parents[1] / "eval" / "multilingual"


def norm(s: str) -> str:
    return " ".join(s.split()).casefold()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--embedder", default="e5")
    args = ap.parse_args()
    idx = ragline.open(args.data_dir, collection="ml-agent", embedder=args.embedder)
    idx.ingest(HERE / "docs")
    qs = [json.loads(x) for x in (HERE / "questions.jsonl").read_text().splitlines() if x.strip()]
    qs = qs[: args.limit] if args.limit else qs
    out = {}
    for mode in ("off", "auto"):
        rows = []
        for q in qs:
            t = time.perf_counter()
            a = idx.ask(q["question"], agent=mode, trace=False)
            ms = (time.perf_counter() - t) * 1000
            quotes = [norm(r["quote"]) for r in q["relevant"]]
            held = {h.chunk_id for h in a.hits if any(x in norm(h.text) for x in quotes)}
            rows.append(
                {
                    "answerable": q["answerable"],
                    "evidence": bool(held),
                    "cited": any(c.chunk_id in held for c in a.citations),
                    "abstained": a.abstained,
                    "loop": bool((a.agent or {}).get("loop")),
                    "steps": (a.agent or {}).get("steps", 1),
                    "ms": ms,
                }
            )
        ans = [r for r in rows if r["answerable"]]
        imp = [r for r in rows if not r["answerable"]]
        out[mode] = {
            "questions": len(rows),
            "evidence_recall": round(sum(r["evidence"] for r in ans) / len(ans), 4),
            "cited_gold": round(sum(r["cited"] for r in ans) / len(ans), 4),
            "answered": sum(not r["abstained"] for r in ans),
            "unanswerable_abstained": f"{sum(r['abstained'] for r in imp)}/{len(imp)}",
            "loop_share": round(sum(r["loop"] for r in rows) / len(rows), 3),
            "steps_mean": round(sum(r["steps"] for r in rows) / len(rows), 2),
            "latency_ms_median": round(sorted(r["ms"] for r in rows)[len(rows) // 2], 1),
        }
    print(json.dumps(out, indent=2))
    idx.close()


if __name__ == "__main__":
    main()
