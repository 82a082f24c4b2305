"""HTML parser: the main content of a page as structured blocks.

The page is decoded (BOM, then ``<meta charset>`` / ``http-equiv``, then UTF-8, then
detection) and parsed with lxml's HTML parser (libxml2), used directly rather than through
BeautifulSoup because building a bs4 tree costs about a second per megabyte of dense
markup. The parser never touches the network and resolves no entities other than HTML's
own: definitions inside a ``<!DOCTYPE ... [ ... ]>`` (which web pages never need; a vehicle
for entity-expansion and XXE attacks) are dropped unread, and their references stay
literal text. libxml2's "huge" mode is on, so a 10 MB single-line page or text run is
read whole (the parse worker's memory limit bounds it), and a page nested deeper than
libxml2 allows (2,048 levels) is refused instead of being silently cut short.

Content comes from the most specific main-content container present
(``#mw-content-text``, a single ``<article>``, ``<main>``, ``[role=main]``, ``#content``,
else ``<body>``). Boilerplate is skipped: scripts, styles, navigation, page headers and
footers, asides, forms, hidden elements, cookie banners, "jump to" links, Wikipedia edit
links and reference markers such as ``[1]``.

Headings ``h1``-``h6`` become heading blocks; lists become one ``- item`` block each;
``pre`` is code; data tables become Markdown tables (colspan and rowspan cells repeated),
while layout tables (one column, ``role=presentation``, or holding headings) are read as
containers; ``figcaption`` and ``caption`` are captions. The title is the first ``<h1>``
outside boilerplate, else ``<title>``, else the file stem.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import ParseError
from ..core.types import ParsedDocument
from .dates import HTML_META_DATES
from .decode import decode_bytes
from .text import BlockCollector, markdown_table, normalize_space, require_text

if TYPE_CHECKING:
    from lxml.etree import _Element as Element

_DROP_TAGS = frozenset(
    {
        "script", "style", "noscript", "nav", "aside", "form", "svg", "template", "iframe",
        "object", "embed", "canvas", "button", "select", "input", "textarea", "dialog",
        "head", "title", "meta", "link", "base", "audio", "video", "map", "math", "footer",
        "frameset", "frame", "applet",
    }
)  # fmt: skip
_DROP_ROLES = frozenset(
    {"navigation", "banner", "contentinfo", "search", "complementary", "menu", "menubar",
     "toolbar", "dialog", "alertdialog", "tablist"}
)  # fmt: skip
_DROP_CLASSES = frozenset(
    {
        # MediaWiki
        "mw-editsection", "editsection", "mw-jump-link", "navbox", "vertical-navbox",
        "navbox-styles", "catlinks", "printfooter", "mw-cite-backlink", "hatnote",
        "shortdescription", "mw-indicators", "sistersitebox", "side-box", "metadata",
        "ambox", "authority-control", "portalbox", "navigation-not-searchable",
        "reference", "mw-empty-elt", "toc", "noprint",
        # Common sites
        "skip-link", "skiplink", "skip-to-content", "screen-reader-text", "sr-only",
        "visually-hidden", "visuallyhidden", "breadcrumb", "breadcrumbs", "share",
        "sharing", "social-share", "social-links", "advert", "advertisement", "ad-slot",
        "adsbygoogle", "newsletter", "sidebar",
    }
)  # fmt: skip
_BANNER_RE = re.compile(r"cookie|consent|gdpr", re.IGNORECASE)
_HIDDEN_STYLE_RE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
_JUMP_LINK_RE = re.compile(
    r"^\s*(jump|skip) to (the )?(main )?(navigation|content|search|main|page content)\s*$",
    re.IGNORECASE,
)
_REF_MARK_RE = re.compile(r"^\s*\[\s*[^\[\]]{1,24}\s*\]\s*$")
_CONTENT_IDS = ("mw-content-text", "content", "main-content", "maincontent")

_INLINE_TAGS = frozenset(
    {
        "a", "abbr", "acronym", "b", "bdi", "bdo", "big", "cite", "code", "data", "del",
        "dfn", "em", "font", "i", "img", "ins", "kbd", "label", "mark", "q", "rp", "rt",
        "ruby", "s", "samp", "small", "span", "strike", "strong", "sub", "sup", "time",
        "tt", "u", "var", "wbr", "nobr", "output", "meter", "progress",
    }
)  # fmt: skip
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_LISTS = frozenset({"ul", "ol", "dl", "menu"})
_MAX_SPAN = 50
_INTERNAL_SUBSET_RE = re.compile(r"(<!DOCTYPE[^>\[]*)\[.*?\]\s*>", re.IGNORECASE | re.DOTALL)
_PROLOG_CHARS = 64 * 1024


class HtmlParser:
    """Parses ``text/html`` (and XHTML) into blocks of the page's main content."""

    media_types: tuple[str, ...] = ("text/html", "application/xhtml+xml")

    def parse(self, data: bytes, *, path: Path) -> ParsedDocument:
        decoded = decode_bytes(data, path=path, declared="html")
        require_text(decoded.text, path)
        collector = BlockCollector()
        metadata: dict[str, Any] = {"encoding": decoded.encoding}
        try:
            root = _parse_tree(_drop_internal_subset(decoded.text))
            if root is not None:
                _Walker(collector).container(_main_content(root))
                title, source = _title(root, collector)
                lang = root.get("lang")
                if lang and lang.strip():
                    metadata["language"] = lang.strip()
                metadata.update(_meta_dates(root))
            else:
                title, source = "", "filename"
        except RecursionError:
            raise ParseError(
                str(path), "could not parse as HTML: elements are nested too deeply"
            ) from None
        except Exception as exc:  # lxml failures must not leak as tracebacks
            raise ParseError(str(path), f"could not parse as HTML: {exc}") from exc
        if not title:
            title, source = path.stem, "filename"
        metadata["title_source"] = source
        return collector.document(path=path, title=title, media_type="text/html", metadata=metadata)


def _drop_internal_subset(text: str) -> str:
    """``<!DOCTYPE html [<!ENTITY ...>]>`` -> ``<!DOCTYPE html>``: libxml2's HTML parser
    would show the definitions as text (``]>``); they are never used."""
    match = _INTERNAL_SUBSET_RE.search(text, 0, _PROLOG_CHARS)
    if match is None:
        return text
    return f"{text[: match.start()]}{match.group(1).rstrip()}>{text[match.end() :]}"


class _LimitExceeded(ValueError):
    """libxml2 hit one of its resource limits and dropped the rest of the page."""


def _parse_tree(text: str) -> Element | None:
    from lxml import etree

    # Already decoded: hand libxml2 UTF-8 and tell it so, so a stale <meta charset> or XML
    # declaration in the page cannot make it decode a second time.
    parser = etree.HTMLParser(
        encoding="utf-8", remove_comments=True, remove_pis=True, no_network=True, huge_tree=True
    )
    root = etree.fromstring(text.encode("utf-8"), parser)
    # libxml2 recovers from a resource limit by dropping the rest of the page: refuse it.
    for error in parser.error_log:
        if error.type == etree.ErrorTypes.ERR_RESOURCE_LIMIT:
            match = re.search(r"Excessive depth in document: (\d+)", error.message)
            what = (
                f"elements are nested more than {match.group(1)} levels deep"
                if match
                else f"the page exceeds the HTML parser's limits ({error.message.strip()})"
            )
            raise _LimitExceeded(what)
    return root


def _main_content(root: Element) -> Element:
    def first(xpath: str) -> Element | None:
        for element in root.xpath(xpath):
            if not _is_boilerplate(element):
                return element
        return None

    found = first("//*[@id='mw-content-text']")
    if found is not None:
        return found
    articles = [a for a in root.iter("article") if not _is_boilerplate(a)]
    if len(articles) == 1:
        return articles[0]
    for xpath in ("//main", "//*[@role='main']", "//*[@id='content']", "//*[@id='main-content']"):
        found = first(xpath)
        if found is not None:
            return found
    body = root.find("body")
    return body if body is not None else root


def _meta_dates(root: Element) -> dict[str, str]:
    """``<meta name="date" content="2024-06-18">`` and its kin (:data:`HTML_META_DATES`),
    as metadata keys; the first of each kept."""
    out: dict[str, str] = {}
    for meta in root.iter("meta"):
        name = (meta.get("name") or meta.get("property") or meta.get("http-equiv") or "").strip()
        key = HTML_META_DATES.get(name.casefold())
        content = (meta.get("content") or "").strip()
        if key and content and key not in out:
            out[key] = content[:100]
    return out


def _title(root: Element, collector: BlockCollector) -> tuple[str, str]:
    heading = collector.first_heading(1)
    if heading:
        return heading, "h1"
    for h1 in root.iter("h1"):
        # A page header often holds the page's title (Wikipedia), so headers count here.
        if not any(_is_boilerplate(e, header_is_content=True) for e in (h1, *h1.iterancestors())):
            text = _inline_text(h1)
            if text:
                return text, "h1"
    title = root.find("head/title")
    if title is None:
        title = root.find(".//title")
    if title is not None:
        text = normalize_space(title.xpath("string()"))
        if text:
            return text, "title"
    return "", "filename"


def _is_boilerplate(element: Element, *, header_is_content: bool = False) -> bool:
    name = element.tag
    if name in _DROP_TAGS:
        return True
    if name == "header" and not header_is_content:
        # A header inside an <article> holds the article's title and byline: keep it.
        return next(element.iterancestors("article"), None) is None
    attrs = element.attrib
    if not attrs:
        return False
    if attrs.get("role") in _DROP_ROLES:
        return True
    if "hidden" in attrs or attrs.get("aria-hidden") == "true":
        return True
    style = attrs.get("style")
    if style and _HIDDEN_STYLE_RE.search(style):
        return True
    classes = attrs.get("class", "").split()
    if any(c in _DROP_CLASSES for c in classes):
        return True
    ident = attrs.get("id", "")
    if ident in _DROP_CLASSES:
        return True
    return name in ("div", "section", "aside", "p", "span") and bool(
        _BANNER_RE.search(ident) or any(_BANNER_RE.search(c) for c in classes)
    )


def _is_noise(element: Element) -> bool:
    """Boilerplate, or small markers recognised by their text ([1], [edit], jump links)."""
    name = element.tag
    if not isinstance(name, str):
        return True  # comment or processing instruction
    if _is_boilerplate(element):
        return True
    if name == "sup":
        return bool(_REF_MARK_RE.match(element.xpath("string()")))
    if name == "a":
        text = element.xpath("string()")
        return len(text) < 40 and bool(_JUMP_LINK_RE.match(text))
    return False


def _strings(element: Element) -> Iterator[str]:
    """Text inside ``element`` in document order, skipping boilerplate."""
    if element.text:
        yield element.text
    for child in element:
        name = child.tag
        if name == "br":
            yield " "
        elif not _is_noise(child):
            if name in _INLINE_TAGS:
                yield from _strings(child)
            else:
                yield " "
                yield from _strings(child)
                yield " "
        if child.tail:
            yield child.tail


def _inline_text(element: Element) -> str:
    return normalize_space("".join(_strings(element)))


def _raw_strings(element: Element) -> Iterator[str]:
    """Verbatim text of preformatted content (``<br>`` as newline)."""
    if element.text:
        yield element.text
    for child in element:
        if child.tag == "br":
            yield "\n"
        elif not _is_noise(child):
            yield from _raw_strings(child)
        if child.tail:
            yield child.tail


class _Walker:
    """Depth-first walk that turns elements into blocks."""

    def __init__(self, out: BlockCollector) -> None:
        self.out = out
        self.buffer: list[str] = []
        self.links = 0
        self.link_chars = 0

    def flush(self) -> None:
        if self.buffer:
            text = normalize_space("".join(self.buffer))
            if not self._is_link_bar(text):
                self.out.add("paragraph", text)
            self.buffer.clear()
        self.links = 0
        self.link_chars = 0

    def _is_link_bar(self, text: str) -> bool:
        """A run of bare links (a menu or a tag cloud), not prose."""
        chars = len(text.replace(" ", ""))
        return self.links >= 3 and chars > 0 and self.link_chars >= 0.9 * chars

    def container(self, element: Element) -> None:
        self.flush()
        self.children(element)
        self.flush()

    def children(self, element: Element) -> None:
        if element.text:
            self.buffer.append(element.text)
        for child in element:
            self.element(child)
            if child.tail:
                self.buffer.append(child.tail)

    def element(self, child: Element) -> None:
        name = child.tag
        if name == "br":
            self.buffer.append(" ")
        elif _is_noise(child):
            return
        elif name in _INLINE_TAGS:
            if name == "img":
                return  # alt texts of icons and photos are noise in running text
            if name == "a":
                start = len(self.buffer)
                self.children(child)
                self.links += 1
                self.link_chars += sum(len(t.replace(" ", "")) for t in self.buffer[start:])
            else:
                self.children(child)
        elif name in _HEADINGS:
            self.flush()
            self.out.heading(_inline_text(child), _HEADINGS[name])
        elif name in _LISTS:
            self.flush()
            self.out.add("list", "\n".join(_list_lines(child, depth=0)))
        elif name in ("pre", "listing", "xmp", "plaintext"):
            self.flush()
            self.out.add("code", "".join(_raw_strings(child)))
        elif name == "table":
            self.table(child)
        elif name in ("figcaption", "caption", "legend"):
            self.flush()
            self.out.add("caption", _inline_text(child))
        else:
            self.container(child)

    def table(self, table: Element) -> None:
        self.flush()
        rows = _rows(table)
        if _is_layout_table(table, rows):
            for row in rows:
                for cell in row:
                    self.container(cell)
            return
        caption = table.find("caption")
        if caption is not None and not _is_noise(caption):
            self.out.add("caption", _inline_text(caption))
        self.out.add("table", markdown_table(_grid(rows)))


def _list_lines(element: Element, *, depth: int) -> list[str]:
    """A list as ``- item`` / ``1. item`` lines, nested lists indented below their item."""
    lines: list[str] = []
    indent = "  " * depth
    if element.tag == "dl":
        term = ""
        for child in element:
            if child.tag not in ("dt", "dd") or _is_noise(child):
                continue
            text = _inline_text(child)
            if child.tag == "dt":
                if term:
                    lines.append(f"{indent}- {term}")
                term = text
            elif text:
                lines.append(f"{indent}- {term}: {text}" if term else f"{indent}- {text}")
                term = ""
        if term:
            lines.append(f"{indent}- {term}")
        return lines

    ordered = element.tag == "ol"
    number = _int_attr(element, "start", 1)
    for item in element:
        if item.tag != "li" or _is_noise(item):
            continue
        texts: list[str] = []
        nested: list[str] = []
        _collect_item(item, texts, nested, depth)
        text = normalize_space("".join(texts))
        marker = f"{number}." if ordered else "-"
        number += 1
        if text or nested:
            lines.append(f"{indent}{marker} {text}".rstrip())
            lines.extend(nested)
    return lines


def _collect_item(element: Element, texts: list[str], nested: list[str], depth: int) -> None:
    if element.text:
        texts.append(element.text)
    for child in element:
        name = child.tag
        if name == "br":
            texts.append(" ")
        elif _is_noise(child):
            pass
        elif name in _LISTS:
            nested.extend(_list_lines(child, depth=depth + 1))
        else:
            block = name not in _INLINE_TAGS
            if block:
                texts.append(" ")
            _collect_item(child, texts, nested, depth)
            if block:
                texts.append(" ")
        if child.tail:
            texts.append(child.tail)


def _rows(table: Element) -> list[list[Element]]:
    """The table's own rows (not those of nested tables), as lists of cells."""
    rows: list[list[Element]] = []
    for part in table:
        if part.tag == "tr":
            trs: Any = [part]
        elif part.tag in ("thead", "tbody", "tfoot"):
            trs = [tr for tr in part if tr.tag == "tr"]
        else:
            continue
        for tr in trs:
            if not _is_noise(tr):
                rows.append([cell for cell in tr if cell.tag in ("td", "th")])
    return rows


def _is_layout_table(table: Element, rows: list[list[Element]]) -> bool:
    if table.get("role") in ("presentation", "none"):
        return True
    if max((len(row) for row in rows), default=0) <= 1:
        return True
    return next(table.iter(*_HEADINGS), None) is not None


def _grid(rows: list[list[Element]]) -> list[list[str]]:
    """Cell texts laid out on a grid: a colspan or rowspan cell fills every slot it spans."""
    grid: list[list[str]] = []
    pending: dict[int, tuple[int, str]] = {}  # column -> (rows still to fill, text)
    for row in rows:
        out: list[str] = []
        cells = iter(row)
        while True:
            column = len(out)
            if column in pending:
                left, text = pending.pop(column)
                if left > 1:
                    pending[column] = (left - 1, text)
                out.append(text)
                continue
            cell = next(cells, None)
            if cell is None:
                break
            text = _inline_text(cell)
            colspan = min(_int_attr(cell, "colspan", 1), _MAX_SPAN)
            rowspan = min(_int_attr(cell, "rowspan", 1), _MAX_SPAN)
            for offset in range(colspan):
                if rowspan > 1:
                    pending[column + offset] = (rowspan - 1, text)
                out.append(text)
        grid.append(out)
    return grid


def _int_attr(element: Element, name: str, default: int) -> int:
    value = element.get(name)
    if value is None:
        return default
    try:
        return max(1, int(value.strip()))
    except ValueError:
        return default
