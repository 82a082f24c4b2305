"""Which parser handles which file: the format table, media-type detection and dispatch.

:data:`FORMATS` is the one table of known formats. A format whose ``parser`` is ``None``
is recognised (by extension and by magic bytes) but cannot be parsed yet, and is refused
with :class:`UnsupportedFormatError`. To add a parser (PDF, DOCX, images), write a class
implementing :class:`ragline.core.protocols.Parser` and set it as that row's ``parser``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..core.errors import EmptyDocumentError, ParseError, UnsupportedFormatError
from ..core.protocols import Parser
from ..core.types import ParsedDocument
from .docx import DocxParser
from .files import Boundary, read_file
from .html import HtmlParser
from .markdown import MarkdownParser
from .ocr import ImageParser
from .pdf import PdfParser
from .text import TextParser

DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
OCTET_STREAM = "application/octet-stream"
HEAD_BYTES = 4096
"""How many leading bytes :func:`detect_media_type` looks at."""


@dataclass(frozen=True)
class Format:
    """A file format ragline knows: its media type, a readable name, its extensions and
    the class that parses it (``None``: recognised but not parsable in this version)."""

    media_type: str
    name: str
    extensions: tuple[str, ...]
    parser: type[Parser] | None
    feature: str = ""
    """What is missing when ``parser`` is None, e.g. "PDF parsing"."""


FORMATS: tuple[Format, ...] = (
    Format("text/markdown", "Markdown", (".md", ".markdown"), MarkdownParser),
    Format("text/plain", "plain text", (".txt", ".text"), TextParser),
    Format("text/html", "HTML", (".html", ".htm"), HtmlParser),
    # Recognised but not parsed yet: set ``parser`` when the parser lands.
    Format("application/pdf", "PDF document", (".pdf",), PdfParser),
    Format(DOCX, "DOCX document", (".docx",), DocxParser),
    Format("image/png", "PNG image", (".png",), ImageParser),
    Format("image/jpeg", "JPEG image", (".jpg", ".jpeg"), ImageParser),
    Format("image/gif", "GIF image", (".gif",), ImageParser),
    Format("image/webp", "WebP image", (".webp",), ImageParser),
    Format("image/tiff", "TIFF image", (".tif", ".tiff"), ImageParser),
    Format("image/bmp", "BMP image", (".bmp",), ImageParser),
)

PARSERS: dict[str, type[Parser] | None] = {f.media_type: f.parser for f in FORMATS}
"""media type -> parser class (``None``: recognised, not parsable in this version)."""

_BY_MEDIA_TYPE = {f.media_type: f for f in FORMATS}
_BY_EXTENSION = {ext: f for f in FORMATS for ext in f.extensions}
_ALIASES = {
    "text/x-markdown": "text/markdown",
    "text/md": "text/markdown",
    "markdown": "text/markdown",
    "application/xhtml+xml": "text/html",
    "html": "text/html",
    "text": "text/plain",
    "image/jpg": "image/jpeg",
}

# Binary formats that are not documents at all, recognised only to say so clearly.
_BINARY_NAMES = {
    "application/zip": "ZIP archive",
    "application/gzip": "gzip archive",
    "application/x-7z-compressed": "7-Zip archive",
    "application/vnd.rar": "RAR archive",
    "application/x-ole-storage": "legacy Microsoft Office (OLE) file",
    "application/x-executable": "ELF executable",
    "application/x-msdownload": "Windows executable",
    "application/x-mach-binary": "Mach-O executable",
    "application/vnd.sqlite3": "SQLite database",
    "video/mp4": "MP4/QuickTime video",
}


def supported_extensions() -> tuple[str, ...]:
    """File extensions that can be parsed in this version, e.g. ``(".md", ".markdown", ...)``."""
    return tuple(ext for f in FORMATS if f.parser is not None for ext in f.extensions)


def is_known_extension(path: Path) -> bool:
    """Whether ``path``'s extension names a format ragline knows (parsable or not yet)."""
    return Path(path).suffix.lower() in _BY_EXTENSION


def _supported_text() -> str:
    return "supported: " + " ".join(supported_extensions())


def sniff_magic(head: bytes) -> str | None:
    """The media type that a binary file's leading magic bytes identify, if any."""
    if head.startswith(b"%PDF-"):
        return "application/pdf"
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return DOCX if b"word/" in head else "application/zip"
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "image/webp"
    if head.startswith((b"II*\x00", b"MM\x00*")):
        return "image/tiff"
    if head.startswith(b"BM") and len(head) >= 14 and head[6:10] == b"\x00\x00\x00\x00":
        return "image/bmp"
    if head[4:8] == b"ftyp":
        return "video/mp4"
    if head.startswith(b"\x7fELF"):
        return "application/x-executable"
    if head.startswith(b"MZ") and b"\x00" in head[:64]:
        return "application/x-msdownload"
    if head.startswith((b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe", b"\xfe\xed\xfa\xcf")):
        return "application/x-mach-binary"
    if head.startswith(b"\x1f\x8b"):
        return "application/gzip"
    if head.startswith(b"7z\xbc\xaf\x27\x1c"):
        return "application/x-7z-compressed"
    if head.startswith(b"Rar!\x1a\x07"):
        return "application/vnd.rar"
    if head.startswith(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"):
        return "application/x-ole-storage"
    if head.startswith(b"SQLite format 3\x00"):
        return "application/vnd.sqlite3"
    return None


def detect_media_type(path: Path, head: bytes) -> str:
    """The media type of a file from its leading bytes and its extension.

    Magic bytes of a known binary format win over the extension (a PNG named ``.md`` is a
    PNG). Otherwise the extension decides; a file with an unknown extension that starts
    like an HTML page is HTML. Anything else is ``application/octet-stream``.
    """
    ext = Path(path).suffix.lower()
    magic = sniff_magic(head)
    if magic == "application/zip" and ext == ".docx":
        magic = DOCX
    if magic is not None:
        return magic
    if ext in _BY_EXTENSION:
        return _BY_EXTENSION[ext].media_type
    if _looks_like_html(head):
        return "text/html"
    return OCTET_STREAM


def _looks_like_html(head: bytes) -> bool:
    start = head[:1024]
    for bom, codec in (
        (b"\xef\xbb\xbf", "utf-8"),
        (b"\xff\xfe", "utf-16-le"),
        (b"\xfe\xff", "utf-16-be"),
    ):
        if start.startswith(bom):
            start = start[len(bom) :].decode(codec, "ignore").encode("ascii", "ignore")
            break
    lowered = start.lstrip().lower()
    return lowered.startswith((b"<!doctype html", b"<html")) or (
        lowered.startswith(b"<?xml") and b"<html" in lowered
    )


def normalize_media_type(media_type: str) -> str:
    """``"Text/HTML; charset=utf-8"`` -> ``"text/html"``; common aliases resolved."""
    base = media_type.split(";", 1)[0].strip().lower()
    return _ALIASES.get(base, base)


def parse_bytes(data: bytes, *, path: Path, media_type: str | None = None) -> ParsedDocument:
    """Parse the bytes of a file named ``path``.

    ``media_type`` overrides detection from the extension, but magic bytes of a binary
    format still win. Raises a :class:`ParseError` subclass saying what is wrong.
    """
    path = Path(path)
    if not data:
        raise EmptyDocumentError(str(path), "is empty (0 bytes), so there is nothing to parse")
    head = data[:HEAD_BYTES]
    ext = path.suffix.lower()
    magic = sniff_magic(head)
    if media_type is not None and magic is None:
        resolved = normalize_media_type(media_type)
    else:
        resolved = detect_media_type(path, head)

    fmt = _BY_MEDIA_TYPE.get(resolved)
    if fmt is None:
        named = f"'{ext}'" if ext else "with no extension"
        if resolved in _BINARY_NAMES:
            raise UnsupportedFormatError(
                str(path),
                f"is a {_BINARY_NAMES[resolved]}, not a document ragline can read; "
                f"{_supported_text()}",
            )
        what = f"media type {resolved!r}" if media_type is not None else f"file type {named}"
        raise UnsupportedFormatError(str(path), f"unsupported {what}; {_supported_text()}")
    if fmt.parser is None:
        mismatch = ""
        if magic is not None and ext and ext not in fmt.extensions:
            mismatch = f" (its content is a {fmt.name} although it is named {ext})"
        raise UnsupportedFormatError(
            str(path),
            f"is a {fmt.name}{mismatch}; {fmt.feature} is not available in this version; "
            f"{_supported_text()}",
        )

    parser = fmt.parser()
    try:
        return parser.parse(data, path=path)
    except ParseError:
        raise
    except RecursionError:
        raise ParseError(str(path), f"could not parse as {fmt.name}: nested too deeply") from None
    except Exception as exc:
        raise ParseError(str(path), f"could not parse as {fmt.name}: {exc}") from exc


def parse_file(
    path: Path, *, media_type: str | None = None, boundary: Boundary | None = None
) -> ParsedDocument:
    """Read ``path`` and parse it with the parser for its media type.

    The media type is detected from the extension and the leading bytes unless given.
    Raises a :class:`ParseError` subclass (file missing, empty, binary, undecodable, or of
    an unsupported type, a link, outside ``boundary``) whose ``reason`` says what is wrong
    and how to fix it.
    """
    path = Path(path)
    try:
        data = read_file(path, boundary)
    except FileNotFoundError:
        raise ParseError(str(path), "file not found; check the path") from None
    except IsADirectoryError:
        raise ParseError(str(path), "is a directory, not a file; pass a file path") from None
    except PermissionError:
        raise ParseError(str(path), "permission denied; make the file readable") from None
    except OSError as exc:
        raise ParseError(str(path), f"could not read the file: {exc.strerror or exc}") from None
    return parse_bytes(data, path=path, media_type=media_type)
