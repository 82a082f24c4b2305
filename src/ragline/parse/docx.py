"""DOCX parser: the body of a Word document as structured blocks.

The OOXML package is read directly with :mod:`zipfile` and lxml (both already ragline
dependencies; no python-docx). Only the main document part, its styles, its numbering
definitions and the core properties are read, so page headers, footers, footnotes,
endnotes and comments stay out of the body text.

Paragraph styles decide the block kind: ``Title`` and ``Heading 1``-``Heading 9`` (by style
name, so localised style ids work) and paragraphs with an outline level are headings;
``Caption`` paragraphs (figure and table captions) are captions; code-like styles are code;
numbered or bulleted paragraphs become ``- item`` / ``1. item`` lines, one list block per
list. Tables become Markdown tables on the table grid: a ``gridSpan`` cell is repeated
across the columns it spans and a ``vMerge`` continuation repeats the value above it.
Text in text boxes becomes paragraphs after the paragraph that anchors it. Deleted
(tracked) text, field codes and hidden text are skipped; image alt texts are not text.

The title is the core ``dc:title``, else the first ``Title`` paragraph, else the first
level-1 heading, else the file stem. Core properties (title, creator, created, modified,
subject, keywords, description, language, last_modified_by) go into the metadata.

Untrusted input is bounded before it is read: the archive's entry count, each part's
declared size and compression ratio, and the total read are checked against
:data:`MAX_PART_BYTES` and friends, reads are capped at the declared size, and XML is
parsed without DTDs, entity resolution, network access or libxml2's "huge tree" mode;
a part that declares a ``<!DOCTYPE>`` (which Word never writes) is refused.
"""

from __future__ import annotations

import io
import posixpath
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import ParseError
from ..core.types import ParsedDocument
from .text import BlockCollector, markdown_table, normalize_space

if TYPE_CHECKING:
    from lxml.etree import _Element as Element

DOCX_MEDIA_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"

MAX_ENTRIES = 10_000
"""Most entries a DOCX archive may hold."""
MAX_PART_BYTES = 128 * 1024 * 1024
"""Largest uncompressed XML part that is read (declared size)."""
MAX_TOTAL_BYTES = 256 * 1024 * 1024
"""Largest total of uncompressed bytes read from one archive."""
MAX_RATIO = 200
"""Highest uncompressed/compressed ratio accepted for a part (or the whole archive) above
:data:`RATIO_FLOOR_BYTES`; ordinary Word XML compresses 5-30x, zip bombs about 1000x."""
RATIO_FLOOR_BYTES = 4 * 1024 * 1024
_MAX_SPAN = 64
_PROLOG_BYTES = 64 * 1024
_DOCTYPE_MARKERS = tuple("<!DOCTYPE".encode(c) for c in ("utf-8", "utf-16-le", "utf-16-be"))

_W_NAMESPACES = (
    "http://schemas.openxmlformats.org/wordprocessingml/2006/main",
    "http://purl.oclc.org/ooxml/wordprocessingml/main",  # Strict OOXML
)
_REL_OFFICE_DOCUMENT = "/officeDocument"
_REL_STYLES = "/styles"
_REL_NUMBERING = "/numbering"
_REL_CORE = "/core-properties"
_HEADING_NAME_RE = re.compile(r"^heading\s*([1-9])$")
_CODE_STYLES = frozenset({"code", "source code", "html preformatted", "plain text", "macro text"})
_CORE_FIELDS = {"lastModifiedBy": "last_modified_by"} | {
    name: name
    for name in ("title", "creator", "created", "modified", "subject", "keywords", "description",
                 "language")
}  # fmt: skip
_FALSE = frozenset({"0", "false", "off"})


class DocxParser:
    """Parses DOCX (Office Open XML word-processing) files into blocks of the body."""

    media_types: tuple[str, ...] = (DOCX_MEDIA_TYPE,)

    def __init__(self, *, max_part_bytes: int = MAX_PART_BYTES) -> None:
        self.max_part_bytes = max_part_bytes

    def parse(self, data: bytes, *, path: Path) -> ParsedDocument:
        package = _Package(data, path, max_part_bytes=self.max_part_bytes)
        document_part = package.main_part()
        root = package.xml(document_part)
        if root is None:
            raise ParseError(
                str(path),
                f"is not a Word document: the package has no main document part "
                f"({document_part}); re-save it from Word as .docx",
            )
        if _local(root.tag) != "document":
            raise ParseError(
                str(path),
                f"{document_part} is not a Word document body (root <{_local(root.tag)}>)",
            )
        rels = package.rels(document_part)
        styles = _Styles(package.xml(rels.get(_REL_STYLES) or "word/styles.xml"))
        numbering = _Numbering(package.xml(rels.get(_REL_NUMBERING) or "word/numbering.xml"))
        core_part = package.rels("").get(_REL_CORE) or "docProps/core.xml"
        metadata: dict[str, Any] = _core_properties(package.xml(core_part))

        body = next((c for c in root if _local(c.tag) == "body"), None)
        collector = BlockCollector()
        walker = _Walker(collector, styles, numbering)
        if body is not None:
            walker.container(body)
            walker.flush()

        title, source = metadata.get("title", ""), "core_properties"
        if not title:
            title, source = walker.first_title or "", "title_style"
        if not title:
            title, source = collector.first_heading(1) or "", "heading"
        if not title:
            title, source = path.stem, "filename"
        metadata["title_source"] = source
        return collector.document(
            path=path, title=title, media_type=DOCX_MEDIA_TYPE, metadata=metadata
        )


# --------------------------------------------------------------------------- package


class _Package:
    """The ZIP container with every read bounded; part names are case-insensitive."""

    def __init__(self, data: bytes, path: Path, *, max_part_bytes: int = MAX_PART_BYTES) -> None:
        self.path = path
        self.max_part_bytes = max_part_bytes
        if data.startswith(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"):
            raise ParseError(
                str(path),
                "is not a DOCX (ZIP) file but an OLE container: a legacy .doc file or a "
                "password-protected document; remove the password or re-save it as .docx",
            )
        try:
            self.zip = zipfile.ZipFile(io.BytesIO(data))
            infos = self.zip.infolist()
        except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError) as exc:
            raise ParseError(
                str(path), f"is not a valid DOCX file (not a readable ZIP archive: {exc})"
            ) from None
        if len(infos) > MAX_ENTRIES:
            raise ParseError(
                str(path), f"holds {len(infos)} ZIP entries (limit {MAX_ENTRIES}); refusing it"
            )
        total = sum(i.file_size for i in infos)
        packed = max(1, sum(i.compress_size for i in infos))
        if total > RATIO_FLOOR_BYTES and total / packed > MAX_RATIO:
            raise ParseError(
                str(path),
                f"looks like a ZIP bomb: {total:,} bytes uncompressed from {packed:,} "
                f"(ratio {total // packed}, limit {MAX_RATIO}); refusing it",
            )
        self.names = {i.filename.lower(): i for i in infos}
        self.read_total = 0

    def read(self, name: str) -> bytes | None:
        """The bytes of part ``name``, or None when the package has no such part."""
        info = self.names.get(name.lstrip("/").lower())
        if info is None:
            return None
        if info.file_size > self.max_part_bytes:
            raise ParseError(
                str(self.path),
                f"part {info.filename} is {info.file_size:,} bytes uncompressed "
                f"(limit {self.max_part_bytes:,}); refusing a possible ZIP bomb",
            )
        ratio = info.file_size / max(1, info.compress_size)
        if info.file_size > RATIO_FLOOR_BYTES and ratio > MAX_RATIO:
            raise ParseError(
                str(self.path),
                f"part {info.filename} expands {ratio:.0f}x (limit {MAX_RATIO}x); "
                "refusing a possible ZIP bomb",
            )
        if self.read_total + info.file_size > MAX_TOTAL_BYTES:
            raise ParseError(
                str(self.path),
                f"parts total more than {MAX_TOTAL_BYTES:,} bytes uncompressed; refusing it",
            )
        try:
            with self.zip.open(info) as stream:
                data = stream.read(info.file_size + 1)
        except (zipfile.BadZipFile, RuntimeError, NotImplementedError, OSError, EOFError) as exc:
            raise ParseError(
                str(self.path), f"could not read part {info.filename}: {exc}"
            ) from None
        if len(data) > info.file_size:  # zipfile caps at the declared size; belt and braces
            raise ParseError(str(self.path), f"part {info.filename} is larger than declared")
        self.read_total += len(data)
        return data

    def xml(self, name: str) -> Element | None:
        data = self.read(name)
        return None if data is None else _parse_xml(data, name, self.path)

    def rels(self, part: str) -> dict[str, str]:
        """Relationship type suffix -> target part name, for ``part`` ("" = package)."""
        folder, base = posixpath.split(part)
        root = self.xml(posixpath.join(folder, "_rels", f"{base}.rels"))
        out: dict[str, str] = {}
        if root is None:
            return out
        for rel in root:
            kind, target = rel.get("Type", ""), rel.get("Target", "")
            if not target or rel.get("TargetMode") == "External":
                continue
            name = target.lstrip("/") if target.startswith("/") else posixpath.join(folder, target)
            suffix = kind[kind.rfind("/") :]
            out.setdefault(suffix, posixpath.normpath(name))
        return out

    def main_part(self) -> str:
        return self.rels("").get(_REL_OFFICE_DOCUMENT) or "word/document.xml"


def _parse_xml(data: bytes, name: str, path: Path) -> Element:
    from lxml import etree

    refused = ParseError(
        str(path),
        f"part {name} declares a DTD (<!DOCTYPE>), which Word never writes; refusing it "
        "because DTDs enable entity-expansion and external-entity (XXE) attacks",
    )
    head = data[:_PROLOG_BYTES]
    if any(marker in head for marker in _DOCTYPE_MARKERS):
        raise refused
    parser = etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        huge_tree=False,
        load_dtd=False,
        dtd_validation=False,
        remove_comments=True,
        remove_pis=True,
    )
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        raise ParseError(str(path), f"part {name} is not well-formed XML: {exc}") from None
    docinfo = root.getroottree().docinfo
    if docinfo.doctype or docinfo.internalDTD is not None:
        raise refused
    return root


def _local(tag: Any) -> str:
    if not isinstance(tag, str):
        return ""
    return tag[tag.rfind("}") + 1 :]


def _attr(element: Element | None, name: str) -> str | None:
    """A ``w:``-namespaced attribute (transitional or strict namespace)."""
    if element is None:
        return None
    for ns in _W_NAMESPACES:
        value = element.get(f"{{{ns}}}{name}")
        if value is not None:
            return value
    return None


def _child(element: Element | None, name: str) -> Element | None:
    if element is None:
        return None
    return next((c for c in element if _local(c.tag) == name), None)


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def _on(element: Element | None) -> bool:
    """A toggle property such as ``<w:vanish/>``: present and not switched off."""
    return element is not None and (_attr(element, "val") or "1").lower() not in _FALSE


# --------------------------------------------------------------------------- styles


@dataclass
class _Style:
    name: str = ""
    based_on: str | None = None
    outline: int | None = None
    num_id: str | None = None
    ilvl: int | None = None


class _Styles:
    """Paragraph styles: names, inheritance, outline levels and list numbering."""

    def __init__(self, root: Element | None) -> None:
        self.styles: dict[str, _Style] = {}
        self.default: str | None = None
        for el in root if root is not None else ():
            if _local(el.tag) != "style" or _attr(el, "type") not in (None, "paragraph"):
                continue
            style_id = _attr(el, "styleId") or ""
            ppr = _child(el, "pPr")
            numpr = _child(ppr, "numPr")
            outline = _attr(_child(ppr, "outlineLvl"), "val")
            self.styles[style_id] = _Style(
                name=(_attr(_child(el, "name"), "val") or style_id).strip().lower(),
                based_on=_attr(_child(el, "basedOn"), "val"),
                outline=_int(outline, 9) if outline is not None else None,
                num_id=_attr(_child(numpr, "numId"), "val"),
                ilvl=_int(_attr(_child(numpr, "ilvl"), "val"), 0) if numpr is not None else None,
            )
            if (_attr(el, "default") or "").lower() in ("1", "true", "on"):
                self.default = style_id

    def chain(self, style_id: str | None) -> list[_Style]:
        """The style and the styles it is based on, nearest first (cycles cut)."""
        out: list[_Style] = []
        seen: set[str] = set()
        current = style_id if style_id is not None else self.default
        while current is not None and current not in seen and len(out) < 32:
            seen.add(current)
            style = self.styles.get(current)
            if style is None:
                if not out:  # unknown id (no styles.xml): its id is the best name we have
                    out.append(_Style(name=current.lower()))
                break
            out.append(style)
            current = style.based_on
        return out


@dataclass
class _Level:
    bullet: bool
    start: int


class _Numbering:
    """numId -> (ilvl -> format) from numbering.xml, with level overrides."""

    def __init__(self, root: Element | None) -> None:
        self.nums: dict[str, dict[int, _Level]] = {}
        if root is None:
            return
        abstract: dict[str, dict[int, _Level]] = {}
        for el in root:
            if _local(el.tag) == "abstractNum":
                abstract[_attr(el, "abstractNumId") or ""] = _levels(el)
        for el in root:
            if _local(el.tag) != "num":
                continue
            levels = dict(abstract.get(_attr(_child(el, "abstractNumId"), "val") or "", {}))
            for override in el:
                if _local(override.tag) != "lvlOverride":
                    continue
                ilvl = _int(_attr(override, "ilvl"), 0)
                lvl = _child(override, "lvl")
                if lvl is not None:
                    levels.update(_levels(override))
                start = _attr(_child(override, "startOverride"), "val")
                if start is not None and ilvl in levels:
                    levels[ilvl] = _Level(levels[ilvl].bullet, _int(start, 1))
            self.nums[_attr(el, "numId") or ""] = levels

    def level(self, num_id: str, ilvl: int) -> _Level | None:
        levels = self.nums.get(num_id)
        if levels is None:
            return None
        return levels.get(ilvl) or _Level(bullet=True, start=1)


def _levels(parent: Element) -> dict[int, _Level]:
    out: dict[int, _Level] = {}
    for lvl in parent:
        if _local(lvl.tag) == "lvl":
            fmt = (_attr(_child(lvl, "numFmt"), "val") or "decimal").lower()
            out[_int(_attr(lvl, "ilvl"), 0)] = _Level(
                bullet=fmt in ("bullet", "none"), start=_int(_attr(_child(lvl, "start"), "val"), 1)
            )
    return out


# --------------------------------------------------------------------------- core properties


def _core_properties(root: Element | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for el in root if root is not None else ():
        key = _CORE_FIELDS.get(_local(el.tag))
        text = normalize_space(el.text or "")
        if key and text:
            out[key] = text
    return out


# --------------------------------------------------------------------------- body


@dataclass
class _ListItem:
    depth: int
    marker: str
    text: str


class _Walker:
    """Walks the body in document order and turns it into blocks."""

    def __init__(self, out: BlockCollector, styles: _Styles, numbering: _Numbering) -> None:
        self.out = out
        self.styles = styles
        self.numbering = numbering
        self.items: list[_ListItem] = []
        self.list_num_id: str | None = None
        self.counters: dict[tuple[str, int], int] = {}
        self.code: list[str] = []
        self.first_title: str | None = None

    def flush(self) -> None:
        if self.items:
            base = min(item.depth for item in self.items)
            self.out.add(
                "list",
                "\n".join(
                    "  " * (item.depth - base) + f"{item.marker} {item.text}" for item in self.items
                ),
            )
            self.items.clear()
            self.list_num_id = None
        if self.code:
            self.out.add("code", "\n".join(self.code))
            self.code.clear()

    def container(self, element: Element) -> None:
        """Block-level content: paragraphs, tables and the wrappers around them."""
        for child in element:
            name = _local(child.tag)
            if name == "p":
                self.paragraph(child)
            elif name == "tbl":
                self.table(child)
            elif name in ("sdt", "sdtContent", "customXml", "ins", "moveTo", "smartTag"):
                self.container(child)
            elif name == "AlternateContent":
                choice = _alternate(child)
                if choice is not None:
                    self.container(choice)

    # paragraphs ------------------------------------------------------------------

    def paragraph(self, p: Element) -> None:
        boxes: list[Element] = []
        text = "".join(_inline(p, boxes))
        ppr = _child(p, "pPr")
        style_id = _attr(_child(ppr, "pStyle"), "val")
        chain = self.styles.chain(style_id)
        kind, level = self._classify(ppr, chain)

        if kind == "code" and (text.strip() or self.code):
            if self.items:
                self.flush()
            self.code.append(text.rstrip())
        elif not text.strip():
            pass
        elif kind == "heading":
            self.flush()
            self.out.heading(text, level)
            if self.first_title is None and chain and chain[0].name == "title":
                self.first_title = normalize_space(text)
        elif kind == "caption":
            self.flush()
            self.out.add("caption", text)
        elif not self._list_item(ppr, chain, text):
            self.flush()
            self.out.add("paragraph", text)
        for box in boxes:
            self.flush()
            self.container(box)

    def _classify(self, ppr: Element | None, chain: list[_Style]) -> tuple[str, int]:
        name = chain[0].name if chain else ""
        match = _HEADING_NAME_RE.match(name)
        if match:
            return "heading", int(match.group(1))
        if name == "title":
            return "heading", 1
        direct = _attr(_child(ppr, "outlineLvl"), "val")
        outline = _int(direct, 9) if direct is not None else None
        if outline is None:
            outline = next((s.outline for s in chain if s.outline is not None), None)
        if outline is not None and 0 <= outline < 9:
            return "heading", outline + 1
        names = {s.name for s in chain}
        if "caption" in names:
            return "caption", 0
        if names & _CODE_STYLES:
            return "code", 0
        return "paragraph", 0

    def _list_item(self, ppr: Element | None, chain: list[_Style], text: str) -> bool:
        numpr = _child(ppr, "numPr")
        num_id = _attr(_child(numpr, "numId"), "val")
        ilvl_value = _attr(_child(numpr, "ilvl"), "val")
        style = next((s for s in chain if s.num_id is not None), None)
        if num_id is None and style is not None:
            num_id = style.num_id
        if ilvl_value is None and style is not None and style.ilvl is not None:
            ilvl_value = str(style.ilvl)
        if num_id is None or num_id == "0":
            return False
        ilvl = min(max(_int(ilvl_value, 0), 0), 8)
        level = self.numbering.level(num_id, ilvl)
        if level is None:
            return False
        if self.items and ilvl == 0 and num_id != self.list_num_id:
            self.flush()
        if self.code:
            self.flush()
        if not self.items:
            self.list_num_id = num_id
        for deeper in range(ilvl + 1, 9):
            self.counters.pop((num_id, deeper), None)
        if level.bullet:
            marker = "-"
        else:
            number = self.counters.get((num_id, ilvl), level.start - 1) + 1
            self.counters[(num_id, ilvl)] = number
            marker = f"{number}."
        self.items.append(_ListItem(ilvl, marker, normalize_space(text)))
        return True

    # tables ------------------------------------------------------------------------

    def table(self, tbl: Element) -> None:
        self.flush()
        rows = _table_rows(tbl)
        if max((len(r) for r in rows), default=0) <= 1:
            # A one-column table is a frame around text, not data: read it as content.
            for tr in _parts(tbl, "tr"):
                for tc in _parts(tr, "tc"):
                    self.container(tc)
                    self.flush()
            return
        self.out.add("table", markdown_table(rows))


def _alternate(element: Element) -> Element | None:
    """The first ``mc:Choice`` of an ``mc:AlternateContent`` (its Fallback repeats it)."""
    return next((c for c in element if _local(c.tag) == "Choice"), None)


def _inline(element: Element, boxes: list[Element]) -> list[str]:
    """Visible text of a paragraph's runs, in order. Text boxes go to ``boxes``."""
    out: list[str] = []
    for child in element:
        name = _local(child.tag)
        if name == "r":
            if _on(_child(_child(child, "rPr"), "vanish")):
                continue
            for part in child:
                _run_part(part, out, boxes)
        elif name in ("pPr", "rPr", "del", "moveFrom", "bookmarkStart", "bookmarkEnd"):
            continue
        elif name == "AlternateContent":
            choice = _alternate(child)
            if choice is not None:
                out.extend(_inline(choice, boxes))
        else:  # hyperlink, ins, moveTo, fldSimple, smartTag, sdt, math, ...
            out.extend(_inline(child, boxes))
    return out


def _run_part(part: Element, out: list[str], boxes: list[Element]) -> None:
    name = _local(part.tag)
    if name == "t":
        out.append(part.text or "")
    elif name in ("tab", "ptab", "br", "cr"):
        out.append(" ")
    elif name == "noBreakHyphen":
        out.append("-")
    elif name in ("drawing", "pict", "object", "AlternateContent"):
        if name == "AlternateContent":
            choice = _alternate(part)
            if choice is not None:
                for inner in choice:
                    _run_part(inner, out, boxes)
            return
        boxes.extend(e for e in part.iter() if _local(e.tag) == "txbxContent")
    elif name in ("ruby", "sdt", "sdtContent", "r"):
        for inner in part:
            _run_part(inner, out, boxes)
    elif name == "rt":  # ruby base text only
        return


def _parts(element: Element, name: str) -> list[Element]:
    """Children named ``name`` (rows of a table, cells of a row), looking through the
    content-control and custom-XML wrappers that may enclose them."""
    out: list[Element] = []
    for child in element:
        local = _local(child.tag)
        if local == name:
            out.append(child)
        elif local in ("sdt", "sdtContent", "customXml"):
            out.extend(_parts(child, name))
    return out


def _table_rows(tbl: Element) -> list[list[str]]:
    """Cell texts on the table grid: spans repeated across columns, vertical merges down."""
    grid: list[list[str]] = []
    for tr in _parts(tbl, "tr"):
        trpr = _child(tr, "trPr")
        row = [""] * min(_int(_attr(_child(trpr, "gridBefore"), "val"), 0), _MAX_SPAN)
        for tc in _parts(tr, "tc"):
            tcpr = _child(tc, "tcPr")
            span = min(max(_int(_attr(_child(tcpr, "gridSpan"), "val"), 1), 1), _MAX_SPAN)
            vmerge = _child(tcpr, "vMerge")
            column = len(row)
            if vmerge is not None and (_attr(vmerge, "val") or "continue") == "continue":
                above = grid[-1] if grid else []
                text = above[column] if column < len(above) else ""
            else:
                text = _cell_text(tc)
            row.extend([text] * span)
        row.extend([""] * min(_int(_attr(_child(trpr, "gridAfter"), "val"), 0), _MAX_SPAN))
        grid.append(row)
    return grid


def _cell_text(element: Element) -> str:
    """All text in a cell (nested tables flattened), paragraphs joined by spaces."""
    parts: list[str] = []
    for child in element:
        name = _local(child.tag)
        if name == "p":
            boxes: list[Element] = []
            parts.append("".join(_inline(child, boxes)))
            parts.extend(_cell_text(box) for box in boxes)
        elif name == "tbl":
            parts.extend(" ".join(r) for r in _table_rows(child))
        elif name in ("sdt", "sdtContent", "customXml", "ins", "moveTo"):
            parts.append(_cell_text(child))
    return normalize_space(" ".join(parts))
