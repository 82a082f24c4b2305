"""Decoding evidence order and media-type detection."""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest

from ragline.core.errors import EncodingError
from ragline.core.protocols import Parser
from ragline.parse import (
    PARSERS,
    HtmlParser,
    MarkdownParser,
    TextParser,
    detect_media_type,
    parse_bytes,
    supported_extensions,
)
from ragline.parse.decode import clean_text, decode_bytes
from ragline.parse.pdf import PdfParser

TEXT = "Grüße, café — 日本語 ✓\nline two"


@pytest.mark.parametrize(
    ("encoded", "encoding"),
    [
        (codecs.BOM_UTF8 + TEXT.encode("utf-8"), "utf-8"),
        (codecs.BOM_UTF16_LE + TEXT.encode("utf-16-le"), "utf-16-le"),
        (codecs.BOM_UTF16_BE + TEXT.encode("utf-16-be"), "utf-16-be"),
        (codecs.BOM_UTF32_LE + TEXT.encode("utf-32-le"), "utf-32-le"),
        (codecs.BOM_UTF32_BE + TEXT.encode("utf-32-be"), "utf-32-be"),
    ],
)
def test_boms(encoded: bytes, encoding: str) -> None:
    decoded = decode_bytes(encoded, path="x.txt")
    assert decoded.text == TEXT
    assert decoded.encoding == encoding and decoded.source == "bom"


def test_utf16_without_bom_is_sniffed_not_rejected_for_nuls() -> None:
    decoded = decode_bytes("Plain ASCII-range text, long enough.".encode("utf-16-le"), path="x")
    assert decoded.text == "Plain ASCII-range text, long enough."
    assert decoded.encoding == "utf-16-le"


def test_declared_charset_beats_detection_but_not_a_bom() -> None:
    body = '<meta charset="iso-8859-15"><p>prix: 5 €</p>'
    decoded = decode_bytes(body.encode("iso-8859-15"), path="x.html", declared="html")
    assert decoded.source == "declared" and "5 €" in decoded.text
    # A declaration that contradicts the BOM loses.
    decoded = decode_bytes(codecs.BOM_UTF8 + body.encode("utf-8"), path="x.html", declared="html")
    assert decoded.encoding == "utf-8" and "5 €" in decoded.text


def test_wrong_declaration_falls_back_to_utf8() -> None:
    body = '<meta charset="ascii"><p>naïve</p>'.encode()
    decoded = decode_bytes(body, path="x.html", declared="html")
    # "ascii" maps to windows-1252 (as in browsers), which would decode UTF-8 into mojibake;
    # it does decode, so the declaration is used. This documents the trade-off.
    assert decoded.source == "declared"
    body = '<meta charset="utf-16"><p>naïve</p>'.encode()
    assert decode_bytes(body, path="x.html", declared="html").text.endswith("naïve</p>")


def test_xml_declaration() -> None:
    body = '<?xml version="1.0" encoding="koi8-r"?><r>Привет</r>'.encode("koi8-r")
    assert "Привет" in decode_bytes(body, path="x.xml", declared="xml").text


def test_clean_text() -> None:
    assert clean_text("a\r\nb\rc\x00d\x07e\tf\x0cg\u2028h\x85i") == "a\nb\ncde\tf\n\ng\nhi"


def test_binary_rejected_before_decoding() -> None:
    with pytest.raises(EncodingError):
        decode_bytes(b"abc\x00def", path="x")


def test_supported_extensions() -> None:
    exts = set(supported_extensions())
    assert {
        ".md",
        ".markdown",
        ".txt",
        ".text",
        ".html",
        ".htm",
        ".docx",
        ".png",
        ".jpg",
        ".tiff",
    } <= exts


@pytest.mark.parametrize(
    ("name", "head", "expected"),
    [
        ("a.md", b"# hi", "text/markdown"),
        ("a.MARKDOWN", b"# hi", "text/markdown"),
        ("a.txt", b"hi", "text/plain"),
        ("a.htm", b"<p>hi", "text/html"),
        ("a.pdf", b"whatever", "application/pdf"),
        ("a.md", b"%PDF-1.4\n", "application/pdf"),
        ("a.md", b"\x89PNG\r\n\x1a\n....", "image/png"),
        ("a.txt", b"GIF89a....", "image/gif"),
        ("a.docx", b"PK\x03\x04rest", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
        ("a.zip", b"PK\x03\x04rest", "application/zip"),
        ("page", b"  <!DOCTYPE html><html>", "text/html"),
        ("page.aspx", b"<html><body>", "text/html"),
        ("a.xyz", b"hello", "application/octet-stream"),
        ("a.txt", b"BMW is a car maker", "text/plain"),
    ],
)  # fmt: skip
def test_detect_media_type(name: str, head: bytes, expected: str) -> None:
    assert detect_media_type(Path(name), head) == expected


def test_media_type_override_and_parameters() -> None:
    data = b"# Not a heading in plain text\n\nBody."
    doc = parse_bytes(data, path=Path("x.md"), media_type="text/plain; charset=utf-8")
    assert doc.media_type == "text/plain" and doc.blocks[0].kind == "paragraph"
    doc = parse_bytes(b"<h1>T</h1><p>b</p>", path=Path("x.txt"), media_type="text/html")
    assert doc.title == "T" and doc.media_type == "text/html"


def test_parsers_implement_the_protocol() -> None:
    assert PARSERS["text/markdown"] is MarkdownParser
    assert PARSERS["text/plain"] is TextParser
    assert PARSERS["text/html"] is HtmlParser
    assert PARSERS["application/pdf"] is PdfParser
    for cls in (MarkdownParser, TextParser, HtmlParser, PdfParser):
        assert isinstance(cls(), Parser)
