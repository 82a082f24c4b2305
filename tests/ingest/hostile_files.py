"""Hostile files, generated into a folder at test time (no binary fixtures in the repo).

:func:`generate` writes every file of :data:`CASES` and returns what ragline must do with
each: most must fail with a specific :class:`~ragline.core.errors.ParseError` subclass
and reason; a few are odd but legitimate and must be indexed within the parse limits.
External-entity files point at a canary file outside the folder; its token must never
show up anywhere. Big files (bombs, 10 MB lines) are built from repeated blocks, so
generating the whole set takes a few seconds.
"""

from __future__ import annotations

import gzip
import io
import os
import random
import struct
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

MB = 1024 * 1024

W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_CONTENT_TYPES = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/>'
    '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-'
    'officedocument.wordprocessingml.document.main+xml"/>'
    "</Types>"
)
_OFFICE_DOCUMENT = (
    "http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument"
)
_CORE = "http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties"


def _package_rels(main: str = "word/document.xml", core: bool = False) -> str:
    rels = f'<Relationship Id="rId1" Type="{_OFFICE_DOCUMENT}" Target="{main}"/>'
    if core:
        rels += f'<Relationship Id="rId2" Type="{_CORE}" Target="docProps/core.xml"/>'
    return (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        f"{rels}</Relationships>"
    )


def document_xml(*paragraphs: str, prolog: str = "") -> str:
    """A WordprocessingML body with one paragraph per string (inserted verbatim)."""
    body = "".join(f"<w:p><w:r><w:t>{p}</w:t></w:r></w:p>" for p in paragraphs)
    return (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>{prolog}'
        f'<w:document xmlns:w="{W_NS}"><w:body>{body}</w:body></w:document>'
    )


def docx_bytes(document: str | bytes, *, core: str | None = None, main: str | None = None) -> bytes:
    """A minimal DOCX package around ``document`` (word/document.xml)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("[Content_Types].xml", _CONTENT_TYPES)
        zf.writestr("_rels/.rels", _package_rels(main or "word/document.xml", core is not None))
        zf.writestr("word/document.xml", document)
        if core is not None:
            zf.writestr("docProps/core.xml", core)
    return buf.getvalue()


def _pdf(objects: list[bytes], *, trailer_extra: bytes = b"") -> bytes:
    """A PDF file from numbered object bodies (1-based), with a correct xref table."""
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R %s>>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        trailer_extra,
        xref,
    )
    return bytes(out)


def pdf_bytes(text: str) -> bytes:
    """A one-page PDF whose text layer is ``text`` (Helvetica, one line)."""
    stream = b"BT /F1 12 Tf 72 720 Td (%s) Tj ET" % text.encode("latin-1")
    return _pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
            b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        ]
    )


def encrypted_pdf_bytes(text: str) -> bytes | None:
    """``pdf_bytes(text)`` encrypted with a user password (None without pypdf)."""
    try:
        from pypdf import PdfReader, PdfWriter
    except ImportError:  # pragma: no cover - pypdf is a dev dependency
        return None
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf_bytes(text))))
    writer.encrypt(user_password="hostile-user", owner_password="hostile-owner", algorithm="AES-128")
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def png_bytes(width: int, height: int) -> bytes:
    """A white 1-bit grayscale PNG of ``width`` x ``height``; pixel data compressed in
    blocks, so a 30000 x 30000 image (900 megapixels) is about 100 KB on disk."""
    row = b"\x00" + b"\xff" * ((width + 7) // 8)
    comp = zlib.compressobj(9)
    rows_per_block = max(1, MB // len(row))
    block = row * rows_per_block
    parts = []
    left = height
    while left > 0:
        n = min(left, rows_per_block)
        parts.append(comp.compress(block if n == rows_per_block else row * n))
        left -= n
    parts.append(comp.flush())
    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"IDAT", b"".join(parts))
        + _png_chunk(b"IEND", b"")
    )


def zip_bomb_docx(uncompressed_mb: int) -> bytes:
    """A DOCX whose word/document.xml inflates to ``uncompressed_mb`` MB of one repeated
    byte (about 1000x compression), written in blocks so it never sits in memory."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        zf.writestr("[Content_Types].xml", _CONTENT_TYPES)
        zf.writestr("_rels/.rels", _package_rels())
        with zf.open("word/document.xml", "w", force_zip64=True) as part:
            head = document_xml("bomb").split("<w:body>")[0].encode() + b"<w:body><w:p><w:r><w:t>"
            part.write(head)
            block = b"A" * MB
            for _ in range(uncompressed_mb):
                part.write(block)
            part.write(b"</w:t></w:r></w:p></w:body></w:document>")
    return buf.getvalue()


def lying_sizes_docx() -> bytes:
    """A DOCX whose central directory declares word/document.xml 1,000x smaller than it
    inflates to (a bomb that slips past size checks that trust the header)."""
    real = document_xml("A" * (8 * MB))
    data = bytearray(docx_bytes(real))
    declared = 8 * 1024
    # Patch the uncompressed size in the central directory entry of word/document.xml.
    name = b"word/document.xml"
    central = data.rfind(b"PK\x01\x02", 0, data.rfind(name))
    assert data[central + 46 : central + 46 + len(name)] == name
    struct.pack_into("<I", data, central + 24, declared)
    (local,) = struct.unpack_from("<I", data, central + 42)
    struct.pack_into("<I", data, local + 22, declared)
    return bytes(data)


def _words(n_bytes: int, seed: int) -> bytes:
    """About ``n_bytes`` of pseudo-random lowercase words separated by single spaces."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = ["".join(rng.choices(letters, k=rng.randint(3, 9))) for _ in range(5000)]
    sample = " ".join(rng.choices(vocab, k=200_000)).encode()
    return (sample + b" ") * (n_bytes // (len(sample) + 1)) + sample[: n_bytes % (len(sample) + 1)]


def _billion_laughs(root_open: str, root_close: str, use: str) -> str:
    defs = ['<!ENTITY lol "lol">'] + [
        f'<!ENTITY lol{i} "{("&lol%s;" % (i - 1 if i > 1 else "")) * 10}">' for i in range(1, 10)
    ]
    return f"<!DOCTYPE lolz [{''.join(defs)}]>{root_open}{use}{root_close}"


def _xxe_doctype(root: str, canary_uri: str) -> str:
    return f'<!DOCTYPE {root} [<!ENTITY xxe SYSTEM "{canary_uri}">]>'


# --------------------------------------------------------------------------- the cases


@dataclass(frozen=True)
class Hostile:
    """One generated file and what ragline must do with it."""

    name: str
    what: str
    outcome: Literal["failed", "added"]
    errors: tuple[str, ...] = ()
    """Accepted exception class names when it must fail."""
    reason: str = ""
    """A regular expression the failure reason must match (searched, case-insensitive)."""
    cli: bool = True
    """Also run through ``ragline parse`` (big legitimate files are skipped there)."""


Writer = Callable[[Path, "Context"], bytes | None]


@dataclass(frozen=True)
class Context:
    canary: Path
    token: str

    @property
    def canary_uri(self) -> str:
        return self.canary.as_uri()


E_EMPTY = ("EmptyDocumentError",)
E_ENC = ("EncodingError",)
E_UNSUPPORTED = ("UnsupportedFormatError",)
E_PARSE = ("ParseError",)
# PDF cases: refused as unsupported until the PDF parser is registered, then a specific
# ParseError from it. Both reasons are accepted.
PDF_PENDING = r"PDF parsing is not available"
E_PDF = ("UnsupportedFormatError", "ParseError", "EmptyDocumentError")


def _cases() -> list[tuple[Hostile, Writer]]:
    c: list[tuple[Hostile, Writer]] = []

    def case(hostile: Hostile) -> Callable[[Writer], Writer]:
        def deco(fn: Writer) -> Writer:
            c.append((hostile, fn))
            return fn

        return deco

    empty = r"empty \(0 bytes\)"
    for ext in ("md", "txt", "html", "docx", "pdf", "png"):
        case(Hostile(f"empty.{ext}", "0 bytes", "failed", E_EMPTY, empty))(lambda p, x: b"")

    case(Hostile("whitespace.md", "only whitespace", "failed", E_EMPTY, "only whitespace"))(
        lambda p, x: b" \n\t\r\n  \n" * 1000
    )
    case(Hostile("bom_only.txt", "a UTF-8 BOM and nothing else", "failed", E_EMPTY, "whitespace"))(
        lambda p, x: b"\xef\xbb\xbf"
    )
    case(
        Hostile(
            "no_text.html", "markup without text", "failed", E_EMPTY, "no text after parsing"
        )
    )(lambda p, x: b"<html><body>" + b"<div><span></span></div>" * 1000 + b"</body></html>")

    # ---- binary and encodings
    case(Hostile("nul_bytes.txt", "text with NUL bytes", "failed", E_ENC, "NUL bytes"))(
        lambda p, x: b"hello world\x00" * 1000
    )
    case(Hostile("random.txt", "random bytes named .txt", "failed", E_ENC, "binary|NUL"))(
        lambda p, x: random.Random(1).randbytes(256 * 1024)
    )
    case(
        Hostile(
            "controls.txt", "control characters, no NUL", "failed", E_ENC, "control characters"
        )
    )(lambda p, x: bytes(range(1, 9)) * 2000)
    case(
        Hostile(
            "utf16_odd.txt",
            "UTF-16 BOM and an odd byte count",
            "failed",
            E_ENC,
            "byte-order mark says utf-16",
        )
    )(lambda p, x: "\ufeffsome utf-16 text\n".encode("utf-16-le") * 100 + b"\x41")
    case(
        Hostile(
            "utf16_nobom_odd.txt",
            "UTF-16 without BOM, odd byte count",
            "failed",
            E_ENC,
            "utf-16|NUL bytes",
        )
    )(lambda p, x: "plain words in utf sixteen\n".encode("utf-16-le") * 400 + b"\x41")
    case(
        Hostile(
            "utf32_nobom.md", "UTF-32 without BOM named .md", "failed", E_ENC, "NUL bytes"
        )
    )(lambda p, x: "# Title\n\nSome text in UTF-32.\n".encode("utf-32-le") * 50)
    case(
        Hostile(
            "utf32_bad.md",
            "UTF-32 BOM with code points above U+10FFFF",
            "failed",
            E_ENC,
            "byte-order mark says utf-32",
        )
    )(lambda p, x: b"\xff\xfe\x00\x00" + struct.pack("<I", 0x110000) * 100)
    case(Hostile("latin1.md", "invalid UTF-8 (Latin-1 prose)", "added"))(
        lambda p, x: "# Caf\xe9 cr\xe8me\n\nA na\xefve fa\xe7ade r\xe9sum\xe9 ".encode("latin-1")
        * 200
    )

    # ---- wrong extension
    case(
        Hostile("image.md", "a blank PNG named .md", "failed", E_EMPTY, "OCR found no text")
    )(lambda p, x: png_bytes(64, 32))
    case(Hostile("elf.txt", "an ELF executable named .txt", "failed", E_UNSUPPORTED, "ELF"))(
        lambda p, x: b"\x7fELF\x02\x01\x01" + b"\x00" * 9 + random.Random(2).randbytes(8192)
    )
    case(Hostile("gzip.md", "a gzip file named .md", "failed", E_UNSUPPORTED, "gzip"))(
        lambda p, x: gzip.compress(b"compressed words " * 1000)
    )
    case(Hostile("pdf.docx", "a PDF named .docx", "failed", E_PDF, PDF_PENDING + "|named"))(
        lambda p, x: pdf_bytes("a pdf in disguise")
    )
    case(
        Hostile(
            "plain_zip.docx",
            "a ZIP without a Word document named .docx",
            "failed",
            E_PARSE,
            "no main document part",
        )
    )(lambda p, x: _plain_zip())
    case(Hostile("docx_named.txt", "a valid DOCX named .txt", "added"))(
        lambda p, x: docx_bytes(document_xml("Disguised docx about heliotrope lanterns."))
    )

    # ---- ZIP and DOCX
    case(Hostile("zip_bomb.docx", "200 MB document.xml, ~1000x", "failed", E_PARSE, "ZIP bomb"))(
        lambda p, x: zip_bomb_docx(200)
    )
    case(
        Hostile(
            "lying_sizes.docx",
            "ZIP whose directory understates a part's size",
            "failed",
            E_PARSE,
            r"could not read part|Bad CRC|larger than declared|not well-formed",
        )
    )(lambda p, x: lying_sizes_docx())
    case(
        Hostile(
            "billion_laughs.docx",
            "entity expansion in document.xml",
            "failed",
            E_PARSE,
            r"DTD.*entity",
        )
    )(
        lambda p, x: docx_bytes(
            '<?xml version="1.0"?>'
            + _billion_laughs(f'<w:document xmlns:w="{W_NS}"><w:body><w:p><w:r><w:t>', "", "&lol9;")
            + "</w:t></w:r></w:p></w:body></w:document>"
        )
    )
    case(Hostile("xxe.docx", "external entity to the canary", "failed", E_PARSE, r"DTD.*XXE"))(
        lambda p, x: docx_bytes(document_xml("&xxe;", prolog=_xxe_doctype("w:document", x.canary_uri)))
    )
    case(
        Hostile(
            "xxe_padded.docx",
            "XXE after 70 KB of comment (past the prolog check)",
            "failed",
            E_PARSE,
            r"DTD.*XXE",
        )
    )(
        lambda p, x: docx_bytes(
            document_xml(
                "&xxe;",
                prolog="<!--" + " " * 70_000 + "-->" + _xxe_doctype("w:document", x.canary_uri),
            )
        )
    )
    case(
        Hostile(
            "xxe_core.docx",
            "XXE in the core properties (title)",
            "failed",
            E_PARSE,
            r"docProps/core.xml.*DTD",
        )
    )(
        lambda p, x: docx_bytes(
            document_xml("An innocent body."),
            core='<?xml version="1.0"?>'
            + _xxe_doctype("cp:coreProperties", x.canary_uri)
            + '<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/'
            'metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/">'
            "<dc:title>&xxe;</dc:title></cp:coreProperties>",
        )
    )
    case(
        Hostile(
            "xxe_utf16.docx", "XXE in a UTF-16 document.xml", "failed", E_PARSE, r"DTD.*XXE"
        )
    )(
        lambda p, x: docx_bytes(
            b"\xff\xfe"
            + document_xml("&xxe;", prolog=_xxe_doctype("w:document", x.canary_uri))
            .replace('encoding="UTF-8"', 'encoding="UTF-16"')
            .encode("utf-16-le")
        )
    )
    case(
        Hostile(
            "rel_traversal.docx",
            "main-part relationship pointing at the canary path",
            "failed",
            E_PARSE,
            "no main document part",
        )
    )(lambda p, x: docx_bytes(document_xml("x"), main="../../../../.." + str(x.canary)))
    case(
        Hostile(
            "xinclude.docx",
            "XInclude of the canary (must not be processed)",
            "added",
        )
    )(
        lambda p, x: docx_bytes(
            document_xml(
                "Visible marigold text.",
                f'<xi:include xmlns:xi="http://www.w3.org/2001/XInclude" href="{x.canary_uri}" '
                'parse="text"/>',
            )
        )
    )
    case(Hostile("not_xml.docx", "document.xml is not XML", "failed", E_PARSE, "not well-formed"))(
        lambda p, x: docx_bytes(b"this is < not > xml & at all")
    )
    case(
        Hostile(
            "deep.docx", "100k nested elements in document.xml", "failed", E_PARSE, "well-formed|deep"
        )
    )(
        lambda p, x: docx_bytes(
            document_xml("x").replace(
                "<w:body>", "<w:body>" + "<w:sdt>" * 100_000 + "deep" + "</w:sdt>" * 100_000
            )
        )
    )
    case(Hostile("truncated.docx", "a DOCX cut in half", "failed", E_PARSE, "not a valid DOCX"))(
        lambda p, x: (d := docx_bytes(document_xml(*["Some paragraph text."] * 200)))[: len(d) // 2]
    )
    case(
        Hostile(
            "encrypted.docx",
            "a password-protected (OLE) Office file",
            "failed",
            E_UNSUPPORTED + E_PARSE,
            "OLE",
        )
    )(lambda p, x: b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 16 + b"\x3e\x00\x03\x00" + b"\xff" * 4000)

    # ---- PDF (refused as unsupported until the PDF parser is registered)
    case(Hostile("truncated.pdf", "a PDF cut in half", "failed", E_PDF, PDF_PENDING + "|damaged|truncat|invalid|could not"))(
        lambda p, x: (d := pdf_bytes("truncated text " * 20))[: len(d) // 2]
    )
    case(Hostile("garbage.pdf", "a PDF header, then random bytes", "failed", E_PDF, PDF_PENDING + "|damaged|invalid|could not"))(
        lambda p, x: b"%PDF-1.7\n" + random.Random(3).randbytes(64 * 1024)
    )
    case(Hostile("encrypted.pdf", "a password-protected PDF", "failed", E_PDF, PDF_PENDING + "|password"))(
        lambda p, x: encrypted_pdf_bytes("secret pdf text")
    )
    case(Hostile("html.pdf", "HTML named .pdf", "failed", E_PDF, PDF_PENDING + "|not a PDF|damaged|invalid|could not"))(
        lambda p, x: b"<html><body><p>not a pdf</p></body></html>"
    )

    # ---- images
    case(Hostile("bomb.png", "30000x30000 1-bit PNG (900 Mpx)", "failed", E_PARSE, "decompression bomb"))(
        lambda p, x: png_bytes(30_000, 30_000)
    )
    case(Hostile("bomb_warn.png", "10000x10000 PNG (100 Mpx)", "failed", E_PARSE, "decompression bomb"))(
        lambda p, x: png_bytes(10_000, 10_000)
    )
    case(Hostile("truncated.png", "a PNG cut in half", "failed", E_PARSE, "could not decode|not an image|truncated"))(
        lambda p, x: (d := png_bytes(2000, 2000))[: len(d) // 2]
    )

    # ---- HTML
    case(Hostile("xxe.html", "HTML with an external entity to the canary", "failed", E_PARSE, r"entit"))(
        lambda p, x: (
            _xxe_doctype("html", x.canary_uri)
            + "<html><body><p>Hello &xxe; world of secrets.</p></body></html>"
        ).encode()
    )
    case(Hostile("billion_laughs.html", "HTML with entity expansion", "failed", E_PARSE, r"entit"))(
        lambda p, x: _billion_laughs("<html><body><p>", "</p></body></html>", "&lol9;").encode()
    )
    case(Hostile("file_refs.html", "iframe/object/img/link to the canary (never fetched)", "added"))(
        lambda p, x: (
            f'<html><head><link rel="stylesheet" href="{x.canary_uri}"></head><body>'
            f'<iframe src="{x.canary_uri}"></iframe><object data="{x.canary_uri}"></object>'
            f'<img src="{x.canary_uri}" alt="img"><p>Visible periwinkle paragraph.</p></body></html>'
        ).encode()
    )
    case(Hostile("deep_div.html", "100k nested <div>", "failed", E_PARSE, "deep"))(
        lambda p, x: b"<html><body>" + b"<div>" * 100_000 + b"deep" + b"</div>" * 100_000 + b"</body></html>"
    )
    case(Hostile("long_line.html", "10 MB single-line HTML", "added", cli=False))(
        lambda p, x: b"<html><body><script>" + b"var a=1;" * (2 * MB // 8) + b"</script><p>"
        + _words(8 * MB, 4) + b"</p></body></html>"
    )

    # ---- Markdown and text
    case(Hostile("deep_quote.md", "100k nested block quotes", "added"))(
        lambda p, x: b">" * 100_000 + b" deep quoted text"
    )
    case(Hostile("deep_list.md", "100k nested list levels", "added"))(
        lambda p, x: b"- " * 100_000 + b"deep list item"
    )
    case(Hostile("deep_inline.md", "100k nested emphasis and brackets", "added"))(
        lambda p, x: b"*" * 50_000 + b"x" + b"*" * 50_000 + b" " + b"[" * 50_000 + b"y" + b"]" * 50_000
    )
    case(
        Hostile(
            "yaml_bomb.md", "YAML alias bomb in front matter", "failed", E_PARSE, "front matter"
        )
    )(lambda p, x: _yaml_bomb())
    case(
        Hostile(
            "yaml_python.md", "a python object tag in front matter", "failed", E_PARSE, "invalid YAML"
        )
    )(lambda p, x: b"---\nx: !!python/object/apply:os.system ['echo pwned']\n---\n\n# Body\n")
    case(Hostile("yaml_deep.md", "100k nested YAML lists", "failed", E_PARSE, "deep|front matter"))(
        lambda p, x: b"---\na: " + b"[" * 100_000 + b"]" * 100_000 + b"\n---\n\ntext\n"
    )
    case(Hostile("long_line.txt", "10 MB single line of words", "added", cli=False))(
        lambda p, x: _words(10 * MB, 5)
    )
    case(Hostile("long_token.txt", "10 MB single word", "added", cli=False))(
        lambda p, x: b"a" * (10 * MB)
    )
    case(Hostile("many_lines.txt", "1M lines, 500k tiny paragraphs", "added", cli=False))(
        lambda p, x: b"".join(b"p%d\n\n" % i for i in range(500_000))
    )
    case(Hostile("odd name -- 'q' \"dq\" $(x) ;|&% é名.md", "shell and Unicode characters in the name", "added"))(
        lambda p, x: b"# Odd name\n\nA file with a strange name about tamarind.\n"
    )
    case(Hostile("loop.md", "a symbolic link to itself", "failed", E_PARSE, "symbolic links"))(
        _symlink_loop
    )
    return c


def _plain_zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("readme.txt", "just a zip")
    return buf.getvalue()


def _yaml_bomb() -> bytes:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 10):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    return ("---\n" + "\n".join(lines) + "\n---\n\n# Body\n\nText.\n").encode()


def _symlink_loop(path: Path, ctx: Context) -> None:
    os.symlink(path.name, path)
    return None


CASES: list[tuple[Hostile, Writer]] = _cases()


def generate(folder: Path, canary: Path, token: str) -> list[Hostile]:
    """Write every hostile file into ``folder`` (the canary file must exist already)."""
    folder.mkdir(parents=True, exist_ok=True)
    ctx = Context(canary, token)
    out = []
    for hostile, writer in CASES:
        path = folder / hostile.name
        data = writer(path, ctx)
        if data is not None:
            path.write_bytes(data)
        elif not path.is_symlink():
            continue  # a generator that is unavailable here (pypdf missing)
        out.append(hostile)
    return out


GOOD: dict[str, tuple[str, bytes]] = {
    "good.md": ("quokka", b"# Good notes\n\nThe quokka lives on Rottnest Island.\n"),
    "good.txt": ("axolotl", b"Field notes\n\nThe axolotl regrows its limbs.\n"),
    "good.html": (
        "pangolin",
        b"<html><body><h1>Mammals</h1><p>The pangolin is covered in scales.</p></body></html>",
    ),
    "good.docx": ("narwhal", docx_bytes(document_xml("The narwhal has a long tusk."))),
}
"""Good files for the same batch: name -> (a word only it contains, bytes)."""


def write_good(folder: Path) -> dict[str, str]:
    """Write the good files into ``folder``; returns name -> its unique word."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, (_, data) in GOOD.items():
        (folder / name).write_bytes(data)
    return {name: word for name, (word, _) in GOOD.items()}
