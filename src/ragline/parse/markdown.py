"""Markdown parser built on markdown-it-py's syntax tree (CommonMark plus GFM tables).

YAML front matter becomes metadata. Headings (ATX and setext) become heading blocks and
set the heading path of what follows; a ``#`` inside a code fence is code, not a heading.
Each list is one block of ``- item`` lines (nested items indented), tables stay Markdown
tables, fenced and indented code is kept verbatim, block quotes become paragraphs. Inline
markup is dropped: link text and image alt text stay, URLs go.
"""

from __future__ import annotations

import datetime as dt
import html
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import ParseError
from ..core.types import ParsedDocument
from .decode import decode_bytes
from .text import BlockCollector, markdown_table, normalize_space, require_text

if TYPE_CHECKING:
    from markdown_it.tree import SyntaxTreeNode

_FRONT_MATTER_OPEN = re.compile(r"\A---[ \t]*\n")
_FRONT_MATTER_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*$", re.MULTILINE)
_HTML_TAG_RE = re.compile(r"<!--.*?-->|<[^>]*>", re.DOTALL)

MAX_NESTING = 50
"""Deepest nesting of block quotes, lists and inline markup that is read. Deeper input is
refused: markdown-it silently drops what lies below its nesting limit."""
MAX_FRONT_MATTER_VALUES = 10_000
"""Most values (counting each use of a YAML alias) the front matter may expand to."""


class MarkdownParser:
    """Parses ``text/markdown`` into heading, paragraph, list, table and code blocks."""

    media_types: tuple[str, ...] = ("text/markdown",)

    def parse(self, data: bytes, *, path: Path) -> ParsedDocument:
        decoded = decode_bytes(data, path=path)
        require_text(decoded.text, path)
        front_matter, body = split_front_matter(decoded.text, path)
        try:
            root = _syntax_tree(body, path)
        except ParseError:
            raise
        except RecursionError:
            raise ParseError(
                str(path), "could not parse as Markdown: the text is nested too deeply"
            ) from None
        except Exception as exc:  # markdown-it should not fail; never leak a traceback
            raise ParseError(str(path), f"could not parse as Markdown: {exc}") from exc
        collector = BlockCollector()
        _walk(root, collector, in_quote=False)

        metadata: dict[str, Any] = {k: _json_safe(v) for k, v in front_matter.items()}
        fm_title = front_matter.get("title")
        if isinstance(fm_title, (str, int, float)) and normalize_space(str(fm_title)):
            title, source = normalize_space(str(fm_title)), "front_matter"
        elif (heading := collector.first_heading(1)) is not None:
            title, source = heading, "heading"
        else:
            title, source = path.stem, "filename"
        metadata["title_source"] = source
        metadata["encoding"] = decoded.encoding
        return collector.document(
            path=path, title=title, media_type="text/markdown", metadata=metadata
        )


def split_front_matter(text: str, path: Path) -> tuple[dict[str, Any], str]:
    """Split ``--- yaml ---`` front matter off the start of ``text``.

    Returns ``({}, text)`` when there is none. A block that is not a YAML mapping is not
    front matter (``---`` is also a thematic break); a YAML syntax error is a
    :class:`ParseError` naming the line.
    """
    opening = _FRONT_MATTER_OPEN.match(text)
    if not opening:
        return {}, text
    closing = _FRONT_MATTER_CLOSE.search(text, opening.end())
    if not closing:
        return {}, text
    import yaml

    raw = text[opening.end() : closing.start()]
    try:
        loaded = yaml.safe_load(raw)
    except RecursionError:
        raise ParseError(
            str(path), "invalid YAML front matter: nested too deeply; simplify it or remove it"
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f" at line {mark.line + 2}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ParseError(
            str(path),
            f"invalid YAML front matter{where}: {problem}; fix the YAML between the "
            "'---' lines or remove it",
        ) from None
    if loaded is None:
        loaded = {}
    if not isinstance(loaded, dict):
        return {}, text
    _check_expansion(loaded, path)
    body = text[closing.end() :].lstrip("\n")
    return {str(k): v for k, v in loaded.items()}, body


def _check_expansion(loaded: Any, path: Path) -> None:
    """Refuse front matter that YAML aliases expand into a huge (or endless) structure:
    ``a: &a [x, x]`` / ``b: &b [*a, *a]`` ... is small on disk and exponential in memory."""
    count = 0
    stack: list[tuple[Any, int]] = [(loaded, 0)]
    while stack:
        value, depth = stack.pop()
        count += 1
        if count > MAX_FRONT_MATTER_VALUES or depth > MAX_NESTING:
            raise ParseError(
                str(path),
                f"invalid YAML front matter: it expands to more than "
                f"{MAX_FRONT_MATTER_VALUES:,} values or {MAX_NESTING} levels (YAML aliases "
                "that repeat or contain each other); simplify it or remove it",
            )
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, (list, tuple, set)):
            stack.extend((v, depth + 1) for v in value)


def _syntax_tree(text: str, path: Path) -> SyntaxTreeNode:
    from markdown_it import MarkdownIt
    from markdown_it.tree import SyntaxTreeNode

    md = MarkdownIt("commonmark", {"maxNesting": MAX_NESTING}).enable(["table", "strikethrough"])
    tokens = md.parse(text)
    deepest = 0
    for token in tokens:
        deepest = max(deepest, token.level)
        inline = 0
        for child in token.children or ():
            inline += child.nesting
            deepest = max(deepest, inline)
    # markdown-it stops (silently) at MAX_NESTING; a token one level short of it means
    # that content below may have been dropped.
    if deepest >= MAX_NESTING - 1:
        raise ParseError(
            str(path),
            f"could not parse as Markdown: block quotes, lists or emphasis are nested "
            f"{MAX_NESTING} or more levels deep; flatten the nesting",
        )
    return SyntaxTreeNode(tokens)


def _walk(node: SyntaxTreeNode, out: BlockCollector, *, in_quote: bool) -> None:
    for child in node.children:
        kind = child.type
        if kind == "heading":
            text = _inline_of(child)
            if in_quote:
                out.add("paragraph", text)
            else:
                out.heading(text, int(child.tag[1]))
        elif kind == "paragraph":
            out.add("paragraph", _inline_of(child))
        elif kind in ("bullet_list", "ordered_list"):
            out.add("list", "\n".join(_list_lines(child, depth=0)))
        elif kind in ("fence", "code_block"):
            out.add("code", child.content)
        elif kind == "table":
            out.add("table", markdown_table(_table_rows(child)))
        elif kind == "blockquote":
            _walk(child, out, in_quote=True)
        elif kind == "html_block":
            out.add("paragraph", _strip_html(child.content))
        elif kind == "hr":
            continue
        else:
            _walk(child, out, in_quote=in_quote)


def _list_lines(node: SyntaxTreeNode, *, depth: int) -> list[str]:
    lines: list[str] = []
    ordered = node.type == "ordered_list"
    start = int(node.attrs.get("start", 1) or 1) if ordered else 1
    indent = "  " * depth
    for number, item in enumerate(node.children, start=start):
        marker = f"{number}." if ordered else "-"
        texts: list[str] = []
        nested: list[str] = []
        for part in item.children:
            if part.type in ("bullet_list", "ordered_list"):
                nested.extend(_list_lines(part, depth=depth + 1))
            elif part.type in ("fence", "code_block"):
                code = part.content.rstrip("\n").split("\n")
                nested.extend(f"{indent}    {line}".rstrip() for line in code)
            elif part.type == "table":
                nested.extend(
                    f"{indent}  {row}" for row in markdown_table(_table_rows(part)).split("\n")
                )
            elif part.type == "html_block":
                texts.append(_strip_html(part.content))
            else:
                texts.append(_inline_of(part) if part.children else part.content)
        text = normalize_space(" ".join(texts))
        if text or nested:
            lines.append(f"{indent}{marker} {text}".rstrip())
            lines.extend(nested)
    return lines


def _table_rows(node: SyntaxTreeNode) -> list[list[str]]:
    rows: list[list[str]] = []
    for section in node.children:  # thead, tbody
        for tr in section.children:
            rows.append([_inline_of(cell) for cell in tr.children])
    return rows


def _inline_of(node: SyntaxTreeNode) -> str:
    """Readable text of a block node's inline content."""
    return normalize_space("".join(_inline_text(child) for child in node.children))


def _inline_text(node: SyntaxTreeNode) -> str:
    kind = node.type
    if kind in ("text", "code_inline"):
        return node.content
    if kind in ("softbreak", "hardbreak"):
        return " "
    if kind == "html_inline":
        return " " if node.content.lower().startswith("<br") else ""
    if kind == "inline" or node.children:
        # Links keep their text; images keep their alt text (children); URLs are dropped.
        return "".join(_inline_text(child) for child in node.children)
    return node.content


def _strip_html(raw: str) -> str:
    """The visible text of an HTML block: elements hidden with ``hidden``,
    ``aria-hidden``, ``display:none`` or ``visibility:hidden``, scripts, styles and
    comments are dropped (hidden text is a classic carrier of prompt injections)."""
    try:
        from lxml import html as lxml_html

        from .html import _HIDDEN_STYLE_RE

        root = lxml_html.fragment_fromstring(raw, create_parent="div")
    except Exception:  # not parseable as HTML: fall back to removing tags
        return html.unescape(_HTML_TAG_RE.sub(" ", raw))
    doomed = []
    for el in root.iterdescendants():
        if not isinstance(el.tag, str) or el.tag in ("script", "style", "template"):
            doomed.append(el)
            continue
        a = el.attrib
        if (
            "hidden" in a
            or a.get("aria-hidden") == "true"
            or _HIDDEN_STYLE_RE.search(a.get("style", ""))
        ):
            doomed.append(el)
    for el in doomed:
        if el.getparent() is not None and all(x not in doomed for x in el.iterancestors()):
            el.drop_tree()
    return " ".join(root.text_content().split())


def _json_safe(value: Any) -> Any:
    """Front-matter values as JSON-compatible data (YAML dates become ISO strings)."""
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_json_safe(v) for v in value]
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)
