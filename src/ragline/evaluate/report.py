"""``--report FILE.html``: an evaluation result as one self-contained HTML page.

A small bar chart per stage (inline SVG: no script, no network, opens anywhere), the
same numbers as a table, and the per-language breakdown when the set has languages.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

CHART_METRICS: tuple[str, ...] = (
    "recall@5",
    "recall@10",
    "recall@100",
    "precision@5",
    "mrr@10",
    "ndcg@10",
    "map@100",
)
_COLORS = {"bm25": "#b5651d", "vector": "#2b6cb0", "hybrid": "#2f855a", "rerank": "#6b46c1"}


def bar_chart(name: str, metrics: Mapping[str, float], keys: Sequence[str] = CHART_METRICS) -> str:
    """An SVG of horizontal bars, one per metric, on a 0–1 scale."""
    row, label_w, bar_w = 22, 110, 260
    color = _COLORS.get(name, "#4a5568")
    parts = [
        f'<svg role="img" aria-label="{escape(name)} metrics" width="{label_w + bar_w + 60}" '
        f'height="{row * len(keys) + 8}" xmlns="http://www.w3.org/2000/svg">'
    ]
    for i, key in enumerate(keys):
        value = float(metrics.get(key, 0.0) or 0.0)
        y = 4 + i * row
        w = max(0.0, min(1.0, value)) * bar_w
        parts.append(
            f'<text x="0" y="{y + 14}" font-size="12">{escape(key)}</text>'
            f'<rect x="{label_w}" y="{y + 3}" width="{bar_w}" height="14" fill="#edf2f7"/>'
            f'<rect x="{label_w}" y="{y + 3}" width="{w:.1f}" height="14" fill="{color}"/>'
            f'<text x="{label_w + bar_w + 6}" y="{y + 14}" font-size="12">{value:.4f}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render_report(title: str, result: Mapping[str, Any], notes: Sequence[str] = ()) -> str:
    """The page for a result with ``stages`` (stage → metrics) and optionally
    ``languages`` (language → stage → metrics)."""
    stages: Mapping[str, Mapping[str, Any]] = result["stages"]
    charts = "".join(
        f"<figure><figcaption>{escape(name)}</figcaption>{bar_chart(name, m)}</figure>"
        for name, m in stages.items()
    )
    keys = [k for k in CHART_METRICS if any(k in m for m in stages.values())]
    table = _table(
        ["metric", *stages],
        [[k, *(f"{float(stages[s].get(k, 0.0)):.4f}" for s in stages)] for k in keys],
    )
    lang_html = ""
    langs: Mapping[str, Mapping[str, Mapping[str, Any]]] = result.get("languages") or {}
    if langs:
        rows = [
            [lang, f"{m}", *(f"{float(per[s].get(m, 0.0)):.4f}" for s in per)]
            for lang, per in langs.items()
            for m in ("recall@5", "mrr@10")
        ]
        first = next(iter(langs.values()))
        lang_html = "<h2>Per language</h2>" + _table(["language", "metric", *first], rows)
    facts = "".join(
        f"<li>{escape(str(k))}: {escape(str(v))}</li>"
        for k, v in result.items()
        if k not in ("stages", "languages", "not_chunked", *CHART_METRICS)
        and not isinstance(v, (dict, list))
    )
    note_html = "".join(f"<p>{escape(n)}</p>" for n in notes)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>
<style>
body {{ font: 14px/1.45 system-ui, sans-serif; margin: 2rem; color: #1a202c; max-width: 1100px; }}
figure {{ display: inline-block; margin: 0 2rem 1.5rem 0; vertical-align: top; }}
figcaption {{ font-weight: 600; margin-bottom: .3rem; }}
table {{ border-collapse: collapse; margin: .5rem 0 1.5rem; }}
th, td {{ border: 1px solid #cbd5e0; padding: .25rem .6rem; text-align: right; }}
th:first-child, td:first-child {{ text-align: left; }}
</style></head><body>
<h1>{escape(title)}</h1>
{note_html}
<h2>Per stage</h2>
{charts}
{table}
{lang_html}
<h2>Run</h2><ul>{facts}</ul>
</body></html>
"""
