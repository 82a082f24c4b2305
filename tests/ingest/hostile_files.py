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
    writer.encrypt(
        user_password="hostile-user", owner_password="hostile-owner", algorithm="AES-128"
    )
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


def words(n_bytes: int, seed: int, first: str) -> bytes:
    """``n_bytes`` of pseudo-random lowercase words on one line, starting with ``first``."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = ["".join(rng.choices(letters, k=rng.randint(3, 9))) for _ in range(5000)]
    sample = (" ".join(rng.choices(vocab, k=200_000)) + " ").encode()
    text = first.encode() + b" " + sample * (n_bytes // len(sample) + 1)
    return text[:n_bytes].rstrip() + b" end"


def padded_line(n_bytes: int, seed: int, first: str, word_bytes: int = 100_000) -> bytes:
    """One ``n_bytes`` line: ``word_bytes`` of words, each followed by a long run of blanks."""
    text = words(word_bytes, seed, first).split(b" ")
    pad = max(1, (n_bytes - word_bytes) // len(text))
    line = (b" " * (pad - 1) + b"\t").join(text)
    return line + b" " * max(0, n_bytes - len(line) - 4) + b" end"


def many_paragraphs(lines: int, blank: int = 1) -> bytes:
    """``lines`` lines: one-word paragraphs ``p0``, ``p1`` ... each followed by ``blank``
    blank lines."""
    sep = b"\n" * (blank + 1)
    return b"".join(b"p%d%s" % (i, sep) for i in range(lines // (blank + 1)))


def _billion_laughs(root_open: str, root_close: str, use: str) -> str:
    defs = ['<!ENTITY lol "lol">'] + [
        f'<!ENTITY lol{i} "{("&lol%s;" % (i - 1 if i > 1 else "")) * 10}">' for i in range(1, 10)
    ]
    return f"<!DOCTYPE lolz [{''.join(defs)}]>{root_open}{use}{root_close}"


def _xxe_doctype(root: str, canary_uri: str) -> str:
    return f'<!DOCTYPE {root} [<!ENTITY xxe SYSTEM "{canary_uri}">]>'


# --------------------------------------------------------------------------- the cases


@dataclass(frozen=True)
class Context:
    """What the generators need: the canary file outside the batch folder."""

    canary: Path
    token: str

    @property
    def canary_uri(self) -> str:
        return self.canary.as_uri()


Maker = Callable[[Path, Context], bytes | None]
"""Returns the file's bytes, or writes the path itself and returns None (symlinks)."""


@dataclass(frozen=True)
class Hostile:
    """One generated file and what ragline must do with it."""

    name: str
    what: str
    make: Maker
    outcome: Literal["failed", "added", "skipped"] = "failed"
    """``skipped``: a folder walk lists it as skipped (links are never followed); named
    explicitly (``ragline parse``) it fails with ``reason``."""
    errors: tuple[str, ...] = ("ParseError",)
    """Accepted exception class names when it must fail."""
    reason: str = ""
    """A regular expression the failure reason must match (case-insensitive search)."""
    word: str = ""
    """When it must be indexed: a word of its text that a BM25 search must find."""
    cli: bool = True
    """Also run through ``ragline parse`` (skipped for big legitimate files)."""
    known_bug: str = ""
    """Set while ragline gets this file wrong outside the parsers: the bug, for an xfail."""


EMPTY = ("EmptyDocumentError",)
ENCODING = ("EncodingError",)
UNSUPPORTED = ("UnsupportedFormatError",)
NESTED_MD = "nested 50 or more levels deep"
XXE_DOCX = r"declares a DTD .*entity-expansion and external-entity \(XXE\)"


def _truncated(data: bytes) -> bytes:
    return data[: len(data) // 2]


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


def _bomb_docx_doc(ctx: Context) -> bytes:
    body = f'<w:document xmlns:w="{W_NS}"><w:body><w:p><w:r><w:t>'
    return docx_bytes(
        '<?xml version="1.0"?>'
        + _billion_laughs(body, "</w:t></w:r></w:p></w:body></w:document>", "&lol9;")
    )


def _xxe_docx(ctx: Context, padding: int = 0, utf16: bool = False) -> bytes:
    prolog = ("<!--" + " " * padding + "-->" if padding else "") + _xxe_doctype(
        "w:document", ctx.canary_uri
    )
    xml = document_xml("&xxe;", prolog=prolog)
    if utf16:
        return docx_bytes(b"\xff\xfe" + xml.replace("UTF-8", "UTF-16").encode("utf-16-le"))
    return docx_bytes(xml)


def _xxe_core_docx(ctx: Context) -> bytes:
    core = (
        '<?xml version="1.0"?>'
        + _xxe_doctype("cp:coreProperties", ctx.canary_uri)
        + '<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/'
        'metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/">'
        "<dc:title>&xxe;</dc:title></cp:coreProperties>"
    )
    return docx_bytes(document_xml("An innocent body."), core=core)


def _xinclude_docx(ctx: Context) -> bytes:
    include = (
        f'<xi:include xmlns:xi="http://www.w3.org/2001/XInclude" href="{ctx.canary_uri}" '
        'parse="text"/>'
    )
    return docx_bytes(document_xml("Visible marigold text.", include))


def _deep_docx() -> bytes:
    deep = "<w:sdt>" * 100_000 + "deep" + "</w:sdt>" * 100_000
    return docx_bytes(document_xml("x").replace("<w:body>", "<w:body>" + deep))


def _file_refs_html(ctx: Context) -> bytes:
    uri = ctx.canary_uri
    return (
        f'<html><head><link rel="stylesheet" href="{uri}"></head><body>'
        f'<iframe src="{uri}"></iframe><object data="{uri}"></object><img src="{uri}" alt="i">'
        "<p>Visible periwinkle paragraph.</p></body></html>"
    ).encode()


def long_line_html() -> bytes:
    """A 10.6 MB minified page on one line: an inline script of 10.5 MB (one text node over
    libxml2's 10 MB limit, where it stops without its "huge" mode) between two paragraphs."""
    script = b"<script>" + b"var a=1;" * (21 * MB // 16) + b"</script>"
    image = b'<img alt="x" src="data:image/png;base64,' + b"QUJD" * 1000 + b'">'
    first = b"<p>" + words(50_000, 4, "zygomorphic") + b"</p>"
    last = b"<p>" + words(50_000, 6, "floccinaucinihilipilification") + b"</p>"
    return (
        b"<html><head><title>Big</title></head><body>"
        + first
        + script
        + image
        + last
        + b"</body></html>"
    )


OLE_HEADER = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 16 + b"\x3e\x00\x03\x00"

CASES: tuple[Hostile, ...] = (
    # ---- empty
    *(
        Hostile(f"empty.{ext}", "0 bytes", lambda p, x: b"", errors=EMPTY, reason=r"empty \(0 bytes\)")
        for ext in ("md", "txt", "html", "docx", "pdf", "png")
    ),
    Hostile("whitespace.md", "only whitespace", lambda p, x: b" \n\t\r\n  \n" * 1000,
            errors=EMPTY, reason="only whitespace"),
    Hostile("bom_only.txt", "a UTF-8 BOM and nothing else", lambda p, x: b"\xef\xbb\xbf",
            errors=EMPTY, reason="only whitespace"),
    Hostile("no_text.html", "markup without text",
            lambda p, x: b"<html><body>" + b"<div><span></span></div>" * 1000 + b"</body></html>",
            errors=EMPTY, reason="no text after parsing"),
    # ---- binary and broken encodings
    Hostile("nul_bytes.txt", "text with NUL bytes", lambda p, x: b"hello world\x00" * 1000,
            errors=ENCODING, reason="contains NUL bytes"),
    Hostile("random.txt", "random bytes named .txt",
            lambda p, x: random.Random(1).randbytes(256 * 1024),
            errors=ENCODING, reason="binary, not text"),
    Hostile("controls.txt", "control characters, no NUL",
            lambda p, x: bytes(range(1, 9)) * 2000,
            errors=ENCODING, reason="are control characters"),
    Hostile("utf16_odd.txt", "UTF-16 BOM and an odd byte count",
            lambda p, x: "\ufeffsome utf-16 text\n".encode("utf-16-le") * 100 + b"A",
            errors=ENCODING, reason="byte-order mark says utf-16-le, but byte"),
    Hostile("utf16_nobom_odd.txt", "UTF-16 without BOM, odd byte count",
            lambda p, x: "plain words in utf sixteen\n".encode("utf-16-le") * 400 + b"A",
            errors=ENCODING, reason="UTF-16 byte pattern says utf-16-le, but byte"),
    Hostile("utf32_nobom.md", "UTF-32 without BOM named .md",
            lambda p, x: "# Title\n\nSome text in UTF-32.\n".encode("utf-32-le") * 50,
            errors=ENCODING, reason="contains NUL bytes"),
    Hostile("utf32_bad.md", "UTF-32 BOM, code points above U+10FFFF",
            lambda p, x: b"\xff\xfe\x00\x00" + struct.pack("<I", 0x110000) * 100,
            errors=ENCODING, reason="byte-order mark says utf-32-le"),
    Hostile("latin1.md", "invalid UTF-8 (Latin-1 prose)", outcome="added", word="façade",
            make=lambda p, x: "# Café crème\n\nA naïve façade résumé. ".encode("latin-1") * 200),
    # ---- wrong extension
    Hostile("image.md", "a blank PNG named .md", lambda p, x: png_bytes(64, 32),
            errors=EMPTY, reason="OCR found no text"),
    Hostile("elf.txt", "an ELF executable named .txt",
            lambda p, x: b"\x7fELF\x02\x01\x01" + b"\x00" * 9 + random.Random(2).randbytes(8192),
            errors=UNSUPPORTED, reason="ELF executable"),
    Hostile("gzip.md", "a gzip file named .md", lambda p, x: gzip.compress(b"words " * 1000),
            errors=UNSUPPORTED, reason="gzip archive"),
    Hostile("plain_zip.docx", "a ZIP without a Word document named .docx",
            lambda p, x: _plain_zip(), reason="no main document part"),
    Hostile("docx_named.txt", "a valid DOCX named .txt (magic bytes win)", outcome="added",
            word="heliotrope",
            make=lambda p, x: docx_bytes(document_xml("Disguised docx about heliotrope."))),
    Hostile("pdf.docx", "a valid PDF named .docx (magic bytes win)", outcome="added",
            word="kumquat", make=lambda p, x: pdf_bytes("A pdf in disguise about kumquat trees")),
    Hostile("html.pdf", "HTML named .pdf", lambda p, x: b"<html><body><p>not a pdf</p></body></html>",
            reason="not a readable PDF"),
    # ---- ZIP / DOCX
    Hostile("zip_bomb.docx", "document.xml inflating to 200 MB (~1000x)",
            lambda p, x: zip_bomb_docx(200), reason="looks like a ZIP bomb"),
    Hostile("lying_sizes.docx", "ZIP directory understating a part's size 1000x",
            lambda p, x: lying_sizes_docx(), reason="could not read part word/document.xml: Bad CRC"),
    Hostile("billion_laughs.docx", "entity expansion in document.xml",
            lambda p, x: _bomb_docx_doc(x), reason=XXE_DOCX),
    Hostile("xxe.docx", "external entity to the canary", lambda p, x: _xxe_docx(x), reason=XXE_DOCX),
    Hostile("xxe_padded.docx", "XXE after 70 KB of comment (past the prolog check)",
            lambda p, x: _xxe_docx(x, padding=70_000), reason=XXE_DOCX),
    Hostile("xxe_utf16.docx", "XXE in a UTF-16 document.xml",
            lambda p, x: _xxe_docx(x, utf16=True), reason=XXE_DOCX),
    Hostile("xxe_core.docx", "XXE in the core properties' title",
            lambda p, x: _xxe_core_docx(x), reason="part docProps/core.xml " + XXE_DOCX),
    Hostile("rel_traversal.docx", "main-part relationship pointing at the canary's path",
            lambda p, x: docx_bytes(document_xml("x"), main="../../../../.." + str(x.canary)),
            reason="no main document part"),
    Hostile("xinclude.docx", "XInclude of the canary (never processed)", outcome="added",
            word="marigold", make=lambda p, x: _xinclude_docx(x)),
    Hostile("not_xml.docx", "document.xml that is not XML",
            lambda p, x: docx_bytes(b"this is < not > xml & at all"), reason="not well-formed XML"),
    Hostile("deep.docx", "100k nested elements in document.xml", lambda p, x: _deep_docx(),
            reason="Excessive depth"),
    Hostile("truncated.docx", "a DOCX cut in half",
            lambda p, x: _truncated(docx_bytes(document_xml(*["Some paragraph text."] * 200))),
            reason="not a valid DOCX file"),
    Hostile("encrypted.docx", "a password-protected (OLE) Office file",
            lambda p, x: OLE_HEADER + b"\xff" * 4000, errors=UNSUPPORTED, reason="OLE"),
    # ---- PDF
    Hostile("truncated.pdf", "a PDF cut in half",
            lambda p, x: _truncated(pdf_bytes("truncated text " * 20)), reason="not a readable PDF"),
    Hostile("garbage.pdf", "a PDF header, then random bytes",
            lambda p, x: b"%PDF-1.7\n" + random.Random(3).randbytes(64 * 1024),
            reason="not a readable PDF"),
    Hostile("encrypted.pdf", "a password-protected PDF (AES-128)",
            lambda p, x: encrypted_pdf_bytes("secret pdf text"), reason="password-protected"),
    # ---- images
    Hostile("bomb.png", "30000x30000 1-bit PNG (900 Mpx, 100 KB)",
            lambda p, x: png_bytes(30_000, 30_000), reason="decompression bomb"),
    Hostile("bomb_warn.png", "10000x10000 1-bit PNG (100 Mpx)",
            lambda p, x: png_bytes(10_000, 10_000), reason="decompression bomb"),
    Hostile("truncated.png", "a PNG cut in half", lambda p, x: _truncated(png_bytes(2000, 2000)),
            reason="could not decode page 1: image file is truncated"),
    # ---- HTML: entities beyond HTML's own are never resolved; the reference stays literal
    # text (tests/parse/test_html.py pins this), so these pages are read.
    Hostile("xxe.html", "HTML with an external entity to the canary", outcome="added",
            word="secrets",
            make=lambda p, x: (_xxe_doctype("html", x.canary_uri)
                               + "<html><body><p>Hello &xxe; world of secrets.</p></body></html>").encode()),
    Hostile("billion_laughs.html", "HTML with entity expansion", outcome="added", word="giggles",
            make=lambda p, x: _billion_laughs("<html><body><p>giggles ", "</p></body></html>",
                                              "&lol9;").encode()),
    Hostile("file_refs.html", "iframe/object/img/link to the canary (never fetched)",
            outcome="added", word="periwinkle", make=lambda p, x: _file_refs_html(x)),
    Hostile("deep_div.html", "100k nested <div>",
            lambda p, x: b"<html><body>" + b"<div>" * 100_000 + b"deep" + b"</div>" * 100_000,
            reason="nested more than 2048 levels deep"),
    Hostile("long_line.html", "10.6 MB single-line page with a 10.5 MB inline script",
            outcome="added", word="floccinaucinihilipilification", cli=False,
            make=lambda p, x: long_line_html()),
    # ---- Markdown
    Hostile("deep_quote.md", "100k nested block quotes",
            lambda p, x: b">" * 100_000 + b" deep quoted text", reason=NESTED_MD),
    Hostile("deep_list.md", "100k nested list levels",
            lambda p, x: b"- " * 100_000 + b"deep list item", reason=NESTED_MD),
    Hostile("deep_inline.md", "50k nested emphasis, 50k brackets",
            lambda p, x: b"*" * 50_000 + b"x" + b"*" * 50_000 + b" " + b"[" * 50_000 + b"y",
            reason=NESTED_MD),
    Hostile("yaml_bomb.md", "YAML alias bomb in front matter (9^10 values)",
            lambda p, x: _yaml_bomb(), reason="front matter: it expands to more than"),
    Hostile("yaml_selfref.md", "a YAML alias that contains itself",
            lambda p, x: b"---\na: &a [*a, *a]\n---\n\n# Body\n\nText.\n",
            reason="front matter: it expands to more than"),
    Hostile("yaml_deep.md", "100k nested YAML lists in front matter",
            lambda p, x: b"---\na: " + b"[" * 100_000 + b"]" * 100_000 + b"\n---\n\ntext\n",
            reason="front matter: nested too deeply"),
    Hostile("yaml_python.md", "a python/object tag in front matter",
            lambda p, x: b"---\nx: !!python/object/apply:os.system ['echo pwned']\n---\n\n# Body\n",
            reason="invalid YAML front matter at line 2: could not determine a constructor"),
    # ---- plain text, huge
    # (dense 10 MB of words and 500k paragraphs: test_hostile.py's slow test)
    Hostile("long_line.txt", "10 MB single line: 100 KB of words in runs of blanks",
            outcome="added", word="sesquipedalian", cli=False,
            make=lambda p, x: padded_line(10 * MB, 5, "sesquipedalian")),
    Hostile("many_lines.txt", "1M lines: 100k one-word paragraphs", outcome="added",
            cli=False, word="p99999", make=lambda p, x: many_paragraphs(1_000_000, blank=9)),
    Hostile("long_word.txt", "a 4,000-letter random word (like an unbroken base64 blob)",
            outcome="added", word="beavers",
            make=lambda p, x: b"Notes about beavers.\n\n"
            + "".join(random.Random(7).choices("abcdefghijklmnopqrstuvwxyz", k=4000)).encode()),
    # ---- file system
    Hostile("odd name -- 'q' \"dq\" $(x) ;|&% é名.md", "shell and Unicode characters in the name",
            outcome="added", word="tamarind",
            make=lambda p, x: b"# Odd name\n\nA file with a strange name about tamarind.\n"),
    Hostile("loop.md", "a symbolic link to itself", _symlink_loop, outcome="skipped",
            reason="symbolic link"),
)  # fmt: skip


def generate(folder: Path, canary: Path, token: str) -> list[Hostile]:
    """Write every hostile file into ``folder``; the canary file must exist already.

    Returns the cases written (one whose generator is unavailable here is left out).
    """
    folder.mkdir(parents=True, exist_ok=True)
    ctx = Context(canary, token)
    out = []
    for hostile in CASES:
        path = folder / hostile.name
        data = hostile.make(path, ctx)
        if data is not None:
            path.write_bytes(data)
        elif not path.is_symlink():
            continue
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
    "good.pdf": ("wombat", pdf_bytes("The wombat digs burrows in the bush.")),
}
"""Good files for the same batch: name -> (a word only it contains, bytes)."""


def write_good(folder: Path) -> dict[str, str]:
    """Write the good files into ``folder``; returns name -> its unique word."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, (_, data) in GOOD.items():
        (folder / name).write_bytes(data)
    return {name: word for name, (word, _) in GOOD.items()}
