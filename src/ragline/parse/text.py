"""Plain-text parser, and the block-building helpers every text parser shares.

Plain text has no markup, so no headings are invented: paragraphs are split on blank
lines, and a paragraph whose lines all start with a bullet or number marker (``-``, ``*``,
``•``, ``1.``, ``2)``) becomes one ``list`` block. The title is the first line when it
looks like one (a single line of at most 100 characters, not ending in ``. , ; :``, with a
blank line after it and more text below); otherwise the file stem. The title line stays in
the text as the first paragraph.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

from ..core.errors import EmptyDocumentError
from ..core.types import Block, BlockKind, ParsedDocument
from .decode import decode_bytes

_BULLET_RE = re.compile(r"^(\s*)([-*+•‣◦▪]|\d{1,3}[.)])\s+(\S.*)$")
_BLANK_LINE_RE = re.compile(r"\n[ \t]*\n")
_TITLE_MAX_CHARS = 100


def normalize_space(text: str) -> str:
    """Collapse every run of whitespace (including non-breaking spaces) to one space."""
    return " ".join(text.split())


def clean_lines(text: str) -> str:
    """Tidy a code or table block, keeping its lines: drop trailing spaces, common
    indentation and surrounding blank lines."""
    lines = [line.rstrip() for line in text.split("\n")]
    return textwrap.dedent("\n".join(lines)).strip()


def markdown_table(rows: list[list[str]]) -> str:
    """Render rows of cell texts as a Markdown table; the first row is the header."""
    rows = [row for row in rows if any(cell.strip() for cell in row)]
    if not rows:
        return ""
    width = max(len(row) for row in rows)

    def line(cells: list[str]) -> str:
        cells = [normalize_space(c).replace("|", "\\|") for c in cells]
        cells += [""] * (width - len(cells))
        return "| " + " | ".join(cells) + " |"

    out = [line(rows[0]), "| " + " | ".join(["---"] * width) + " |"]
    out.extend(line(row) for row in rows[1:])
    return "\n".join(out)


class BlockCollector:
    """Accumulates blocks and keeps the heading path that each new block sits under."""

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self._stack: list[tuple[int, str]] = []

    @property
    def heading_path(self) -> tuple[str, ...]:
        return tuple(text for _, text in self._stack)

    def heading(self, text: str, level: int) -> None:
        """Add a heading; its path is the open headings of a higher level (lower number)."""
        text = normalize_space(text)
        if not text:
            return
        while self._stack and self._stack[-1][0] >= level:
            self._stack.pop()
        self.blocks.append(Block("heading", text, level=level, heading_path=self.heading_path))
        self._stack.append((level, text))

    def add(self, kind: BlockKind, text: str) -> None:
        """Add a non-heading block; empty text is ignored."""
        text = clean_lines(text) if kind in ("code", "table", "list") else normalize_space(text)
        if text:
            self.blocks.append(Block(kind, text, heading_path=self.heading_path))

    def first_heading(self, level: int = 1) -> str | None:
        return next((b.text for b in self.blocks if b.kind == "heading" and b.level == level), None)

    def document(
        self, *, path: Path, title: str, media_type: str, metadata: dict[str, Any]
    ) -> ParsedDocument:
        """The finished document; raises :class:`EmptyDocumentError` if nothing was found."""
        if not self.blocks:
            raise EmptyDocumentError(
                str(path), "contains no text after parsing; add content or skip this file"
            )
        return ParsedDocument(
            title=title, blocks=tuple(self.blocks), media_type=media_type, metadata=metadata
        )


def require_text(text: str, path: Path) -> None:
    """Raise :class:`EmptyDocumentError` when decoded text is blank."""
    if not text.strip():
        raise EmptyDocumentError(
            str(path), "contains only whitespace, so there is no text to index; skip this file"
        )


def list_lines(lines: list[str]) -> str | None:
    """Render lines as a list block (``- item`` / ``1. item``, nested items indented),
    or return ``None`` when the lines are not a list."""
    items: list[tuple[int, str, str]] = []  # (indent, marker, text)
    for line in lines:
        match = _BULLET_RE.match(line)
        if match:
            indent, marker, text = match.groups()
            items.append((len(indent.expandtabs(4)), marker, text))
        elif items and line[:1] in (" ", "\t"):
            indent, marker, text = items[-1]
            items[-1] = (indent, marker, f"{text} {line.strip()}")
        else:
            return None
    if not items:
        return None
    indents = sorted({indent for indent, _, _ in items})
    out = []
    for indent, marker, text in items:
        marker = marker if marker[0].isdigit() else "-"
        out.append("  " * indents.index(indent) + f"{marker} {normalize_space(text)}")
    return "\n".join(out)


class TextParser:
    """Parses ``text/plain``: paragraphs and bullet lists, no headings."""

    media_types: tuple[str, ...] = ("text/plain",)

    def parse(self, data: bytes, *, path: Path) -> ParsedDocument:
        decoded = decode_bytes(data, path=path)
        require_text(decoded.text, path)
        paragraphs = [p for p in _BLANK_LINE_RE.split(decoded.text) if p.strip()]
        collector = BlockCollector()
        for paragraph in paragraphs:
            lines = [line for line in paragraph.strip("\n").split("\n") if line.strip()]
            as_list = list_lines(lines)
            if as_list is not None:
                collector.add("list", as_list)
            else:
                collector.add("paragraph", paragraph)
        title, source = path.stem, "filename"
        first = collector.blocks[0] if collector.blocks else None
        if (
            first is not None
            and first.kind == "paragraph"
            and len(collector.blocks) > 1
            and "\n" not in paragraphs[0].strip()
            and _looks_like_title(first.text)
        ):
            title, source = first.text, "first_line"
        metadata: dict[str, Any] = {"title_source": source, "encoding": decoded.encoding}
        return collector.document(
            path=path, title=title, media_type="text/plain", metadata=metadata
        )


def _looks_like_title(line: str) -> bool:
    return (
        len(line) <= _TITLE_MAX_CHARS
        and not line.endswith((".", ",", ";", ":"))
        and any(ch.isalpha() for ch in line)
    )
