"""Page geometry for the PDF parser: characters to words, lines and reading order.

Internal to :mod:`ragline.parse.pdf`. Works on pdfplumber's character dicts: cleans them
(double-drawn glyphs, spaces drawn over letters, combining marks), groups them into words
and lines (right-to-left lines put in logical order), finds ruled tables, orders a page's
words and tables by recursive XY-cut, and drops running heads, footers and page numbers.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .text import markdown_table, normalize_space

MAX_TABLE_EDGES = 3_000
"""Pages with more ruling lines than this are not searched for tables."""
_MAX_DEPTH = 48
_BOLD_RE = re.compile(r"bold|black|heavy|semibold|demi|cmbx|cmb\d|sfbx|\.b$|-bd|,bold", re.I)
_ITALIC_RE = re.compile(r"italic|oblique|cmti|sfti|-it$|-bdit|-boldit|,italic", re.I)
_MONO_RE = re.compile(
    r"mono|courier|consol|cmtt|sftt|menlo|inconsolata|typewriter|code|fixed|lucidacons", re.I
)
_CID_RE = re.compile(r"\(cid:\d+\)")
_PAGE_NUMBER_RE = re.compile(
    r"^(page\s*)?[-–—(\[]?\s*(\d{1,4}|[ivxlc]{1,7})\s*[-–—)\]]?(\s*(of|/)\s*\d{1,4})?$"
    r"|^\d{1,3}\s*[-–.]\s*\d{1,4}$",
    re.I,
)


# ----------------------------------------------------------------------------- page model


@dataclass(slots=True)
class Word:
    text: str
    x0: float
    x1: float
    top: float
    bottom: float
    size: float
    bold: bool
    italic: bool
    mono: bool
    units: tuple[str, ...] = ()
    """Character texts in visual order, kept only for words with right-to-left letters."""


@dataclass(slots=True)
class Box:
    """A table (or other pre-rendered block) placed in the reading order as one unit."""

    kind: str
    text: str
    x0: float
    x1: float
    top: float
    bottom: float


@dataclass(slots=True)
class Line:
    words: list[Word]
    text: str
    x0: float
    x1: float
    top: float
    bottom: float
    size: float
    bold: bool
    italic: bool
    mono: bool


@dataclass(slots=True)
class Page:
    number: int
    width: float
    height: float
    words: list[Word] = field(default_factory=list)
    boxes: list[Box] = field(default_factory=list)
    plain: str = ""


# ----------------------------------------------------------------------------- extraction


def _font_flags(fontname: str) -> tuple[bool, bool, bool]:
    name = fontname.split("+", 1)[-1]
    return bool(_BOLD_RE.search(name)), bool(_ITALIC_RE.search(name)), bool(_MONO_RE.search(name))


def _is_rtl(ch: str) -> bool:
    return unicodedata.bidirectional(ch[:1]) in ("R", "AL") if ch else False


def fold(text: str) -> str:
    """Ligatures and Arabic presentation forms to plain letters; drop unknown glyphs."""
    text = _CID_RE.sub("", text)
    if any("\ufb00" <= ch <= "\ufeff" for ch in text):
        text = "".join(
            unicodedata.normalize("NFKC", ch) if "\ufb00" <= ch <= "\ufeff" else ch for ch in text
        )
    return text.replace("\u00ad", "-")


def _clean_chars(chars: list[dict]) -> list[dict]:
    """Drop glyphs drawn twice at one place (fake bold) and space glyphs drawn on top of
    letters (spreadsheet exports), which would double or split words."""
    seen: set[tuple[str, int, int]] = set()
    unique = []
    for c in chars:
        key = (c["text"], round(c["x0"]), round(c["top"]))
        if key not in seen:
            seen.add(key)
            unique.append(c)
    chars = _attach_marks(unique)
    rows: dict[int, list[tuple[float, float]]] = {}
    for c in chars:
        if not c["text"].isspace():
            rows.setdefault(int(c["top"] // 4), []).append((c["x0"], c["x1"]))
    for row in rows.values():
        row.sort()
    out = []
    for c in chars:
        if c["text"].isspace() and c["upright"]:
            mid = (c["x0"] + c["x1"]) / 2
            row_key = int(c["top"] // 4)
            covered = False
            for k in (row_key - 1, row_key, row_key + 1):
                row = rows.get(k, [])
                i = bisect_left(row, (mid, mid))
                for x0, x1 in row[max(0, i - 2) : i + 1]:
                    if x0 < mid < x1:
                        covered = True
            if covered:
                continue
        out.append(c)
    return out


def _attach_marks(chars: list[dict]) -> list[dict]:
    """Zero-width combining marks (Arabic vowel signs) join the letter they sit on, so
    they neither split words nor drift in right-to-left reordering."""
    if not any(unicodedata.combining(c["text"][:1]) for c in chars):
        return chars
    out: list[dict] = []
    for i, c in enumerate(chars):
        if not unicodedata.combining(c["text"][:1]) or not out:
            out.append(c)
            continue
        x = c["x0"]
        base = chars[i + 1] if i + 1 < len(chars) else None
        if (
            base is None
            or not (base["x0"] - 0.5 <= x <= base["x1"] + 0.5)
            or base["text"].isspace()
        ):
            out[-1] = {**out[-1], "text": out[-1]["text"] + c["text"]}
        else:
            chars[i + 1] = {**base, "text": base["text"] + c["text"]}
    return out


def _inside(obj: Any, bbox: tuple[float, float, float, float], margin: float = 1.0) -> bool:
    x = (obj["x0"] + obj["x1"]) / 2 if isinstance(obj, dict) else (obj.x0 + obj.x1) / 2
    y = (obj["top"] + obj["bottom"]) / 2 if isinstance(obj, dict) else (obj.top + obj.bottom) / 2
    return bbox[0] - margin <= x <= bbox[2] + margin and bbox[1] - margin <= y <= bbox[3] + margin


def _words(chars: list[dict]) -> list[Word]:
    from pdfplumber.utils.text import WordExtractor

    extractor = WordExtractor(x_tolerance_ratio=0.15, y_tolerance=3, keep_blank_chars=False)
    out: list[Word] = []
    for word, wchars in extractor.iter_extract_tuples(chars):
        text = fold(word["text"])
        if not text.strip() and not ("(cid:" in word["text"] and len(wchars) == 1):
            continue  # unmappable glyphs, except a lone one: a bullet in a symbol font
        sizes = Counter(round(c["size"], 1) for c in wchars)
        flags = [_font_flags(c.get("fontname", "")) for c in wchars]
        n = len(flags)
        units: tuple[str, ...] = ()
        if any(_is_rtl(c["text"]) for c in wchars):
            units = tuple(fold(c["text"]) for c in sorted(wchars, key=lambda c: c["x0"]))
        out.append(
            Word(
                text=text if text.strip() else "•",
                x0=word["x0"],
                x1=word["x1"],
                top=word["top"],
                bottom=word["bottom"],
                size=sizes.most_common(1)[0][0],
                bold=sum(f[0] for f in flags) * 2 > n,
                italic=sum(f[1] for f in flags) * 2 > n,
                mono=sum(f[2] for f in flags) * 2 > n,
                units=units,
            )
        )
    return out


def _rotated_text(chars: list[dict]) -> str:
    """Text of characters drawn rotated (vertical table headers, margin stamps)."""
    up = sum(1 for c in chars if c["matrix"][1] > 0) * 2 >= len(chars)
    lines: list[list[dict]] = []
    for c in sorted(chars, key=lambda c: c["x0"]):
        if lines and abs(c["x0"] - lines[-1][-1]["x0"]) <= 0.3 * c["size"]:
            lines[-1].append(c)
        else:
            lines.append([c])
    if not up:
        lines.reverse()
    texts = [
        "".join(c["text"] for c in sorted(line, key=lambda c: c["top"], reverse=up))
        for line in lines
    ]
    return normalize_space(fold(" ".join(texts)))


def _tables(page: Any, chars: list[dict]) -> list[Box]:
    """Ruled tables as Markdown, merged cells repeated; layout frames are rejected."""
    edges = page.edges
    if len(edges) > MAX_TABLE_EDGES or len(edges) < 4:
        return []
    boxes: list[Box] = []
    for table in page.find_tables():
        table = _close_open_sides(page, table)
        grid = _table_grid(table, chars)
        if grid is None:
            continue
        x0, top, x1, bottom = table.bbox
        boxes.append(Box("table", markdown_table(grid), x0, x1, top, bottom))
    return boxes


def _close_open_sides(page: Any, table: Any) -> Any:
    """A table without outer side borders (booktabs style) loses its first or last column;
    add the missing sides at the ends of its horizontal rules and search again."""
    x0, top, x1, bottom = table.bbox
    rules = [
        e
        for e in page.edges
        if e["orientation"] == "h"
        and top - 2 <= e["top"] <= bottom + 2
        and e["x1"] > x0
        and e["x0"] < x1
    ]
    if not rules:
        return table
    left, right = min(e["x0"] for e in rules), max(e["x1"] for e in rules)
    if left > x0 - 4 and right < x1 + 4:
        return table
    sides = [
        {"x0": x, "x1": x, "top": top, "bottom": bottom, "width": 0, "height": bottom - top,
         "orientation": "v", "object_type": "line"}
        for x in (left, right)
    ]  # fmt: skip
    for candidate in page.find_tables({"explicit_vertical_lines": sides}):
        if candidate.bbox[1] <= top + 2 and candidate.bbox[3] >= bottom - 2:
            return candidate
    return table


def _table_grid(table: Any, chars: list[dict]) -> list[list[str]] | None:
    rows = table.rows
    if len(rows) < 2 or max(len(r.cells) for r in rows) < 2:
        return None
    cells = list(table.cells)
    if len(cells) * 2 < sum(len(r.cells) for r in rows):
        return None  # mostly merged slots: a diagram drawn with boxes, not a grid
    buckets: dict[int, list[int]] = {}
    for k, (_, top, _, bottom) in enumerate(cells):
        for key in range(int(top // 8), int(bottom // 8) + 1):
            buckets.setdefault(key, []).append(k)
    inner: list[list[dict]] = [[] for _ in cells]
    for c in chars:
        x, y = (c["x0"] + c["x1"]) / 2, (c["top"] + c["bottom"]) / 2
        for k in buckets.get(int(y // 8), ()):
            x0, top, x1, bottom = cells[k]
            if x0 <= x <= x1 and top <= y <= bottom:
                inner[k].append(c)
                break
    texts: dict[tuple[float, ...], str] = {}
    for bbox, found in zip(cells, inner):
        upright = [c for c in found if c["upright"]]
        rotated = [c for c in found if not c["upright"]]
        text = _cell_text(upright) if len(upright) >= len(rotated) else _rotated_text(rotated)
        texts[tuple(bbox)] = text
    grid = [[texts.get(tuple(slot), "") if slot else "" for slot in row.cells] for row in rows]
    # A slot pdfplumber leaves empty is covered by a merged cell: repeat its text.
    columns = table.columns
    for r, row in enumerate(rows):
        for col, slot in enumerate(row.cells):
            if slot is None and col < len(columns):
                x = (columns[col].bbox[0] + columns[col].bbox[2]) / 2
                y = (row.bbox[1] + row.bbox[3]) / 2
                for bbox in cells:
                    if bbox[0] <= x <= bbox[2] and bbox[1] <= y <= bbox[3]:
                        grid[r][col] = texts[tuple(bbox)]
                        break
    filled = sum(1 for row in grid for text in row if text)
    total = sum(len(row) for row in grid)
    if filled == 0 or filled * 4 < total:
        return None  # a frame around a picture, not a table
    longest = max(len(text) for row in grid for text in row)
    if len(rows) <= 2 and longest > 400:
        return None  # a text box laid out with rules
    return grid


def _cell_text(chars: list[dict]) -> str:
    words = _words(chars)
    lines = make_lines(words)
    return normalize_space(" ".join(line.text for line in lines))


def extract_page(plumber_page: Any, number: int) -> Page:
    page = plumber_page
    result = Page(number, float(page.width), float(page.height))
    chars = _clean_chars(list(page.chars))
    result.boxes = _tables(page, chars)
    area = result.width * result.height
    pictures = [
        (i["x0"], i["top"], i["x1"], i["bottom"])
        for i in page.images
        if 0.01 * area < (i["x1"] - i["x0"]) * (i["bottom"] - i["top"]) < 0.5 * area
    ]
    body: list[dict] = []
    rotated: list[dict] = []
    tables = [_bbox(b) for b in result.boxes]
    for c in chars:
        if tables and any(_inside(c, bbox) for bbox in tables):
            continue
        if pictures and any(_inside(c, bbox, 0) for bbox in pictures):
            continue  # labels drawn on a picture
        (body if c["upright"] else rotated).append(c)
    result.words = _words(body)
    if rotated and len(rotated) >= 20:
        text = _rotated_text(rotated)
        if text:
            x0 = min(c["x0"] for c in rotated)
            x1 = max(c["x1"] for c in rotated)
            top = min(c["top"] for c in rotated)
            bottom = max(c["bottom"] for c in rotated)
            result.boxes.append(Box("paragraph", text, x0, x1, top, bottom))
    return result


def _bbox(box: Box) -> tuple[float, float, float, float]:
    return (box.x0, box.top, box.x1, box.bottom)


# ----------------------------------------------------------------------------- lines and order


def make_lines(words: list[Word]) -> list[Line]:
    """Words grouped into lines by vertical overlap, each line read left to right (or right
    to left when most of its letters are right-to-left)."""
    groups: list[list[Word]] = []
    spans: list[list[float]] = []
    for w in sorted(words, key=lambda w: (w.top, w.x0)):
        h = max(w.bottom - w.top, 0.1)
        for group, span in zip(groups[-2:], spans[-2:]):
            overlap = min(span[1], w.bottom) - max(span[0], w.top)
            if overlap >= 0.45 * min(h, span[1] - span[0]):
                group.append(w)
                span[0], span[1] = min(span[0], w.top), max(span[1], w.bottom)
                break
        else:
            groups.append([w])
            spans.append([w.top, w.bottom])
    lines = [_line(sorted(g, key=lambda w: w.x0)) for g in groups]
    lines.sort(key=lambda line: line.top)
    return lines


def _line(words: list[Word]) -> Line:
    weights = [max(len(w.text), 1) for w in words]
    total = sum(weights)
    sizes: Counter[float] = Counter()
    for w, n in zip(words, weights):
        sizes[w.size] += n
    rtl_units = sum(len(w.units) for w in words)
    if rtl_units and rtl_units * 2 >= total:
        text = _logical_order(words)
    else:
        text = " ".join(w.text for w in words)
    return Line(
        words=words,
        text=normalize_space(text),
        x0=min(w.x0 for w in words),
        x1=max(w.x1 for w in words),
        top=min(w.top for w in words),
        bottom=max(w.bottom for w in words),
        size=sizes.most_common(1)[0][0],
        bold=sum(n for w, n in zip(words, weights) if w.bold) >= 0.9 * total,
        italic=sum(n for w, n in zip(words, weights) if w.italic) >= 0.9 * total,
        mono=sum(n for w, n in zip(words, weights) if w.mono) >= 0.8 * total,
    )


def _logical_order(words: list[Word]) -> str:
    """A right-to-left line from its visual order: reverse it, then restore the order of
    left-to-right runs (Latin words, numbers) inside it."""
    units: list[str] = []
    for i, w in enumerate(words):
        if i:
            units.append(" ")
        units.extend(w.units or tuple(w.text))
    units.reverse()

    def strong_ltr(u: str) -> bool:
        return unicodedata.bidirectional(u[:1]) in ("L", "EN", "AN") if u else False

    out: list[str] = []
    i = 0
    while i < len(units):
        if strong_ltr(units[i]):
            j = i
            end = i
            while j < len(units) and not _is_rtl(units[j]):
                if strong_ltr(units[j]):
                    end = j
                j += 1
            out.extend(reversed(units[i : end + 1]))
            i = end + 1
            if i < len(units) and _is_rtl(units[i]):
                out.append(" ")  # a Latin word never joins the Arabic word after it
        else:
            out.append(units[i])
            i += 1
    return "".join(out)


def xy_cut(
    items: list[Any], gutter: float, gap: float, min_col: float, depth: int = 0
) -> list[list[Any]]:
    """Items (words and boxes) split into reading-order leaves by recursive XY-cut."""
    if len(items) < 2 or depth > _MAX_DEPTH:
        return [items]
    columns = _merge_narrow(_split(items, "x", gutter), min_col, gutter)
    if len(columns) > 1:
        return [leaf for col in columns for leaf in xy_cut(col, gutter, gap, min_col, depth + 1)]
    bands = _split(items, "y", gap, widest_only=True)
    if len(bands) > 1:
        return [leaf for band in bands for leaf in xy_cut(band, gutter, gap, min_col, depth + 1)]
    return [items]


def _split(
    items: list[Any], axis: str, min_gap: float, widest_only: bool = False
) -> list[list[Any]]:
    lo, hi = ("x0", "x1") if axis == "x" else ("top", "bottom")
    ordered = sorted(items, key=lambda it: getattr(it, lo))
    groups: list[list[Any]] = [[ordered[0]]]
    gaps: list[float] = []
    reach = getattr(ordered[0], hi)
    for it in ordered[1:]:
        start = getattr(it, lo)
        if start - reach >= min_gap:
            gaps.append(start - reach)
            groups.append([it])
        else:
            groups[-1].append(it)
        reach = max(reach, getattr(it, hi))
    if widest_only and gaps:
        widest = max(gaps)
        merged: list[list[Any]] = [groups[0]]
        for g, group in zip(gaps, groups[1:]):
            if g >= 0.7 * widest:
                merged.append(group)
            else:
                merged[-1].extend(group)
        return merged
    return groups


def _merge_narrow(columns: list[list[Any]], min_col: float, gutter: float) -> list[list[Any]]:
    """Columns narrower than ``min_col`` (bullets, list numbers) join their nearer
    neighbour, and so do columns of under three lines beside a narrow gap (likely a
    river of spaces in justified text, not a gutter)."""
    cols = [list(c) for c in columns]

    def width(c: list[Any]) -> float:
        return max(it.x1 for it in c) - min(it.x0 for it in c)

    def gap(k: int) -> float:  # between cols[k] and cols[k + 1]
        return min(it.x0 for it in cols[k + 1]) - max(it.x1 for it in cols[k])

    def short(c: list[Any]) -> bool:
        return len({round(it.top / 2) for it in c}) < 3

    while len(cols) > 1:
        i = min(range(len(cols)), key=lambda k: width(cols[k]))
        if width(cols[i]) < min_col:
            if i == 0 or (i < len(cols) - 1 and gap(i) < gap(i - 1)):
                k = i
            else:
                k = i - 1
        else:
            weak = [
                k
                for k in range(len(cols) - 1)
                if gap(k) < 2.5 * gutter and (short(cols[k]) or short(cols[k + 1]))
            ]
            if not weak:
                break
            k = weak[0]
        cols[k].extend(cols[k + 1])
        del cols[k + 1]
    return cols


# ----------------------------------------------------------------------------- page furniture


def _mask(text: str) -> str:
    return re.sub(r"\b([ivxlc]+|\d+)\b", "#", re.sub(r"\d+", "#", text.lower()))


def _is_running_head(line: Line) -> bool:
    """A title with a page number at its outer edge: ``9   Optimized Table ...``."""
    words = line.words
    if len(words) < 2:
        return False
    gap = 1.2 * line.size
    first, last = words[0], words[-1]
    return bool(
        (_PAGE_NUMBER_RE.match(first.text) and words[1].x0 - first.x1 >= gap)
        or (_PAGE_NUMBER_RE.match(last.text) and last.x0 - words[-2].x1 >= gap)
    )


def remove_furniture(pages: list[Page]) -> int:
    """Drop running heads, footers and page numbers; returns how many lines went."""
    zones: list[tuple[Page, Line]] = []
    for page in pages:
        if not page.words:
            continue
        lines = make_lines(page.words)
        top = [ln for ln in lines[:3] if ln.bottom <= 0.16 * page.height]
        bottom = [ln for ln in lines[-3:] if ln.top >= 0.84 * page.height and ln not in top]
        zones.extend((page, ln) for ln in top[:3] + bottom[-3:])
    seen: dict[str, list[tuple[int, float]]] = {}
    for page, line in zones:
        seen.setdefault(_mask(line.text), []).append((page.number, line.top))
    drop: set[int] = set()
    for page, line in zones:
        near = {n for n, top in seen[_mask(line.text)] if abs(top - line.top) <= 6}
        if len(near) >= 2 or _PAGE_NUMBER_RE.match(line.text) or _is_running_head(line):
            drop.update(id(w) for w in line.words)
    if drop:
        for page in pages:
            page.words = [w for w in page.words if id(w) not in drop]
    return len(drop)
