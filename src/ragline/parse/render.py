"""Render a :class:`ParsedDocument` back to Markdown or to a JSON-able dict (``ragline parse``)."""

from __future__ import annotations

from typing import Any

from ..core.types import ParsedDocument


def to_markdown(doc: ParsedDocument) -> str:
    """Markdown of what was extracted: headings with their level, tables, fenced code."""
    out: list[str] = []
    page = None
    for b in doc.blocks:
        if b.page is not None and b.page != page and page is not None:
            out.append(f"<!-- page {b.page} -->")
        page = b.page if b.page is not None else page
        if b.kind == "heading":
            out.append("#" * max(1, min(b.level or 1, 6)) + " " + b.text)
        elif b.kind == "code":
            out.append("```\n" + b.text + "\n```")
        elif b.kind == "caption":
            out.append(f"*{b.text}*")
        else:
            out.append(b.text)
    return "\n\n".join(out) + "\n"


def to_dict(doc: ParsedDocument) -> dict[str, Any]:
    return {
        "title": doc.title,
        "media_type": doc.media_type,
        "metadata": dict(doc.metadata),
        "blocks": [
            {
                "kind": b.kind,
                "text": b.text,
                "level": b.level,
                "heading_path": list(b.heading_path),
                "page": b.page,
            }
            for b in doc.blocks
        ],
    }
