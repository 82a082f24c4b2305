"""PDF parser: the text layer of a PDF as structured blocks, in reading order.

pypdfium2 opens and checks the file (damage, passwords, page count, bookmarks) and renders
pages for OCR; pdfplumber (pdfminer.six) supplies positioned characters with their fonts
and finds ruled tables. From those:

* **Reading order** is rebuilt by recursive XY-cut, not taken from the content stream: a
  region splits into columns at a vertical gutter that crosses all of it, else into bands
  at its widest horizontal gap, so full-width titles come before the columns and each
  column is read top to bottom.
* **Tables** (ruled, found by pdfplumber; merged cells repeated) become Markdown tables,
  and their text is not repeated as paragraphs.
* **Headings** are lines larger than the body text, or short lines wholly bold or italic;
  their level comes from the bookmarks when a line matches one, else from a ``1.2.3``
  numbering, else from their font size. Lines set in a monospaced font are code; lines
  starting with a bullet or a number are lists; ``Figure 3 ...`` / ``Table 2 ...`` are
  captions.
* **Page furniture** is dropped: lines that repeat at the same place on several pages
  (digits ignored), page numbers (``7``, ``Page 7 of 9``, ``- 7 -``) and running heads
  that pair a title with a page number at the edge of the page, and text on pictures.
* **Hyphenation** at line ends is joined (``informa-``/``tion``) unless the next line starts
  with a capital, the left part is already a compound (``state-of-the-``) or the
  hyphenated word occurs elsewhere in the document.
* Right-to-left lines (Arabic, Hebrew) are put back into logical order.

Pages without a text layer are listed in ``metadata["pages_without_text"]``; when
:mod:`ragline.parse.ocr` is installed they are rendered at 300 dpi and recognised.
Work per page is bounded: a page with too many characters or objects for layout analysis
is read as plain text by pdfium and listed in ``metadata["pages_plain_text"]``.
"""

from __future__ import annotations

import importlib
import io
import os
import re
import unicodedata
from bisect import bisect_left
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..core.errors import MissingDependencyError, ParseError
from ..core.types import BLOCK_SEPARATOR, ParsedDocument
from .text import BlockCollector, markdown_table, normalize_space

PASSWORD_ENV = "RAGLINE_PDF_PASSWORD"
PASSWORD_HINT = "pass the password with --pdf-password / RAGLINE_PDF_PASSWORD"
OCR_DPI = 300
MAX_PAGE_CHARS = 60_000
"""Pages with more characters than this skip layout analysis (read as plain text)."""
MAX_PAGE_OBJECTS = 60_000
"""Pages with more drawing objects than this skip layout analysis (pdfminer is slow)."""
MAX_TABLE_EDGES = 3_000
"""Pages with more ruling lines than this are not searched for tables."""
_MAX_DEPTH = 48
_BOLD_RE = re.compile(r"bold|black|heavy|semibold|demi|cmbx|cmb\d|sfbx|\.b$|-bd|,bold", re.I)
_ITALIC_RE = re.compile(r"italic|oblique|cmti|sfti|-it$|-bdit|-boldit|,italic", re.I)
_MONO_RE = re.compile(
    r"mono|courier|consol|cmtt|sftt|menlo|inconsolata|typewriter|code|fixed|lucidacons", re.I
)
_CID_RE = re.compile(r"\(cid:\d+\)")
_BULLETS = frozenset("•●▪■◦‣○∙–—-*►▶➢✓✔❖◆◇□➤→")
_NUMBER_MARK_RE = re.compile(r"^(\(?\d{1,3}[.)]|\(?[a-z][.)]|\(?[ivx]{1,5}[.)])$")
_PAGE_NUMBER_RE = re.compile(
    r"^(page\s*)?[-–—(\[]?\s*(\d{1,4}|[ivxlc]{1,7})\s*[-–—)\]]?(\s*(of|/)\s*\d{1,4})?$"
    r"|^\d{1,3}\s*[-–.]\s*\d{1,4}$",
    re.I,
)
_NUMBERING_RE = re.compile(r"^(\d{1,2}(?:\.\d{1,2}){0,5})\.?\s+\S")
_CAPTION_RE = re.compile(
    r"^(figure|fig\.|table|listing|chart|exhibit|example|algorithm|plate)\s*"
    r"[\dIVXA-Z]+([-.:]\d+)*[.:]?(\s|$)",
    re.I,
)
_MEANINGLESS_TITLE_RE = re.compile(
    r"^(untitled.*|document\d*|doc\d+|book\d+|slide \d+|powerpoint presentation|"
    r"microsoft (word|excel|powerpoint) - .*|.*\.(docx?|pdf|tex|dvi|indd|xlsx?|pptx?|rtf|odt))$",
    re.I,
)
_PDF_DATE_RE = re.compile(
    r"^D?:?(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?\s*([Zz+-])?\s*(\d{2})?'?(\d{2})?"
)


class PdfParser:
    """Parses ``application/pdf`` into blocks with page numbers and heading paths.

    ``password`` opens protected files; by default it is read from the
    ``RAGLINE_PDF_PASSWORD`` environment variable. ``ocr`` recognises pages without a text
    layer when :mod:`ragline.parse.ocr` is available, in ``ocr_languages``.
    """

    media_types: tuple[str, ...] = ("application/pdf",)

    def __init__(
        self,
        password: str | None = None,
        *,
        ocr: bool = True,
        ocr_languages: Sequence[str] = ("eng",),
    ) -> None:
        self.password = password if password is not None else os.environ.get(PASSWORD_ENV)
        self.ocr = ocr
        self.ocr_languages = list(ocr_languages)

    def parse(self, data: bytes, *, path: Path) -> ParsedDocument:
        path = Path(path)
        try:
            import pdfplumber
            import pypdfium2 as pdfium
        except ImportError as exc:
            raise MissingDependencyError(
                f"PDF parsing needs pdfplumber and pypdfium2 ({exc.name} is not available) - "
                'install the "pdf" extra: pip install "ragline[pdf]"'
            ) from None
        doc = _open_pdfium(pdfium, data, path, self.password)
        try:
            try:
                plumber = pdfplumber.open(io.BytesIO(data), password=self.password or "")
            except Exception as exc:
                raise ParseError(
                    str(path), f"is a damaged PDF that cannot be read ({exc})"
                ) from None
            with plumber:
                return _Builder(doc, plumber, path, self).build()
        finally:
            doc.close()


def _open_pdfium(pdfium: Any, data: bytes, path: Path, password: str | None) -> Any:
    try:
        return pdfium.PdfDocument(data, password=password or None)
    except pdfium.PdfiumError as exc:
        message = str(exc)
        if "password" in message.lower():
            if password:
                raise ParseError(
                    str(path),
                    f"is password-protected and the password given is wrong; {PASSWORD_HINT}",
                ) from None
            raise ParseError(str(path), f"is password-protected: {PASSWORD_HINT}") from None
        if "security" in message.lower():
            raise ParseError(
                str(path), "is encrypted with an unsupported security handler; decrypt it first"
            ) from None
        raise ParseError(
            str(path),
            f"is not a readable PDF: damaged or truncated ({message.rstrip('.')}); "
            "re-export or re-download the file",
        ) from None


# ----------------------------------------------------------------------------- page model


@dataclass(slots=True)
class _Word:
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
class _Box:
    """A table (or other pre-rendered block) placed in the reading order as one unit."""

    kind: str
    text: str
    x0: float
    x1: float
    top: float
    bottom: float
    caption: str = ""


@dataclass(slots=True)
class _Line:
    words: list[_Word]
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
class _Page:
    number: int
    width: float
    height: float
    words: list[_Word] = field(default_factory=list)
    boxes: list[_Box] = field(default_factory=list)
    plain: str = ""


@dataclass(slots=True)
class _Raw:
    kind: str
    text: str
    page: int
    size: float = 0.0
    level: int = 0


# ----------------------------------------------------------------------------- extraction


def _font_flags(fontname: str) -> tuple[bool, bool, bool]:
    name = fontname.split("+", 1)[-1]
    return bool(_BOLD_RE.search(name)), bool(_ITALIC_RE.search(name)), bool(_MONO_RE.search(name))


def _is_rtl(ch: str) -> bool:
    return unicodedata.bidirectional(ch[:1]) in ("R", "AL") if ch else False


def _fold(text: str) -> str:
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
            key = int(c["top"] // 4)
            covered = False
            for k in (key - 1, key, key + 1):
                row = rows.get(k, ())
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


def _words(chars: list[dict]) -> list[_Word]:
    from pdfplumber.utils.text import WordExtractor

    extractor = WordExtractor(x_tolerance_ratio=0.15, y_tolerance=3, keep_blank_chars=False)
    out: list[_Word] = []
    for word, wchars in extractor.iter_extract_tuples(chars):
        text = _fold(word["text"])
        if not text.strip() and not ("(cid:" in word["text"] and len(wchars) == 1):
            continue  # unmappable glyphs, except a lone one: a bullet in a symbol font
        sizes = Counter(round(c["size"], 1) for c in wchars)
        flags = [_font_flags(c.get("fontname", "")) for c in wchars]
        n = len(flags)
        units: tuple[str, ...] = ()
        if any(_is_rtl(c["text"]) for c in wchars):
            units = tuple(_fold(c["text"]) for c in sorted(wchars, key=lambda c: c["x0"]))
        out.append(
            _Word(
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
    return normalize_space(_fold(" ".join(texts)))


def _tables(page: Any, chars: list[dict]) -> list[_Box]:
    """Ruled tables as Markdown, merged cells repeated; layout frames are rejected."""
    edges = page.edges
    if len(edges) > MAX_TABLE_EDGES or len(edges) < 4:
        return []
    boxes: list[_Box] = []
    for table in page.find_tables():
        table = _close_open_sides(page, table)
        grid = _table_grid(table, chars)
        if grid is None:
            continue
        x0, top, x1, bottom = table.bbox
        boxes.append(_Box("table", markdown_table(grid), x0, x1, top, bottom))
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
    grid: list[list[str]] = []
    for row in rows:
        out = []
        for slot in row.cells:
            if slot is not None:
                out.append(texts.get(tuple(slot), ""))
            else:
                out.append("")
        grid.append(out)
    # A slot pdfplumber leaves empty is covered by a merged cell: repeat its text.
    columns = table.columns
    for r, row in enumerate(rows):
        for c, slot in enumerate(row.cells):
            if slot is None and c < len(columns):
                x = (columns[c].bbox[0] + columns[c].bbox[2]) / 2
                y = (row.bbox[1] + row.bbox[3]) / 2
                for bbox in cells:
                    if bbox[0] <= x <= bbox[2] and bbox[1] <= y <= bbox[3]:
                        grid[r][c] = texts[tuple(bbox)]
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
    lines = _make_lines(words)
    return normalize_space(" ".join(line.text for line in lines))


def _extract_page(plumber_page: Any, number: int) -> _Page:
    page = plumber_page
    result = _Page(number, float(page.width), float(page.height))
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
    tables = [b_bbox(b) for b in result.boxes]
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
            result.boxes.append(_Box("paragraph", text, x0, x1, top, bottom))
    return result


def b_bbox(box: _Box) -> tuple[float, float, float, float]:
    return (box.x0, box.top, box.x1, box.bottom)


# ----------------------------------------------------------------------------- lines and order


def _make_lines(words: list[_Word]) -> list[_Line]:
    """Words grouped into lines by vertical overlap, each line read left to right (or right
    to left when most of its letters are right-to-left)."""
    groups: list[list[_Word]] = []
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


def _line(words: list[_Word]) -> _Line:
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
    return _Line(
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


def _logical_order(words: list[_Word]) -> str:
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


def _xy_cut(
    items: list[Any], gutter: float, gap: float, min_col: float, depth: int = 0
) -> list[list[Any]]:
    """Items (words and boxes) split into reading-order leaves by recursive XY-cut."""
    if len(items) < 2 or depth > _MAX_DEPTH:
        return [items]
    columns = _merge_narrow(_split(items, "x", gutter), min_col, gutter)
    if len(columns) > 1:
        return [leaf for col in columns for leaf in _xy_cut(col, gutter, gap, min_col, depth + 1)]
    bands = _split(items, "y", gap, widest_only=True)
    if len(bands) > 1:
        return [leaf for band in bands for leaf in _xy_cut(band, gutter, gap, min_col, depth + 1)]
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


def _is_running_head(line: _Line) -> bool:
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


def _remove_furniture(pages: list[_Page]) -> int:
    """Drop running heads, footers and page numbers; returns how many lines went."""
    zones: list[tuple[_Page, _Line]] = []
    for page in pages:
        if not page.words:
            continue
        lines = _make_lines(page.words)
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


# ----------------------------------------------------------------------------- blocks


def _join_lines(texts: list[str], vocab: set[str]) -> str:
    """Lines of one paragraph as one string, joining words hyphenated at line ends."""
    out = ""
    for text in texts:
        if not out:
            out = text
            continue
        if out[-1:] in "-\u2010" and len(out) > 1 and out[-2].isalpha() and text[:1].isalpha():
            left = out.rsplit(" ", 1)[-1][:-1]
            right = re.split(r"[\s,.;:!?)\]]", text, 1)[0]
            compound = f"{left}-{right}".lower()
            keep = (
                not text[0].islower()
                or "-" in left
                or (compound in vocab and f"{left}{right}".lower() not in vocab)
            )
            out = out + text if keep else out[:-1] + text
        else:
            out = f"{out} {text}"
    return out


def _marker(line: _Line) -> str | None:
    """The list marker a line starts with (``-`` for bullets, ``3.`` for numbers)."""
    first = line.words[0].text
    if first in _BULLETS or (len(first) == 1 and "\ue000" <= first <= "\uf8ff"):
        return "-" if len(line.words) > 1 else None
    if first[:1] in "•●▪■◦‣►▶➢✓✔❖◆◇□➤" and len(first) > 1:
        return "-"
    if _NUMBER_MARK_RE.match(first) and len(line.words) > 1:
        return first.strip("()").rstrip(".)") + "."
    return None


def _strip_marker(line: _Line) -> str:
    first = line.words[0].text
    if first[:1] in "•●▪■◦‣►▶➢✓✔❖◆◇□➤" and len(first) > 1:
        return normalize_space(line.text[1:])
    return normalize_space(line.text[len(first) :])


class _Grouper:
    """Turns the lines of one reading-order leaf into raw blocks."""

    def __init__(self, body: float, vocab: set[str], page: int) -> None:
        self.body = body
        self.vocab = vocab
        self.page = page
        self.out: list[_Raw] = []

    def big(self, line: _Line) -> bool:
        return line.size >= 1.12 * self.body and any(ch.isalpha() for ch in line.text)

    def emphasized(self, line: _Line) -> bool:
        return (line.bold or line.italic) and not line.mono

    def lines(self, lines: list[_Line]) -> None:
        if not lines:
            return
        left = min(ln.x0 for ln in lines)
        right = max(ln.x1 for ln in lines)
        i, n = 0, len(lines)
        while i < n:
            line = lines[i]
            if line.mono:
                j = i + 1
                while j < n and lines[j].mono:
                    j += 1
                self.code(lines[i:j], left)
            elif self.big(line):
                j = i + 1
                while (
                    j < n
                    and j - i < 4
                    and abs(lines[j].size - line.size) < 0.6
                    and not lines[j].mono
                ):
                    j += 1
                self.heading(lines[i:j], line.size, em=False)
            elif self.emphasized(line) and self._em_heading_end(lines, i):
                j = self._em_heading_end(lines, i)
                self.heading(lines[i:j], line.size, em=True)
            elif _marker(line):
                j = i + 1
                indent = line.words[1].x0 - 1 if len(line.words) > 1 else line.x0 + 1
                while (
                    j < n
                    and not _marker(lines[j])
                    and lines[j].x0 >= min(indent, line.x0 + 0.5 * line.size)
                    and not self.big(lines[j])
                    and not lines[j].mono
                ):
                    j += 1
                texts = [_strip_marker(line)] + [ln.text for ln in lines[i + 1 : j]]
                self.add("item", f"{_marker(line)} {_join_lines(texts, self.vocab)}", line.size)
            else:
                j = i + 1
                while j < n and not self._breaks(lines, j, left, right):
                    j += 1
                text = _join_lines([ln.text for ln in lines[i:j]], self.vocab)
                kind = "caption" if _CAPTION_RE.match(text) and len(text) <= 800 else "paragraph"
                self.add(kind, text, line.size)
            i = j

    def _em_heading_end(self, lines: list[_Line], i: int) -> int:
        """End of a heading of 1-2 wholly bold/italic lines at ``i``, or 0 if not one."""
        j = i + 1
        while j < len(lines) and j - i < 2 and self.emphasized(lines[j]):
            j += 1
        if j < len(lines) and self.emphasized(lines[j]):
            return 0
        text = " ".join(ln.text for ln in lines[i:j])
        if (
            len(text) > 120
            or text[-1:] in ".,;:"
            or not (text[:1].isupper() or text[:1].isdigit())
            or _CAPTION_RE.match(text)
            or lines[i].size < 0.9 * self.body
            or not any(ch.isalpha() for ch in text)
            or _marker(lines[i])
        ):
            return 0
        return j

    def _breaks(self, lines: list[_Line], j: int, left: float, right: float) -> bool:
        line, prev = lines[j], lines[j - 1]
        if line.mono or self.big(line) or _marker(line):
            return True
        if self.emphasized(line) and not self.emphasized(prev) and self._em_heading_end(lines, j):
            return True
        ended = prev.text[-1:] in '.!?:"”)'
        size = line.size
        indented = 0.8 * size <= line.x0 - left <= 6 * size and line.x0 - prev.x0 >= 0.5 * size
        short = prev.x1 < right - 0.25 * (right - left)
        return ended and (indented or (short and line.x0 - left < 0.5 * size))

    def code(self, lines: list[_Line], left: float) -> None:
        widths = [(w.x1 - w.x0) / max(len(w.text), 1) for ln in lines for w in ln.words]
        char = sorted(widths)[len(widths) // 2] if widths else 6.0
        rows = []
        for ln in lines:
            row = " " * max(0, round((ln.x0 - left) / max(char, 0.1)))
            pos = ln.x0
            for w in ln.words:
                gap = round((w.x0 - pos) / max(char, 0.1)) if pos != ln.x0 else 0
                row += " " * max(1 if pos != ln.x0 else 0, gap) + w.text
                pos = w.x1
            rows.append(row)
        self.add("code", "\n".join(rows), lines[0].size)

    def heading(self, lines: list[_Line], size: float, *, em: bool) -> None:
        text = normalize_space(_join_lines([ln.text for ln in lines], self.vocab))
        if _CAPTION_RE.match(text):
            self.add("caption", text, size)
        elif len(text) > 250:
            self.add("paragraph", text, size)
        else:
            self.add("heading", text, size, level=-1 if em else 0)

    def add(self, kind: str, text: str, size: float, level: int = 0) -> None:
        if kind in ("table", "code") or any(ch.isalnum() for ch in text):
            self.out.append(_Raw(kind, text, self.page, size, level))


class _Builder:
    def __init__(self, doc: Any, plumber: Any, path: Path, parser: PdfParser) -> None:
        self.doc = doc
        self.plumber = plumber
        self.path = path
        self.parser = parser
        self.metadata: dict[str, Any] = {}

    def build(self) -> ParsedDocument:
        count = len(self.doc)
        pages = [self._read(i) for i in range(count)]
        without = [p.number for p in pages if not p.words and not p.boxes and not p.plain.strip()]
        removed = _remove_furniture(pages)
        sizes: Counter[float] = Counter()
        vocab: set[str] = set()
        for page in pages:
            for w in page.words:
                sizes[round(w.size * 2) / 2] += len(w.text)
                if not w.text.endswith("-"):
                    vocab.add(w.text.strip(".,;:!?()[]\"'“”‘’").lower())
        body = sizes.most_common(1)[0][0] if sizes else 10.0
        raws: list[_Raw] = []
        for page in pages:
            raws.extend(self._page_blocks(page, body, vocab))
        raws.extend(self._ocr(without))
        meta = self.metadata
        meta.update(_doc_metadata(self.doc, count))
        meta["pages_without_text"] = without
        meta["encrypted"] = self.plumber.doc.encryption is not None
        meta["furniture_words_removed"] = removed
        if not raws:
            raise ParseError(
                str(self.path),
                f"has no text layer on any of its {count} page(s) (a scanned PDF?) and no OCR "
                "ran; install OCR support or convert the file to text first"
                if without
                else "contains no text after parsing; add content or skip this file",
            )
        outline = self._outline()
        title, source = self._title(raws, body)
        meta["title_source"] = source
        collector = BlockCollector()
        _emit(collector, _levels(_merge_items(raws), outline))
        return collector.document(
            path=self.path, title=title, media_type="application/pdf", metadata=meta
        )

    def _read(self, index: int) -> _Page:
        page = self.doc[index]
        textpage = page.get_textpage()
        try:
            width, height = page.get_size()
            chars = textpage.count_chars()
            objects = _count_objects(page)
            if chars > MAX_PAGE_CHARS or objects > MAX_PAGE_OBJECTS:
                self.metadata.setdefault("pages_plain_text", []).append(index + 1)
                return _Page(index + 1, width, height, plain=textpage.get_text_range())
            if chars == 0:
                return _Page(index + 1, width, height)
            try:
                return _extract_page(self.plumber.pages[index], index + 1)
            except Exception as exc:  # pdfminer failed on this page: keep pdfium's text
                self.metadata.setdefault("page_errors", {})[index + 1] = str(exc)[:200]
                self.metadata.setdefault("pages_plain_text", []).append(index + 1)
                return _Page(index + 1, width, height, plain=textpage.get_text_range())
        finally:
            textpage.close()
            page.close()

    def _page_blocks(self, page: _Page, body: float, vocab: set[str]) -> list[_Raw]:
        grouper = _Grouper(body, vocab, page.number)
        if page.plain.strip():
            for para in re.split(r"\n\s*\n", page.plain):
                grouper.add("paragraph", normalize_space(para), body)
            return grouper.out
        items: list[Any] = [*page.words, *page.boxes]
        if not items:
            return []
        for leaf in _xy_cut(items, gutter=0.8 * body, gap=0.6 * body, min_col=6 * body):
            words = [it for it in leaf if isinstance(it, _Word)]
            boxes = sorted((it for it in leaf if isinstance(it, _Box)), key=lambda b: b.top)
            lines = _make_lines(words)
            for box in boxes:
                grouper.lines([ln for ln in lines if ln.top < box.top])
                lines = [ln for ln in lines if ln.top >= box.top]
                grouper.add(box.kind, box.text, body)
            grouper.lines(lines)
        return grouper.out

    def _ocr(self, pages: list[int]) -> list[_Raw]:
        if not pages or not self.parser.ocr:
            return []
        try:
            module = importlib.import_module(".ocr", __package__)
        except ImportError:
            return []
        recognise = getattr(module, "ocr_image", None)
        if recognise is None:
            return []
        out: list[_Raw] = []
        done: list[int] = []
        for number in pages:
            page = self.doc[number - 1]
            try:
                image = page.render(scale=OCR_DPI / 72).to_pil()
                text = recognise(image, self.parser.ocr_languages)
            except Exception as exc:  # reported in metadata, the other pages still count
                self.metadata["ocr_error"] = f"page {number}: {exc}"
                break
            finally:
                page.close()
            done.append(number)
            for para in re.split(r"\n\s*\n", text or ""):
                if para.strip():
                    out.append(_Raw("paragraph", normalize_space(para), number))
        self.metadata["ocr_pages"] = done
        return out

    def _outline(self) -> dict[str, int]:
        levels: dict[str, int] = {}
        try:
            for i, item in enumerate(self.doc.get_toc(max_depth=6)):
                if i >= 2000:
                    break
                title = normalize_space(item.get_title() or "").lower()
                if title:
                    levels.setdefault(title, min(item.level + 1, 6))
        except Exception:  # a broken outline only loses heading levels
            return {}
        return levels

    def _title(self, raws: list[_Raw], body: float) -> tuple[str, str]:
        title = normalize_space(str(self.metadata.get("title", "")))
        if (
            len(title) >= 3
            and any(ch.isalpha() for ch in title)
            and not _MEANINGLESS_TITLE_RE.match(title)
        ):
            if normalize_space(title).lower() != self.path.stem.lower():
                return title, "metadata"
        first = [r for r in raws if r.page == min(r.page for r in raws) and r.kind != "table"]
        if first:
            largest = max(r.size for r in first)
            if largest >= 1.1 * body:
                pick = next(r for r in first if r.size >= largest - 0.25)
                if len(pick.text) <= 300:
                    return pick.text, "largest_font"
        return self.path.stem, "filename"


def _count_objects(page: Any) -> int:
    import pypdfium2.raw as pdfium_c

    return int(pdfium_c.FPDFPage_CountObjects(page.raw))


def _merge_items(raws: list[_Raw]) -> list[_Raw]:
    """Consecutive list items become one list block."""
    out: list[_Raw] = []
    for raw in raws:
        if raw.kind == "item":
            if out and out[-1].kind == "list":
                out[-1] = replace(out[-1], text=f"{out[-1].text}\n{raw.text}")
            else:
                out.append(replace(raw, kind="list"))
        else:
            out.append(raw)
    return out


def _levels(raws: list[_Raw], outline: dict[str, int]) -> list[_Raw]:
    """Heading levels: from the bookmarks when a heading matches one; else the rank of its
    font size among the sizes that head sections on two or more pages (so a giant word on
    a cover does not push every chapter down a level), one deeper per extra ``1.2.3``
    numbering level within a rank; bold or italic body-size headings rank last."""
    heads = [r for r in raws if r.kind == "heading"]
    pages: dict[float, set[int]] = {}
    for raw in heads:
        if raw.level == 0:
            pages.setdefault(round(raw.size, 1), set()).add(raw.page)
    structural = [size for size, seen in pages.items() if len(seen) >= 2] or list(pages)

    def rank(raw: _Raw) -> int:
        if raw.level != 0:
            return len(structural) + 1
        return 1 + sum(1 for size in structural if size > raw.size + 0.75)

    def depth(raw: _Raw) -> int | None:
        m = _NUMBERING_RE.match(raw.text)
        return m.group(1).count(".") + 1 if m else None

    shallowest: dict[int, int] = {}
    for raw in heads:
        d = depth(raw)
        if d is not None:
            shallowest[rank(raw)] = min(d, shallowest.get(rank(raw), d))
    levels: dict[int, int] = {}
    for raw in heads:
        d = depth(raw)
        level = rank(raw) * 10 + (d - shallowest[rank(raw)] if d is not None else 0)
        levels[id(raw)] = outline.get(raw.text.lower(), 0) * 100 or level
    order = {value: i + 1 for i, value in enumerate(sorted(set(levels.values())))}
    return [
        replace(r, level=min(order[levels[id(r)]], 6)) if r.kind == "heading" else r for r in raws
    ]


def _emit(collector: BlockCollector, raws: list[_Raw]) -> None:
    for raw in raws:
        before = len(collector.blocks)
        if raw.kind == "heading":
            collector.heading(raw.text, raw.level)
        else:
            collector.add(raw.kind, raw.text)  # type: ignore[arg-type]
        if len(collector.blocks) > before:
            collector.blocks[-1] = replace(collector.blocks[-1], page=raw.page)


def _doc_metadata(doc: Any, count: int) -> dict[str, Any]:
    info = doc.get_metadata_dict(skip_empty=True)
    meta: dict[str, Any] = {"pages": count}
    for key, name in (("Title", "title"), ("Author", "author"), ("Subject", "subject"),
                      ("Creator", "creator"), ("Producer", "producer")):  # fmt: skip
        if info.get(key, "").strip():
            meta[name] = info[key].strip()
    for key, name in (("CreationDate", "created"), ("ModDate", "modified")):
        date = _pdf_date(info.get(key, ""))
        if date:
            meta[name] = date
    return meta


def _pdf_date(value: str) -> str | None:
    """``D:20240822125427+02'00'`` -> ``2024-08-22T12:54:27+02:00``."""
    m = _PDF_DATE_RE.match(value.strip())
    if not m:
        return None
    year, month, day, hour, minute, second, sign, tzh, tzm = m.groups()
    out = f"{year}-{month or '01'}-{day or '01'}"
    if hour:
        out += f"T{hour}:{minute or '00'}:{second or '00'}"
        if sign in ("Z", "z"):
            out += "+00:00" if not tzh or tzh == "00" and (tzm or "00") == "00" else ""
        elif sign in ("+", "-"):
            out += f"{sign}{tzh or '00'}:{tzm or '00'}"
    return out


def to_markdown(document: ParsedDocument) -> str:
    """The document as Markdown: ``#`` headings, fenced code, tables and lists as they are."""
    parts = []
    for block in document.blocks:
        if block.kind == "heading":
            parts.append(f"{'#' * max(block.level, 1)} {block.text}")
        elif block.kind == "code":
            parts.append(f"```\n{block.text}\n```")
        else:
            parts.append(block.text)
    return BLOCK_SEPARATOR.join(parts)
