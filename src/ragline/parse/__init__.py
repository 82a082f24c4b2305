"""Parsing stage: turn the bytes of a file into a :class:`~ragline.core.types.ParsedDocument`.

Markdown, plain text and HTML are parsed into heading, paragraph, list, table, code and
caption blocks, each with the heading path above it. PDF, DOCX and images are recognised
(extension and magic bytes) and refused with :class:`~ragline.core.errors.UnsupportedFormatError`
until their parsers land; see :data:`ragline.parse.registry.FORMATS`.
"""

from __future__ import annotations

from .html import HtmlParser
from .markdown import MarkdownParser
from .registry import (
    FORMATS,
    PARSERS,
    detect_media_type,
    is_known_extension,
    parse_bytes,
    parse_file,
    supported_extensions,
)
from .text import TextParser

__all__ = [
    "FORMATS",
    "PARSERS",
    "HtmlParser",
    "MarkdownParser",
    "TextParser",
    "detect_media_type",
    "is_known_extension",
    "parse_bytes",
    "parse_file",
    "supported_extensions",
]
