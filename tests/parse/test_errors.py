"""Bad input: every failure is a ParseError subclass whose reason says what is wrong."""

from __future__ import annotations

import random
import struct
import zlib
from pathlib import Path

import pytest

from ragline.core.errors import (
    EmptyDocumentError,
    EncodingError,
    ParseError,
    UnsupportedFormatError,
)
from ragline.parse import parse_bytes, parse_file, supported_extensions

SUPPORTED = " ".join(supported_extensions())
PDFS = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "documents" / "pdf"


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def png_bytes() -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    header = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    pixels = zlib.compress(b"\x00\x00")
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


@pytest.mark.parametrize("name", ["empty.md", "empty.txt", "empty.html"])
def test_zero_bytes(tmp_path: Path, name: str) -> None:
    with pytest.raises(EmptyDocumentError) as info:
        parse_file(write(tmp_path, name, b""))
    assert "empty (0 bytes)" in info.value.reason
    assert info.value.path.endswith(name)


@pytest.mark.parametrize("name", ["blank.md", "blank.txt", "blank.html"])
def test_whitespace_only(tmp_path: Path, name: str) -> None:
    with pytest.raises(EmptyDocumentError) as info:
        parse_file(write(tmp_path, name, b" \n\t\r\n   \n"))
    assert "whitespace" in info.value.reason


def test_whitespace_only_utf16(tmp_path: Path) -> None:
    with pytest.raises(EmptyDocumentError):
        parse_file(write(tmp_path, "blank.txt", "   \n \n".encode("utf-16")))


def test_html_without_text(tmp_path: Path) -> None:
    with pytest.raises(EmptyDocumentError) as info:
        parse_file(
            write(tmp_path, "x.html", b"<html><script>var a = 1;</script><nav>x</nav></html>")
        )
    assert "no text" in info.value.reason


def test_nul_bytes(tmp_path: Path) -> None:
    with pytest.raises(EncodingError) as info:
        parse_file(write(tmp_path, "nul.txt", b"hello\x00world, this is mostly text\n"))
    assert "NUL" in info.value.reason and "binary" in info.value.reason


def test_random_binary_named_txt(tmp_path: Path) -> None:
    data = random.Random(0).randbytes(4096)
    with pytest.raises(EncodingError) as info:
        parse_file(write(tmp_path, "random.txt", data))
    assert "binary" in info.value.reason


def test_control_heavy_binary_without_nul(tmp_path: Path) -> None:
    data = bytes(b for b in random.Random(1).randbytes(4096) if b)
    with pytest.raises(EncodingError) as info:
        parse_file(write(tmp_path, "noisy.txt", data))
    assert "control characters" in info.value.reason


def test_png_named_md(tmp_path: Path) -> None:
    """Magic bytes win over the extension: a blank PNG named .md goes to OCR, which finds no text."""
    import shutil

    if shutil.which("tesseract") is None:
        pytest.skip("tesseract is not installed")
    with pytest.raises(EmptyDocumentError) as info:
        parse_file(write(tmp_path, "diagram.md", png_bytes()))
    assert "OCR found no text" in info.value.reason


def test_executable_named_txt(tmp_path: Path) -> None:
    data = b"\x7fELF\x02\x01\x01" + bytes(64)
    with pytest.raises(UnsupportedFormatError) as info:
        parse_file(write(tmp_path, "tool.txt", data))
    assert "ELF executable" in info.value.reason and SUPPORTED in info.value.reason


def test_pdf_by_magic_and_by_extension(tmp_path: Path) -> None:
    pdf = b"%PDF-1.7\n1 0 obj\n<<>>\nendobj\ntrailer\n<<>>\n%%EOF\n"
    for name, data in [("paper.pdf", pdf), ("paper.txt", pdf), ("fake.pdf", b"not really a pdf")]:
        with pytest.raises(ParseError) as info:
            parse_file(write(tmp_path, name, data))
        assert "is not a readable PDF: damaged or truncated" in info.value.reason, name


def test_real_pdf_file() -> None:
    pdf = PDFS / "docling__multi_page.pdf"
    if not pdf.is_file():
        pytest.skip(f"shared sample documents not found at {PDFS}")
    doc = parse_file(pdf)
    assert doc.media_type == "application/pdf" and doc.metadata["pages"] == 5


def test_docx_by_extension_and_magic(tmp_path: Path) -> None:
    zip_head = b"PK\x03\x04" + bytes(26) + b"[Content_Types].xml" + b"word/document.xml"
    for name in ("report.docx", "report.txt"):
        with pytest.raises(ParseError) as info:
            parse_file(write(tmp_path, name, zip_head))
        assert "not a valid DOCX" in info.value.reason


def test_image_extension(tmp_path: Path) -> None:
    with pytest.raises(ParseError) as info:
        parse_file(write(tmp_path, "photo.jpg", b"\xff\xd8\xff\xe0" + bytes(20)))
    assert "not an image Pillow can read" in info.value.reason


def test_undecodable_bytes(tmp_path: Path) -> None:
    data = bytes(range(0x80, 0x100)) * 8  # no NULs or controls, but no text encoding fits
    with pytest.raises(EncodingError) as info:
        parse_file(write(tmp_path, "mystery.txt", data))
    assert "not valid UTF-8" in info.value.reason and "UTF-8" in info.value.reason


def test_broken_utf16_after_bom(tmp_path: Path) -> None:
    data = "\ufeffhello".encode("utf-16-le") + b"\x00\xd8"  # a lone high surrogate
    with pytest.raises(EncodingError) as info:
        parse_file(write(tmp_path, "broken.txt", data))
    assert "byte-order mark" in info.value.reason


def test_unknown_extension(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedFormatError) as info:
        parse_file(write(tmp_path, "data.xyz", b"some text"))
    assert "'.xyz'" in info.value.reason and SUPPORTED in info.value.reason


def test_no_extension(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedFormatError) as info:
        parse_file(write(tmp_path, "README", b"some text"))
    assert "no extension" in info.value.reason


def test_unknown_media_type_override() -> None:
    with pytest.raises(UnsupportedFormatError) as info:
        parse_bytes(b"a,b\n1,2\n", path=Path("x.csv"), media_type="text/csv")
    assert "'text/csv'" in info.value.reason and SUPPORTED in info.value.reason


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ParseError) as info:
        parse_file(tmp_path / "nope.md")
    assert type(info.value) is ParseError
    assert "not found" in info.value.reason
    assert str(info.value).startswith(str(tmp_path / "nope.md"))


def test_directory(tmp_path: Path) -> None:
    with pytest.raises(ParseError) as info:
        parse_file(tmp_path)
    assert "directory" in info.value.reason


def test_unexpected_library_failure_is_wrapped(monkeypatch: pytest.MonkeyPatch) -> None:
    from lxml import etree

    def boom(*_a, **_kw):
        raise RuntimeError("libxml2 exploded")

    monkeypatch.setattr(etree, "fromstring", boom)  # the library fails, not ragline
    with pytest.raises(ParseError) as info:
        parse_bytes(b"<p>x</p>", path=Path("x.html"))
    assert info.value.reason == "could not parse as HTML: libxml2 exploded"
