"""OCR: language resolution, error paths (with a fake ``tesseract``), decompression bombs,
and real Tesseract runs on text rendered in five languages, scored by character accuracy."""

from __future__ import annotations

import io
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from ragline.core.errors import ConfigError, EmptyDocumentError, MissingDependencyError, ParseError
from ragline.parse import parse_bytes, parse_file
from ragline.parse.ocr import (
    ImageParser,
    Tesseract,
    _parse_tsv,
    apt_packages,
    ocr_blocks,
    ocr_image,
    tesseract_languages,
)

PIL = pytest.importorskip("PIL", reason="Pillow is needed to render and read images")
from PIL import Image, ImageDraw, ImageFont  # noqa: E402

FONT_PATHS = (
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/Library/Fonts/DejaVuSans.ttf",
)
FONT = next((Path(p) for p in FONT_PATHS if Path(p).is_file()), None)
TESSERACT = shutil.which("tesseract")


def installed_languages() -> set[str]:
    if TESSERACT is None:
        return set()
    out = subprocess.run([TESSERACT, "--list-langs"], capture_output=True, text=True, check=False)
    return {line.strip() for line in (out.stdout + out.stderr).splitlines()[1:] if line.strip()}


LANGS = installed_languages()
needs_tesseract = pytest.mark.skipif(
    TESSERACT is None,
    reason="tesseract is not installed (apt-get install tesseract-ocr tesseract-ocr-eng)",
)
needs_font = pytest.mark.skipif(
    FONT is None, reason="DejaVuSans.ttf not found (apt-get install fonts-dejavu-core)"
)

SAMPLES = {
    "en": (
        "The quick brown fox jumps over the lazy dog. Pack my box with five dozen liquor "
        "jugs. Sphinx of black quartz, judge my vow."
    ),
    "hu": (
        "Árvíztűrő tükörfúrógép. Öt szép szűz lány őrült írót nyúz. A hűtőszekrényben "
        "friss gyümölcs és sütemény várja a vendégeket."
    ),
    "cs": (
        "Příliš žluťoučký kůň úpěl ďábelské ódy. Hleď, toto je čeština s háčky a čárkami. "
        "Dnes večer půjdeme do divadla na operu."
    ),
    "nl": (
        "Één ijsbeer zag in België een ruïne bij de zee. Het café aan de gracht serveert "
        "coöperatieve koffie. Zij bezochten de hoofdstad van Nederland."
    ),
    "uk": (
        "Київ є столицею України. Щастя не купиш, але можна знайти його в простих речах. "
        "Їжак ґречно подякував своїм друзям за допомогу."
    ),
}


def levenshtein(a: str, b: str) -> int:
    """Edit distance (insertions, deletions, substitutions), two-row dynamic programme."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def char_accuracy(got: str, reference: str) -> float:
    got, reference = " ".join(got.split()), " ".join(reference.split())
    return 1 - levenshtein(got, reference) / len(reference)


def render(text: str, *, width: int = 1400, size: int = 34, mode: str = "L") -> Image.Image:
    """``text`` word-wrapped onto a white page in DejaVu Sans."""
    assert FONT is not None
    font = ImageFont.truetype(str(FONT), size)
    lines: list[str] = []
    for word in text.split():
        candidate = f"{lines[-1]} {word}" if lines else word
        if lines and font.getlength(candidate) <= width - 100:
            lines[-1] = candidate
        else:
            lines.append(word)
    height = 100 + len(lines) * int(size * 1.5)
    background = (255, 255, 255, 0) if mode == "RGBA" else "white"
    image = Image.new(mode, (width, height), background)
    draw = ImageDraw.Draw(image)
    for index, line in enumerate(lines):
        draw.text((50, 50 + index * int(size * 1.5)), line, font=font, fill="black")
    return image


def encode(image: Image.Image, fmt: str, **options) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **options)
    return buffer.getvalue()


def fake_tesseract(tmp_path: Path, body: str, langs: str = "eng") -> str:
    """A stand-in ``tesseract`` script: lists ``langs``, otherwise runs ``body``."""
    script = tmp_path / "fake-tesseract"
    script.write_text(
        "#!/bin/sh\nPATH=/usr/bin:/bin:$PATH\n"
        'if [ "$1" = "--list-langs" ]; then\n'
        '  echo "List of available languages in \\"/fake/\\" (1):"\n'
        + "".join(f"  echo {code}\n" for code in langs.split())
        + "  exit 0\nfi\n"
        + body
        + "\n"
    )
    script.chmod(0o755)
    return str(script)


def huge_png(width: int, height: int) -> bytes:
    """A PNG header declaring ``width`` x ``height`` pixels, with almost no pixel data."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00" * 64))
        + chunk(b"IEND", b"")
    )


# --------------------------------------------------------------------------- no tesseract needed


def test_language_codes(monkeypatch: pytest.MonkeyPatch) -> None:
    assert tesseract_languages(["en", "hu", "cs", "nl", "uk"]) == (
        "eng",
        "hun",
        "ces",
        "nld",
        "ukr",
    )
    assert tesseract_languages("eng+hun") == ("eng", "hun")
    assert tesseract_languages("en, HU ,eng") == ("eng", "hun")
    assert tesseract_languages(["chi_sim"]) == ("chi_sim",)
    monkeypatch.delenv("RAGLINE_OCR_LANGUAGES", raising=False)
    assert tesseract_languages() == ("eng",)
    monkeypatch.setenv("RAGLINE_OCR_LANGUAGES", "eng+hun")
    assert tesseract_languages() == ("eng", "hun")
    assert tesseract_languages("uk") == ("ukr",)  # an argument wins over the environment
    with pytest.raises(ConfigError) as info:
        tesseract_languages("xx")
    assert "'xx'" in str(info.value) and "hu=hun" in str(info.value)
    with pytest.raises(ConfigError):
        tesseract_languages(" + ")


def test_apt_packages() -> None:
    assert apt_packages(("eng", "hun", "chi_sim")) == [
        "tesseract-ocr",
        "tesseract-ocr-eng",
        "tesseract-ocr-hun",
        "tesseract-ocr-chi-sim",
    ]


def test_tsv_grouping() -> None:
    tsv = (
        "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n"
        "4\t1\t1\t1\t1\t0\t10\t10\t200\t30\t-1\t\n"
        "5\t1\t1\t1\t1\t1\t10\t10\t90\t30\t96.5\tHello\n"
        "5\t1\t1\t1\t1\t2\t110\t10\t100\t30\t93.5\tworld\n"
        "4\t1\t1\t1\t2\t0\t10\t50\t80\t30\t-1\t\n"
        "5\t1\t1\t1\t2\t1\t10\t50\t80\t30\t90\tagain\n"
        "5\t1\t1\t1\t2\t2\t10\t50\t80\t30\t95\t \n"
        "5\t1\t2\t1\t1\t1\t10\t150\t80\t30\t80\tNext\n"
    )
    first, second = _parse_tsv(tsv, page=3)
    assert first.text == "Hello world\nagain" and first.page == 3
    assert first.lines[0].confidence == pytest.approx(95.0)
    assert first.lines[0].bbox == (10, 10, 200, 30)
    assert first.confidence == pytest.approx(92.5)
    assert second.text == "Next"


def test_missing_binary_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(MissingDependencyError) as info:
        Tesseract(["en", "hu"], command="no-such-tesseract-binary").warm_up()
    message = str(info.value)
    assert "apt-get install tesseract-ocr tesseract-ocr-eng tesseract-ocr-hun" in message
    # Through the registry, with no tesseract on PATH at all.
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ParseError) as parse_info:
        parse_bytes(huge_png(10, 10), path=Path("scan.png"))
    assert "apt-get install tesseract-ocr" in parse_info.value.reason


def test_missing_language_pack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TESSDATA_PREFIX", raising=False)
    command = fake_tesseract(tmp_path, "exit 1", langs="eng osd")
    with pytest.raises(MissingDependencyError) as info:
        Tesseract(["en", "hu", "uk"], command=command).warm_up()
    message = str(info.value)
    assert "hun, ukr" in message and "installed: eng, osd" in message
    assert "apt-get install tesseract-ocr-hun tesseract-ocr-ukr" in message


def test_timeout_and_failure(tmp_path: Path) -> None:
    image = Image.new("L", (50, 50), 255)
    slow = fake_tesseract(tmp_path, "sleep 10")
    with pytest.raises(ParseError) as info:
        Tesseract("en", command=slow, timeout=0.5).recognize(image, source="slow.png")
    assert "longer than 0.5 s" in info.value.reason and info.value.path == "slow.png"
    failing = fake_tesseract(tmp_path, "echo 'Error: broken model' >&2; exit 3")
    with pytest.raises(ParseError) as info:
        Tesseract("en", command=failing).recognize(image)
    assert "exit 3" in info.value.reason and "broken model" in info.value.reason


def test_decompression_bombs_are_refused(tmp_path: Path) -> None:
    engine = Tesseract("en", command=fake_tesseract(tmp_path, "exit 0"))
    # Over twice Pillow's MAX_IMAGE_PIXELS: Pillow's own check, before any decoding.
    with pytest.raises(ParseError) as info:
        engine.recognize(huge_png(100_000, 100_000), source="bomb.png")
    assert "decompression bomb" in info.value.reason
    # Between one and two times the limit Pillow only warns; it is still refused.
    with pytest.raises(ParseError) as info:
        engine.recognize(huge_png(10_000, 10_000), source="bomb.png")
    assert "decompression bomb" in info.value.reason
    # A lower, explicit limit applies to every page.
    small = Tesseract("en", command=engine.command, max_pixels=1_000)
    with pytest.raises(ParseError) as info:
        small.recognize(encode(Image.new("L", (100, 100), 255), "PNG"))
    assert "10,000 pixels" in info.value.reason


def test_not_an_image(tmp_path: Path) -> None:
    engine = Tesseract("en", command=fake_tesseract(tmp_path, "exit 0"))
    with pytest.raises(ParseError) as info:
        engine.recognize(b"\x89PNG\r\n\x1a\n garbage", source="broken.png")
    assert "not an image" in info.value.reason
    with pytest.raises(ParseError):
        parse_bytes(b"\x89PNG\r\n\x1a\n garbage", path=Path("broken.png"))


# --------------------------------------------------------------------------- real tesseract


@needs_tesseract
@needs_font
@pytest.mark.parametrize("language", list(SAMPLES))
def test_character_accuracy(language: str) -> None:
    code = tesseract_languages(language)[0]
    if code not in LANGS:
        pytest.skip(f"tesseract language pack missing: apt-get install tesseract-ocr-{code}")
    reference = SAMPLES[language]
    text = ocr_image(render(reference), [language])
    accuracy = char_accuracy(text, reference)
    print(f"\nOCR {language} ({code}): character accuracy {accuracy:.3f}")
    assert accuracy >= 0.95, (language, text)


@needs_tesseract
@needs_font
def test_blocks_have_confidence_and_boxes() -> None:
    [block] = ocr_blocks(render(SAMPLES["en"]), "en")
    assert block.page == 1 and block.confidence > 80
    assert len(block.lines) >= 2 and all(line.bbox[2] > 0 for line in block.lines)


@needs_tesseract
@needs_font
def test_multi_page_tiff_gives_pages(tmp_path: Path) -> None:
    first, second = render("First page about tidal power."), render("Second page about wind.")
    data = encode(first, "TIFF", save_all=True, append_images=[second], compression="tiff_lzw")
    path = tmp_path / "scan.tiff"
    path.write_bytes(data)
    doc = parse_file(path)
    assert [(b.kind, b.page) for b in doc.blocks] == [("paragraph", 1), ("paragraph", 2)]
    assert char_accuracy(doc.blocks[1].text, "Second page about wind.") >= 0.95
    assert doc.title == "scan" and doc.media_type == "image/tiff"
    assert doc.metadata["pages"] == 2 and doc.metadata["ocr_languages"] == "eng"
    assert 0 < doc.metadata["ocr_confidence"] <= 100


@needs_tesseract
@needs_font
@pytest.mark.parametrize(
    ("name", "fmt", "mode", "media_type"),
    [
        ("photo.jpg", "JPEG", "L", "image/jpeg"),
        ("clear.png", "PNG", "RGBA", "image/png"),
        ("scan.bmp", "BMP", "RGB", "image/bmp"),
        ("scan.gif", "GIF", "L", "image/gif"),
        ("scan.webp", "WEBP", "RGB", "image/webp"),
    ],
)
def test_formats_through_registry(name: str, fmt: str, mode: str, media_type: str) -> None:
    # The RGBA PNG has black text on a fully transparent background: it must be flattened
    # onto white, or the text would vanish into black.
    options = {"lossless": True} if fmt == "WEBP" else {}
    data = encode(render(SAMPLES["en"], mode=mode), fmt, **options)
    doc = parse_bytes(data, path=Path(name))
    assert char_accuracy(doc.text, SAMPLES["en"]) >= 0.95
    assert doc.media_type == media_type


@needs_tesseract
@needs_font
def test_languages_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    if "hun" not in LANGS:
        pytest.skip("tesseract language pack missing: apt-get install tesseract-ocr-hun")
    monkeypatch.setenv("RAGLINE_OCR_LANGUAGES", "hu")
    doc = parse_bytes(encode(render(SAMPLES["hu"]), "PNG"), path=Path("hu.png"))
    assert doc.metadata["ocr_languages"] == "hun"
    assert char_accuracy(doc.text, SAMPLES["hu"]) >= 0.95


@needs_tesseract
def test_blank_image_is_empty() -> None:
    with pytest.raises(EmptyDocumentError) as info:
        ImageParser("en").parse(encode(Image.new("L", (300, 200), 255), "PNG"), path=Path("b.png"))
    assert "no text" in info.value.reason


@needs_tesseract
def test_real_tesseract_without_language_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TESSDATA_PREFIX", str(tmp_path))
    with pytest.raises(MissingDependencyError) as info:
        Tesseract("hu").warm_up()
    assert "tesseract-ocr-hun" in str(info.value) and str(tmp_path) in str(info.value)


def test_missing_pillow_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "PIL", None)
    with pytest.raises(MissingDependencyError) as info:
        Tesseract("en").warm_up()
    assert "ragline[ocr]" in str(info.value) and "Pillow" in str(info.value)
