"""Parse throughput on the shared real documents (../shared/data/documents), in process.

Prints pages/s for PDFs (text layer; image-only pages go to OCR and are counted apart)
and files/s and MB/s per format, best of 3 passes.

    python bench/parse_throughput.py [--docs ../shared/data/documents]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from ragline.core.errors import ParseError
from ragline.parse import parse_file


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--docs", default=str(Path(__file__).resolve().parents[1].parent / "shared/data/documents")
    )
    ap.add_argument("--passes", type=int, default=3)
    args = ap.parse_args()
    files = sorted(
        p for p in Path(args.docs).rglob("*") if p.is_file() and p.parent.name != "expected"
    )
    per: dict[str, dict[str, float]] = {}
    for f in files:
        kind = f.suffix.lower().lstrip(".")
        best = None
        pages = 1
        for _ in range(args.passes):
            t = time.perf_counter()
            try:
                doc = parse_file(f)
                pages = int(doc.metadata.get("page_count") or doc.metadata.get("pages") or 1)
            except ParseError:
                pages = 0
            dt = time.perf_counter() - t
            best = dt if best is None else min(best, dt)
        agg = per.setdefault(kind, {"files": 0, "pages": 0, "seconds": 0.0, "bytes": 0})
        agg["files"] += 1
        agg["pages"] += pages
        agg["seconds"] += best or 0.0
        agg["bytes"] += f.stat().st_size
    out = {
        kind: {
            "files": int(a["files"]),
            "pages": int(a["pages"]),
            "seconds": round(a["seconds"], 3),
            "pages_per_s": round(a["pages"] / a["seconds"], 2) if a["seconds"] else None,
            "mb_per_s": round(a["bytes"] / 1e6 / a["seconds"], 2) if a["seconds"] else None,
        }
        for kind, a in sorted(per.items())
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
