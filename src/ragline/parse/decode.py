"""Turn the bytes of a text file into a clean ``str``.

Order of evidence, strongest first: a byte-order mark, a charset the document declares
(HTML ``<meta>`` or an XML declaration), strict UTF-8, then statistical detection with
charset-normalizer. Binary content is refused with :class:`EncodingError` instead of being
decoded into garbage. The result has ``\\n`` newlines and no control characters except
``\\n`` and ``\\t``.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..core.errors import EncodingError

_BOMS: tuple[tuple[bytes, str], ...] = (
    # UTF-32 before UTF-16: the UTF-32-LE mark starts with the UTF-16-LE one.
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

_HTML_META_CHARSET = re.compile(
    rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._:\-]+)""", re.IGNORECASE
)
_XML_DECL_ENCODING = re.compile(
    rb"""^\s*<\?xml[^>]+encoding\s*=\s*["']([A-Za-z0-9._\-]+)["']""", re.IGNORECASE
)

# Control characters that are never text: C0 except \t \n \r, DEL, C1.
_CONTROL_RE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufeff]")
_CONTROL_BYTES = frozenset(range(0x20)) - {0x09, 0x0A, 0x0C, 0x0D} | {0x7F}
_MAX_CONTROL_RATIO = 0.05
_MIN_CONTROLS = 8  # a few stray control characters in a short note are not "binary"
_SNIFF_BYTES = 4096

# WHATWG: labels a browser treats as windows-1252, and UTF-16 labels on a byte stream
# that has no UTF-16 shape (which browsers read as UTF-8).
_ALIASES = {"iso-8859-1": "cp1252", "latin1": "cp1252", "latin-1": "cp1252", "ascii": "cp1252"}


DecodedSource = Literal["bom", "declared", "utf-8", "detected"]


@dataclass(frozen=True)
class DecodedText:
    """Decoded text and the encoding (a Python codec name) it was read with."""

    text: str
    encoding: str
    source: DecodedSource


def decode_bytes(
    data: bytes, *, path: Path | str, declared: Literal["html", "xml", "none"] = "none"
) -> DecodedText:
    """Decode ``data`` to clean text, or raise :class:`EncodingError` saying why not.

    ``declared`` says which in-document charset declaration to honour: an HTML
    ``<meta charset>`` / ``http-equiv`` (``"html"``), an XML declaration (``"xml"``), or none.
    """
    decoded = _decode(data, path=str(path), declared=declared)
    return DecodedText(clean_text(decoded[0]), decoded[1], decoded[2])


def clean_text(text: str) -> str:
    """Normalize newlines to ``\\n``; drop NUL and other control characters (keep ``\\n\\t``).

    A form feed (page break) becomes a blank line, so pages stay separate paragraphs.
    """
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = text.replace("\f", "\n\n").replace("\v", "\n")
    text = text.replace("\u2028", "\n").replace("\u2029", "\n\n")
    return _CONTROL_RE.sub("", text)


def _decode(data: bytes, *, path: str, declared: str) -> tuple[str, str, DecodedSource]:
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return _strict(data[len(bom) :], encoding, path, "byte-order mark"), encoding, "bom"

    utf16 = _sniff_utf16(data)
    if utf16:
        return _strict(data, utf16, path, "UTF-16 byte pattern"), utf16, "detected"

    _reject_binary(data, path)

    if declared != "none":
        declared_as = _declared_encoding(data, declared)
        if declared_as:
            try:
                return data.decode(declared_as), declared_as, "declared"
            except (UnicodeDecodeError, LookupError):
                pass  # A wrong declaration is common; fall through to the evidence.

    try:
        return data.decode("utf-8"), "utf-8", "utf-8"
    except UnicodeDecodeError:
        pass

    text, encoding = _detect(data, path)
    _reject_control_heavy(text, path, encoding)
    return text, encoding, "detected"


def _strict(data: bytes, encoding: str, path: str, evidence: str) -> str:
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise EncodingError(
            path,
            f"the {evidence} says {encoding}, but byte {exc.start} is not valid {encoding}; "
            "re-save the file in UTF-8",
        ) from None


def _sniff_utf16(data: bytes) -> str | None:
    """UTF-16 without a BOM: ASCII-range text has a NUL in every other byte."""
    head = data[:_SNIFF_BYTES]
    if len(head) < 16 or len(head) % 2:
        return None
    even, odd = head[0::2], head[1::2]
    half = len(head) // 2
    if odd.count(0) > 0.7 * half and even.count(0) < 0.05 * half:
        return "utf-16-le"
    if even.count(0) > 0.7 * half and odd.count(0) < 0.05 * half:
        return "utf-16-be"
    return None


def _reject_binary(data: bytes, path: str) -> None:
    nul = data.find(b"\x00")
    if nul >= 0:
        raise EncodingError(
            path,
            f"contains NUL bytes (first at byte {nul}), so it is binary, not text; "
            "check that this is the file you meant, or convert it to UTF-8 text",
        )
    head = data[:_SNIFF_BYTES]
    controls = sum(1 for b in head if b in _CONTROL_BYTES)
    if controls > _MIN_CONTROLS and controls / len(head) > _MAX_CONTROL_RATIO:
        raise EncodingError(
            path,
            f"{controls} of the first {len(head)} bytes are control characters, so it is "
            "binary, not text; check that this is the file you meant",
        )


def _reject_control_heavy(text: str, path: str, encoding: str) -> None:
    sample = text[:_SNIFF_BYTES]
    controls = len(_CONTROL_RE.findall(sample))
    if controls > _MIN_CONTROLS and controls / len(sample) > _MAX_CONTROL_RATIO:
        raise EncodingError(
            path,
            f"read as {encoding} it is {controls / len(sample):.0%} control characters, so "
            "its encoding could not be detected; re-save the file in UTF-8",
        )


def _declared_encoding(data: bytes, kind: str) -> str | None:
    head = data[:_SNIFF_BYTES]
    pattern = _HTML_META_CHARSET if kind == "html" else _XML_DECL_ENCODING
    match = pattern.search(head) or (_XML_DECL_ENCODING.search(head) if kind == "html" else None)
    if not match:
        return None
    label = match.group(1).decode("ascii", "ignore").strip().lower()
    label = _ALIASES.get(label, label)
    try:
        name = codecs.lookup(label).name
    except LookupError:
        return None
    if name.startswith(("utf-16", "utf-32")):
        # The bytes have no UTF-16 shape (checked above), so the label is wrong.
        return None
    return name


def _detect(data: bytes, path: str) -> tuple[str, str]:
    from charset_normalizer import from_bytes

    matches = list(from_bytes(data))
    if not matches:
        raise EncodingError(
            path,
            "is not valid UTF-8 and its encoding could not be detected (the bytes do not "
            "look like text in any known encoding); re-save the file in UTF-8",
        )
    best = matches[0]
    # Ties between Western single-byte code pages are common on short samples; prefer
    # windows-1252, the most common one and the WHATWG default for legacy web content.
    for match in matches:
        if match.chaos <= best.chaos + 0.01 and "cp1252" in match.could_be_from_charset:
            try:
                return data.decode("cp1252"), "cp1252"
            except UnicodeDecodeError:
                break
    return str(best), best.encoding
