"""A passage's answer units — sentences, list items, table rows, headings — and their display.

Extractive answers quote units, so a unit must make sense on its own or say what it
needs: a table row needs its header row (it is shown with the column names, see
:func:`render_unit`), a list item the lead-in line that introduces its list
("Approval depends on the cost of the trip:"), and headings, questions and lead-ins
are context, not answers. :func:`parse_units` recovers these roles from the plain
text a chunk carries (Markdown-like: ``|`` tables with a ``---`` rule under the header
row, ``-``/``1.`` list items, headings on lines of their own).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Literal

from ..analysis.analyzer import split_sentences

UnitKind = Literal["sentence", "item", "row", "header", "heading", "lead", "question", "fragment"]
"""``sentence`` of prose, list ``item``, table ``row`` (``header`` for a table's header
row), ``heading`` (or heading-like line), ``lead``-in line ending with ``:``, and a
``question`` (a sentence ending with ``?``, such as an FAQ entry's title), and a
``fragment``: a "sentence" that is really a flattened table row or a list of values
("12/24/2015 — 01/04/2016; West Hollywood; 25; Closure Permanent")."""

ANSWER_KINDS = frozenset({"sentence", "item", "row", "heading"})
"""Kinds that can answer on their own (a heading-like line only reluctantly, see
:class:`~ragline.generate.extractive.ExtractiveAnswerer`)."""

HEADING_MAX_WORDS = 12
"""A one-line paragraph without end punctuation and at most this many words is a heading."""

_BULLET = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s")
_MARKDOWN_HEADING = re.compile(r"^\s*#{1,6}\s")
_TABLE_ROW = re.compile(r"^\s*\||\t|\|[^|]+\|")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_END_PUNCTUATION = re.compile(r"[.!?:;,][\"')\]]*$")
_STRIP_BULLET = re.compile(r"^\s*[-*+•]\s+")
_HEADING_MARKS = re.compile(r"^\s*(?:#{1,6}\s+|\d+(?:\.\d+)*[.)]?\s+)")


@dataclass(frozen=True)
class TextUnit:
    """One unit of a passage.

    ``owner`` is, for a table row, the position of its header row and, for a list
    item, the position of the lead-in line above its list (None when there is none).
    ``section`` is the position of the heading line the unit sits under, if the
    passage has one. ``cells`` holds a table row's cell texts.
    """

    text: str
    kind: UnitKind
    owner: int | None = None
    section: int | None = None
    cells: tuple[str, ...] = ()


def table_cells(line: str) -> tuple[str, ...]:
    """The cell texts of a ``|``- or tab-separated table row (escaped ``\\|`` kept)."""
    if "|" not in line:
        return tuple(c.strip() for c in line.strip().split("\t"))
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return tuple(" ".join(c.replace("\\|", "|").split()) for c in _CELL_SPLIT.split(inner))


def heading_key(text: str) -> str:
    """``text`` compared as a heading: no ``#`` or section number, case-folded."""
    return " ".join(_HEADING_MARKS.sub("", text).split()).casefold()


def parse_units(text: str, headings: Iterable[str] = ()) -> list[TextUnit]:
    """The units of ``text`` in order, with their roles.

    ``headings`` (a hit's title and heading path) are recognised when the text repeats
    them on a line of their own. List items, table rows and headings stay one unit each;
    a list item's indented continuation lines join it; table rules (``|---|``) vanish.
    """
    known = {heading_key(h) for h in headings if h.strip()}
    units: list[TextUnit] = []
    section: int | None = None
    lead: int | None = None  # lead-in line of the list being read

    def add(
        unit_text: str, kind: UnitKind, owner: int | None = None, cells: Iterable[str] = ()
    ) -> int:
        units.append(TextUnit(unit_text, kind, owner, section, tuple(cells)))
        return len(units) - 1

    def add_prose(lines: list[str], whole_paragraph: bool) -> None:
        nonlocal section, lead
        joined = " ".join(lines)
        single = whole_paragraph and len(lines) == 1
        if heading_key(joined) in known or (single and _looks_like_heading(joined)):
            section = add(" ".join(joined.split()), "heading")
            lead = None
            return
        for s in split_sentences(joined):
            kind: UnitKind = "sentence"
            if _looks_like_fragment(s):
                kind = "fragment"
            elif s.endswith("?"):
                kind = "question"
            elif s.endswith(":"):
                kind = "lead"
            add(s, kind)
        lead = len(units) - 1 if units and units[-1].kind == "lead" else None

    for para in re.split(r"\n\s*\n", text):
        lines = [ln for ln in para.splitlines() if ln.strip()]
        prose: list[str] = []
        header: int | None = None  # header row of the table being read
        first_row: int | None = None  # first row of that table, a header if a rule follows
        in_item = False  # an indented line right after a list item continues it
        for line in lines:
            is_row = bool(_TABLE_ROW.search(line))
            is_heading = not is_row and bool(_MARKDOWN_HEADING.search(line))
            is_item = not is_row and not is_heading and bool(_BULLET.search(line))
            if not (is_row or is_heading or is_item):
                if in_item and line[:1].isspace():
                    last = units[-1]
                    units[-1] = replace(last, text=last.text + " " + " ".join(line.split()))
                    continue
                in_item = False
                header = first_row = None
                prose.append(line)
                continue
            if prose:
                add_prose(prose, whole_paragraph=False)
                prose = []
            in_item = is_item
            flat = " ".join(line.split())
            if is_row:
                if not any(ch.isalnum() for ch in flat):  # |---|---| rule: a header above
                    if first_row is not None and header is None and len(units) - 1 == first_row:
                        units[first_row] = replace(units[first_row], kind="header")
                        header = first_row
                    continue
                cells = table_cells(line)
                if first_row is None:
                    first_row = len(units)
                    if "|" not in line:  # a tab-separated table: its first row is the header
                        header = add(flat, "header", cells=cells)
                        continue
                add(flat, "row", header, cells)
                continue
            header = first_row = None
            if is_heading or (
                heading_key(flat) in known
                or (
                    len(lines) == 1
                    and lead is None
                    and not _STRIP_BULLET.match(line)
                    and _looks_like_heading(flat)
                )
            ):
                section = add(flat, "heading")
                lead = None
                continue
            add(flat, "item", lead)
        if prose:
            add_prose(prose, whole_paragraph=len(prose) == len(lines))
    return units


FRAGMENT_MAX_SEGMENT_WORDS = 4
"""Text split by ``;``/``|``/``•`` into 3+ segments averaging at most this many words is a
flattened row, not prose."""
FRAGMENT_MIN_WORD_SHARE = 0.4
"""Text of 4+ tokens of which fewer than this share are words (not numbers, dates,
codes) is a list of values, not prose."""


def _looks_like_fragment(text: str) -> bool:
    segments = [seg for seg in re.split(r"[;|•·]", text) if seg.strip()]
    if (
        len(segments) >= 3
        and sum(len(seg.split()) for seg in segments) / len(segments) <= FRAGMENT_MAX_SEGMENT_WORDS
    ):
        return True
    tokens = text.split()
    words = sum(
        1 for t in tokens if any(c.isalpha() for c in t) and not any(c.isdigit() for c in t)
    )
    return len(tokens) >= 4 and words / len(tokens) < FRAGMENT_MIN_WORD_SHARE


def _looks_like_heading(line: str) -> bool:
    line = line.strip()
    return (
        bool(line)
        and not _END_PUNCTUATION.search(line)
        and len(line.split()) <= HEADING_MAX_WORDS
        and any(ch.isalpha() for ch in line)
    )


def split_units(text: str) -> list[str]:
    """Sentences of ``text``; list items, table rows and headings stay one unit each."""
    return [u.text for u in parse_units(text)]


def render_unit(unit: TextUnit, header: tuple[str, ...] = ()) -> str:
    """How ``unit`` reads in an answer.

    A table row pairs its cells with the column names of ``header`` (its header row's
    cells): ``ERR_4021 — Meaning: Charging contact fault; Fix: Clean the contacts``; a
    bulleted list item loses its bullet. Other units read as written.
    """
    if unit.kind == "row" and unit.cells:
        cells = unit.cells
        first, rest = cells[0], cells[1:]
        names = header[1:] if len(header) == len(cells) else ()
        parts = []
        for i, cell in enumerate(rest):
            if not cell:
                continue
            name = names[i] if i < len(names) else ""
            parts.append(f"{name}: {cell}" if name else cell)
        if not first:
            return "; ".join(parts)
        return f"{first} — " + "; ".join(parts) if parts else first
    if unit.kind == "item":
        return _STRIP_BULLET.sub("", unit.text)
    return unit.text
