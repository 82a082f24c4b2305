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
  their level comes from the bookmarks when a line matches one, else from the rank of
  their font size (among sizes that head sections on two or more pages, so a giant cover
  word does not push every chapter down) and their ``1.2.3`` numbering depth. Lines set
  in a monospaced font are code; lines starting with a bullet or a number are lists;
  ``Figure 3 ...`` / ``Table 2 ...`` are captions.
* **Page furniture** is dropped: lines that repeat at the same place on several pages
  (digits ignored), page numbers (``7``, ``Page 7 of 9``, ``- 7 -``) and running heads
  that pair a title with a page number at the edge of the page, and text on pictures.
* **Hyphenation** at line ends is joined (``informa-``/``tion``) unless the next line starts
  with a capital, the left part is already a compound (``state-of-the-``) or the
  hyphenated word occurs elsewhere in the document.
* Right-to-left lines (Arabic, Hebrew) are put back into logical order.

Pages without a text layer are listed in ``metadata["pages_without_text"]``; when
:mod:`ragline.parse.ocr` is present they are rendered at 300 dpi and recognised
(``ocr_pages``; a failure is reported in ``ocr_error``). Work per page is bounded: a page
with too many characters or drawing objects (form XObjects included) for layout analysis,
or one pdfminer fails on (``page_errors``), is read as plain text by pdfium and listed in
``pages_plain_text``. The geometry lives in :mod:`ragline.parse.pdf_layout`.
"""

from __future__ import annotations

import importlib
import io
import os
import re
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..core.errors import MissingDependencyError, ParseError
from ..core.types import BLOCK_SEPARATOR, ParsedDocument
from .pdf_layout import Box, Line, Page, Word, extract_page, make_lines, remove_furniture, xy_cut
from .text import BlockCollector, normalize_space

PASSWORD_ENV = "RAGLINE_PDF_PASSWORD"
PASSWORD_HINT = "pass the password with --pdf-password / RAGLINE_PDF_PASSWORD"
OCR_DPI = 300
MAX_PAGE_CHARS = 60_000
"""Pages with more characters than this skip layout analysis (read as plain text)."""
MAX_PAGE_OBJECTS = 60_000
"""Pages with more drawing objects than this skip layout analysis (pdfminer is slow)."""
_BULLETS = frozenset("•●▪■◦‣○∙–—-*►▶➢✓✔❖◆◇□➤→")
_NUMBER_MARK_RE = re.compile(r"^(\(?\d{1,3}[.)]|\(?[a-z][.)]|\(?[ivx]{1,5}[.)])$")
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
_PDFIUM_LOCK = threading.Lock()
_PDF_DATE_RE = re.compile(
    r"^D?:?(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?\s*([Zz+-])?\s*(\d{2})?'?(\d{2})?"
)


class PdfParser:
    """Parses ``application/pdf`` into blocks with page numbers and heading paths.

    ``password`` opens protected files; by default it is read from the
    ``RAGLINE_PDF_PASSWORD`` environment variable. With ``ocr``, pages without a text
    layer are recognised by :func:`ragline.parse.ocr.ocr_image` (or by ``ocr`` itself
    when it is a function ``(image, languages) -> text``) in ``ocr_languages``
    (``None``: that module's default, ``RAGLINE_OCR_LANGUAGES`` or English). A page of
    more than ``max_page_objects`` objects is read as plain text, without layout.
    """

    media_types: tuple[str, ...] = ("application/pdf",)

    def __init__(
        self,
        password: str | None = None,
        *,
        ocr: bool | Callable[..., str] = True,
        ocr_languages: Sequence[str] | None = None,
        max_page_objects: int = MAX_PAGE_OBJECTS,
    ) -> None:
        self.password = password if password is not None else os.environ.get(PASSWORD_ENV)
        self.ocr = ocr
        self.ocr_languages = list(ocr_languages) if ocr_languages is not None else None
        self.max_page_objects = max_page_objects

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
        with _PDFIUM_LOCK:  # PDFium is not thread-safe
            doc = _open_pdfium(pdfium, data, path, self.password)
            try:
                try:
                    plumber = pdfplumber.open(io.BytesIO(data), password=self.password or "")
                except Exception as exc:  # pdfium repaired what pdfminer cannot read
                    builder = _Builder(doc, None, path, self)
                    builder.metadata["layout_error"] = f"{type(exc).__name__}: {exc}"[:300]
                    return builder.build()
                with plumber:
                    return _Builder(doc, plumber, path, self).build()
            except ParseError:
                raise
            except RecursionError:
                raise ParseError(str(path), "could not parse as PDF: nested too deeply") from None
            except Exception as exc:  # never a raw traceback from a bad file
                raise ParseError(str(path), f"could not parse as PDF: {exc}") from exc
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


@dataclass(slots=True)
class _Raw:
    kind: str
    text: str
    page: int
    size: float = 0.0
    level: int = 0


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
            right = re.split(r"[\s,.;:!?)\]]", text, maxsplit=1)[0]
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


def _marker(line: Line) -> str | None:
    """The list marker a line starts with (``-`` for bullets, ``3.`` for numbers)."""
    first = line.words[0].text
    if first in _BULLETS or (len(first) == 1 and "\ue000" <= first <= "\uf8ff"):
        return "-" if len(line.words) > 1 else None
    if first[:1] in "•●▪■◦‣►▶➢✓✔❖◆◇□➤" and len(first) > 1:
        return "-"
    if _NUMBER_MARK_RE.match(first) and len(line.words) > 1:
        return first.strip("()").rstrip(".)") + "."
    return None


def _strip_marker(line: Line) -> str:
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

    def big(self, line: Line) -> bool:
        return line.size >= 1.12 * self.body and any(ch.isalpha() for ch in line.text)

    def emphasized(self, line: Line) -> bool:
        return (line.bold or line.italic) and not line.mono

    def lines(self, lines: list[Line]) -> None:
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

    def _em_heading_end(self, lines: list[Line], i: int) -> int:
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

    def _breaks(self, lines: list[Line], j: int, left: float, right: float) -> bool:
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

    def code(self, lines: list[Line], left: float) -> None:
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

    def heading(self, lines: list[Line], size: float, *, em: bool) -> None:
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
        removed = remove_furniture(pages)
        sizes: Counter[float] = Counter()
        vocab: set[str] = set()
        for page in pages:
            for w in page.words:
                sizes[round(w.size * 2) / 2] += len(w.text)
                if not w.text.endswith("-"):
                    vocab.add(w.text.strip(".,;:!?()[]\"'“”‘’").lower())
        body = sizes.most_common(1)[0][0] if sizes else 10.0
        recognised = self._ocr(without)
        raws: list[_Raw] = []
        for page in pages:
            raws.extend(recognised.get(page.number) or self._page_blocks(page, body, vocab))
        meta = self.metadata
        meta.update(_doc_metadata(self.doc, count))
        meta["pages_without_text"] = without
        meta["encrypted"] = _encrypted(self.doc)
        meta["furniture_words_removed"] = removed
        if not raws and without:
            why = meta.get("ocr_error") or (
                "OCR is not available" if self.parser.ocr else "OCR is off"
            )
            raise ParseError(
                str(self.path),
                f"has no text layer on any of its {count} page(s) (a scanned PDF?) and no text "
                f"was recognised ({why}); install Tesseract for OCR or convert the file first",
            )
        if not raws:
            raise ParseError(
                str(self.path), "contains no text after parsing; add content or skip this file"
            )
        outline = self._outline()
        title, source = self._title(raws, body)
        meta["title_source"] = source
        collector = BlockCollector()
        _emit(collector, _levels(_merge_items(raws), outline))
        return collector.document(
            path=self.path, title=title, media_type="application/pdf", metadata=meta
        )

    def _read(self, index: int) -> Page:
        page = self.doc[index]
        textpage = page.get_textpage()
        try:
            width, height = page.get_size()
            chars = textpage.count_chars()
            limit = self.parser.max_page_objects
            objects = _count_objects(page, limit)
            if chars > MAX_PAGE_CHARS or objects > limit:
                self.metadata.setdefault("pages_plain_text", []).append(index + 1)
                return Page(index + 1, width, height, plain=textpage.get_text_range())
            if chars == 0:
                return Page(index + 1, width, height)
            if self.plumber is None:
                self.metadata.setdefault("pages_plain_text", []).append(index + 1)
                return Page(index + 1, width, height, plain=textpage.get_text_range())
            layout = self.plumber.pages[index]
            try:
                return extract_page(layout, index + 1)
            except Exception as exc:  # pdfminer failed on this page: keep pdfium's text
                self.metadata.setdefault("page_errors", {})[index + 1] = str(exc)[:200]
                self.metadata.setdefault("pages_plain_text", []).append(index + 1)
                return Page(index + 1, width, height, plain=textpage.get_text_range())
            finally:
                layout.close()  # drop pdfminer's objects: memory stays flat on long files
        finally:
            textpage.close()
            page.close()

    def _page_blocks(self, page: Page, body: float, vocab: set[str]) -> list[_Raw]:
        grouper = _Grouper(body, vocab, page.number)
        if page.plain.strip():
            for para in re.split(r"\n\s*\n", page.plain):
                grouper.add("paragraph", normalize_space(para), body)
            return grouper.out
        items: list[Any] = [*page.words, *page.boxes]
        if not items:
            return []
        for leaf in xy_cut(items, gutter=0.8 * body, gap=0.6 * body, min_col=6 * body):
            words = [it for it in leaf if isinstance(it, Word)]
            boxes = sorted((it for it in leaf if isinstance(it, Box)), key=lambda b: b.top)
            lines = make_lines(words)
            for box in boxes:
                grouper.lines([ln for ln in lines if ln.top < box.top])
                lines = [ln for ln in lines if ln.top >= box.top]
                grouper.add(box.kind, box.text, body)
            grouper.lines(lines)
        return grouper.out

    def _ocr(self, pages: list[int]) -> dict[int, list[_Raw]]:
        """Blocks recognised on pages without a text layer, by page number."""
        if not pages or not self.parser.ocr:
            return {}
        recognise = self.parser.ocr
        if not callable(recognise):
            try:
                recognise = importlib.import_module(".ocr", __package__).ocr_image
            except (ImportError, AttributeError):
                return {}
        out: dict[int, list[_Raw]] = {}
        for number in pages:
            page = self.doc[number - 1]
            try:
                image = page.render(scale=OCR_DPI / 72).to_pil()
                text = recognise(image, self.parser.ocr_languages)
            except MissingDependencyError as exc:  # no Tesseract: no page will do better
                self.metadata["ocr_error"] = str(exc)
                break
            except Exception as exc:  # reported; the other pages are still tried
                self.metadata["ocr_error"] = f"page {number}: {exc}"
                continue
            finally:
                page.close()
            paragraphs = [normalize_space(p) for p in re.split(r"\n\s*\n", text or "")]
            out[number] = [_Raw("paragraph", p, number) for p in paragraphs if p]
        self.metadata["ocr_pages"] = sorted(out)
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


def _count_objects(page: Any, limit: int) -> int:
    """Drawing objects on a page, counting those inside form XObjects (up to ``limit``)."""
    import pypdfium2.raw as pdfium_c

    def count(get: Any, n: int, depth: int) -> int:
        total = n
        for i in range(n):
            if total > limit:
                break
            obj = get(i)
            if depth < 4 and pdfium_c.FPDFPageObj_GetType(obj) == pdfium_c.FPDF_PAGEOBJ_FORM:
                inner = pdfium_c.FPDFFormObj_CountObjects(obj)
                total += count(
                    lambda k, o=obj: pdfium_c.FPDFFormObj_GetObject(o, k), inner, depth + 1
                )
        return total

    raw = page.raw
    n = int(pdfium_c.FPDFPage_CountObjects(raw))
    return n if n > limit else count(lambda k: pdfium_c.FPDFPage_GetObject(raw, k), n, 0)


def _encrypted(doc: Any) -> bool:
    import pypdfium2.raw as pdfium_c

    return bool(pdfium_c.FPDF_GetSecurityHandlerRevision(doc.raw) != -1)


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
        levels[id(raw)] = outline.get(raw.text.lower(), 0) * 10 or level
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
