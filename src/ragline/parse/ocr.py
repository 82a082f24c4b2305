"""OCR with Tesseract, and the parser that turns images into text blocks.

The ``tesseract`` command (5.x; 4.x works) is run as a subprocess, with a timeout, once per
page: the image is decoded with Pillow, flattened onto white, re-encoded as PNG and piped
to ``tesseract stdin stdout tsv``. Its TSV output gives words with boxes and confidences,
grouped into lines and paragraphs (:class:`OcrBlock`); :func:`ocr_image` joins them into
text. No pytesseract: the subprocess call is all it would add.

Languages are Tesseract codes (``eng``, ``hun``) or ISO 639-1 codes mapped to them (``en``,
``hu``, ``cs``, ``nl``, ``uk``, ...; see :data:`ISO_TO_TESSERACT`), given as a sequence or a
``+``/comma separated string. Unset, they come from ``RAGLINE_OCR_LANGUAGES`` (e.g.
``eng+hun``), else ``eng``. A missing ``tesseract`` binary or language pack fails with a
:class:`MissingDependencyError` that names the packages to install.

Images bigger than ``max_pixels`` (default: Pillow's ``Image.MAX_IMAGE_PIXELS``, about 89
megapixels) are refused as possible decompression bombs, per frame, before decoding.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import ConfigError, EmptyDocumentError, MissingDependencyError, ParseError
from ..core.types import Block, ParsedDocument
from .text import normalize_space

if TYPE_CHECKING:
    from PIL.Image import Image

LANGUAGES_ENV = "RAGLINE_OCR_LANGUAGES"
DEFAULT_LANGUAGES: tuple[str, ...] = ("eng",)
DEFAULT_TIMEOUT_S = 120.0
"""Seconds one ``tesseract`` run (one page) may take."""
MAX_PAGES = 1000
"""Most frames of a multi-page image that are read."""

ISO_TO_TESSERACT: dict[str, str] = {
    "en": "eng", "hu": "hun", "cs": "ces", "nl": "nld", "uk": "ukr", "de": "deu",
    "fr": "fra", "es": "spa", "it": "ita", "pt": "por", "pl": "pol", "sk": "slk",
    "sl": "slv", "hr": "hrv", "sr": "srp", "ro": "ron", "bg": "bul", "ru": "rus",
    "el": "ell", "tr": "tur", "da": "dan", "sv": "swe", "no": "nor", "nb": "nor",
    "fi": "fin", "et": "est", "lv": "lav", "lt": "lit", "ca": "cat", "ar": "ara",
    "he": "heb", "ja": "jpn", "ko": "kor", "zh": "chi_sim", "hi": "hin", "vi": "vie",
}  # fmt: skip
"""ISO 639-1 code -> Tesseract language code."""

IMAGE_MEDIA_TYPES: tuple[str, ...] = (
    "image/png", "image/jpeg", "image/tiff", "image/gif", "image/webp", "image/bmp",
)  # fmt: skip

_INSTALL_HINT = (
    "Install it with: apt-get install {packages} (Debian/Ubuntu), "
    "or brew install tesseract tesseract-lang (macOS)"
)


def tesseract_languages(languages: Sequence[str] | str | None = None) -> tuple[str, ...]:
    """Tesseract codes for ``languages`` (ISO 639-1 or Tesseract codes, a sequence or an
    ``eng+hun`` / ``en,hu`` string); unset: ``$RAGLINE_OCR_LANGUAGES``, else ``eng``."""
    if languages is None:
        languages = os.environ.get(LANGUAGES_ENV, "").strip() or DEFAULT_LANGUAGES
    if isinstance(languages, str):
        languages = [languages]
    out: list[str] = []
    for item in languages:
        for code in item.replace(",", "+").split("+"):
            code = code.strip()
            if not code:
                continue
            lowered = code.lower()
            if lowered in ISO_TO_TESSERACT:
                code = ISO_TO_TESSERACT[lowered]
            elif len(code) < 3 or not code.replace("_", "").replace("-", "").isalnum():
                known = ", ".join(f"{k}={v}" for k, v in ISO_TO_TESSERACT.items())
                raise ConfigError(
                    f"unknown OCR language {code!r}: use a Tesseract code such as 'eng' or "
                    f"'hun', or one of the ISO 639-1 codes {known}"
                )
            if code not in out:
                out.append(code)
    if not out:
        raise ConfigError(f"no OCR language given; set e.g. {LANGUAGES_ENV}=eng+hun")
    return tuple(out)


def apt_packages(languages: Sequence[str]) -> list[str]:
    """Debian/Ubuntu packages that provide Tesseract and ``languages``' data."""
    return ["tesseract-ocr"] + [
        f"tesseract-ocr-{code.lower().replace('_', '-')}" for code in languages
    ]


@dataclass(frozen=True)
class OcrLine:
    """One recognised line: its words joined by spaces, mean word confidence (0-100)
    and bounding box ``(left, top, width, height)`` in pixels."""

    text: str
    confidence: float
    bbox: tuple[int, int, int, int]


@dataclass(frozen=True)
class OcrBlock:
    """One recognised paragraph: its lines joined by newlines, on a 1-based page."""

    text: str
    confidence: float
    page: int
    lines: tuple[OcrLine, ...]


class Tesseract:
    """The ``tesseract`` command with fixed languages; checked once on first use."""

    def __init__(
        self,
        languages: Sequence[str] | str | None = None,
        *,
        command: str = "tesseract",
        timeout: float = DEFAULT_TIMEOUT_S,
        psm: int | None = None,
        max_pixels: int | None = None,
        max_pages: int = MAX_PAGES,
    ) -> None:
        self.languages = tesseract_languages(languages)
        self.command = command
        self.timeout = timeout
        self.psm = psm
        self.max_pixels = max_pixels
        self.max_pages = max_pages
        self._binary: str | None = None

    def warm_up(self) -> None:
        """Check that Pillow, the binary and every language pack are installed (once)."""
        if self._binary is not None:
            return
        _pillow()
        binary = shutil.which(self.command)
        if binary is None:
            hint = _INSTALL_HINT.format(packages=" ".join(apt_packages(self.languages)))
            raise MissingDependencyError(
                f"Tesseract OCR is not installed: no {self.command!r} command on PATH, so "
                f"images cannot be read. {hint}"
            )
        installed = self._installed_languages(binary)
        missing = [code for code in self.languages if code not in installed]
        if missing:
            hint = _INSTALL_HINT.format(packages=" ".join(apt_packages(missing)[1:]))
            prefix = os.environ.get("TESSDATA_PREFIX")
            where = (
                f", or put {missing[0]}.traineddata into TESSDATA_PREFIX={prefix}" if prefix else ""
            )
            raise MissingDependencyError(
                f"Tesseract has no language data for {', '.join(missing)} (installed: "
                f"{', '.join(sorted(installed)) or 'none'}). {hint}{where}"
            )
        self._binary = binary

    def _installed_languages(self, binary: str) -> set[str]:
        try:
            done = subprocess.run(
                [binary, "--list-langs"], capture_output=True, timeout=30, env=_env(), check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise MissingDependencyError(f"could not run {binary} --list-langs: {exc}") from None
        lines = (done.stdout + done.stderr).decode("utf-8", "replace").splitlines()
        return {ln.strip() for ln in lines if ln.strip() and not ln.startswith("List of ")}

    def recognize(self, image: Any, *, source: str = "image") -> list[OcrBlock]:
        """Paragraphs of every page of ``image`` (a Pillow image, bytes or a path).
        ``source`` names the input in errors."""
        self.warm_up()
        blocks: list[OcrBlock] = []
        for page, frame in _frames(image, source, self.max_pixels, self.max_pages):
            png, dpi = _encode(frame)
            blocks.extend(_parse_tsv(self._run(png, dpi, page, source), page))
        return blocks

    def _run(self, png: bytes, dpi: int | None, page: int, source: str) -> str:
        assert self._binary is not None
        args = [self._binary, "stdin", "stdout", "-l", "+".join(self.languages)]
        if self.psm is not None:
            args += ["--psm", str(self.psm)]
        if dpi:
            args += ["--dpi", str(dpi)]
        args.append("tsv")
        try:
            done = subprocess.run(
                args, input=png, capture_output=True, timeout=self.timeout, env=_env(), check=False
            )
        except subprocess.TimeoutExpired:
            raise ParseError(
                source,
                f"OCR of page {page} took longer than {self.timeout:g} s and was stopped; "
                "raise the OCR timeout or use a smaller image",
            ) from None
        except OSError as exc:
            raise ParseError(source, f"could not run {self._binary}: {exc}") from None
        if done.returncode != 0:
            err = done.stderr.decode("utf-8", "replace").strip()[-500:]
            raise ParseError(
                source, f"tesseract failed on page {page} (exit {done.returncode}): {err}"
            )
        return done.stdout.decode("utf-8", "replace")


def ocr_blocks(
    image: Any, languages: Sequence[str] | str | None = None, **options: Any
) -> list[OcrBlock]:
    """Recognised paragraphs, with confidences, of every page of ``image`` (a Pillow
    image, encoded bytes or a path). ``options`` go to :class:`Tesseract`."""
    return Tesseract(languages, **options).recognize(image)


def ocr_image(image: Any, languages: Sequence[str] | str | None = None, **options: Any) -> str:
    """The text in ``image``: lines separated by newlines, paragraphs by blank lines."""
    return "\n\n".join(block.text for block in ocr_blocks(image, languages, **options))


class ImageParser:
    """Parses images (PNG, JPEG, TIFF incl. multi-page, GIF, WebP, BMP) with Tesseract OCR
    into one paragraph block per recognised paragraph, each with its page number."""

    media_types: tuple[str, ...] = IMAGE_MEDIA_TYPES

    def __init__(self, languages: Sequence[str] | str | None = None, **options: Any) -> None:
        self.tesseract = Tesseract(languages, **options)

    def warm_up(self) -> None:
        self.tesseract.warm_up()

    def parse(self, data: bytes, *, path: Path) -> ParsedDocument:
        self.warm_up()
        opened = _open(data, str(path))
        found = self.tesseract.recognize(opened, source=str(path))
        blocks = [
            Block("paragraph", text, page=b.page)
            for b in found
            if (text := normalize_space(b.text))
        ]
        languages = "+".join(self.tesseract.languages)
        if not blocks:
            raise EmptyDocumentError(
                str(path),
                f"OCR found no text in the image (languages {languages}); check the image, "
                f"or set the document's languages (e.g. {LANGUAGES_ENV}=eng+hun)",
            )
        words = [b for b in found if b.text.strip()]
        metadata: dict[str, Any] = {
            "title_source": "filename",
            "ocr_engine": "tesseract",
            "ocr_languages": languages,
            "pages": max(b.page for b in found),
            "ocr_confidence": round(sum(b.confidence for b in words) / len(words), 1),
        }
        fmt = opened.format or ""
        media_type = _pillow().MIME.get(fmt, f"image/{fmt.lower() or 'unknown'}")
        return ParsedDocument(
            title=path.stem, blocks=tuple(blocks), media_type=media_type, metadata=metadata
        )


# --------------------------------------------------------------------------- helpers


def _pillow() -> Any:
    try:
        from PIL import Image
    except ImportError:
        raise MissingDependencyError(
            'Pillow is not installed - install the "ocr" extra (pip install "ragline[ocr]") '
            "to read images"
        ) from None
    return Image


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("OMP_THREAD_LIMIT", "1")  # tesseract's OpenMP threads only slow it here
    return env


def _open(image: Any, source: str) -> Image:
    """``image`` (a Pillow image, encoded bytes or a path) opened lazily (not decoded)."""
    pil = _pillow()
    if isinstance(image, pil.Image):
        return image
    stream = io.BytesIO(image) if isinstance(image, bytes | bytearray) else image
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", pil.DecompressionBombWarning)
            return pil.open(stream)
    except (pil.DecompressionBombError, pil.DecompressionBombWarning) as exc:
        raise ParseError(source, f"refused as a possible decompression bomb: {exc}") from None
    except (OSError, ValueError, SyntaxError) as exc:
        why = "unknown or damaged image data" if "cannot identify" in str(exc) else str(exc)
        raise ParseError(
            source, f"is not an image Pillow can read ({why}); check that the file is complete"
        ) from None


def _frames(
    image: Any, source: str, max_pixels: int | None, max_pages: int
) -> Iterator[tuple[int, Image]]:
    """(1-based page, frame) of every frame, each checked against the pixel limit before
    it is decoded."""
    opened = _open(image, source)
    limit = max_pixels if max_pixels is not None else _pillow().MAX_IMAGE_PIXELS
    count = getattr(opened, "n_frames", 1) or 1
    for index in range(min(count, max_pages)):
        try:
            if index:
                opened.seek(index)
            width, height = opened.size
            if limit and width * height > limit:
                raise ParseError(
                    source,
                    f"page {index + 1} is {width}x{height} = {width * height:,} pixels, over "
                    f"the limit of {limit:,}; refused as a possible decompression bomb",
                )
            opened.load()
        except ParseError:
            raise
        except (OSError, ValueError, SyntaxError, EOFError) as exc:
            raise ParseError(source, f"could not decode page {index + 1}: {exc}") from None
        yield index + 1, opened


def _encode(frame: Image) -> tuple[bytes, int | None]:
    """PNG bytes of ``frame`` on a white background, and its resolution if known."""
    pil = _pillow()
    image = frame
    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        image = pil.new("RGBA", rgba.size, (255, 255, 255, 255))
        image.alpha_composite(rgba)
    if image.mode not in ("1", "L", "RGB"):
        image = image.convert("RGB")
    dpi: int | None = None
    raw = frame.info.get("dpi")
    if isinstance(raw, tuple) and raw and raw[0]:
        value = round(float(raw[0]))
        dpi = value if 70 <= value <= 2400 else None
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=1)
    return buffer.getvalue(), dpi


def _parse_tsv(tsv: str, page: int) -> list[OcrBlock]:
    lines: dict[tuple[int, int, int], list[tuple[str, float]]] = {}
    boxes: dict[tuple[int, int, int], tuple[int, int, int, int]] = {}
    for row in tsv.splitlines()[1:]:
        cols = row.split("\t")
        if len(cols) < 12:
            continue
        try:
            level, block, par, line = (int(c) for c in (cols[0], cols[2], cols[3], cols[4]))
            box = tuple(int(c) for c in cols[6:10])
            conf = float(cols[10])
        except ValueError:
            continue
        key = (block, par, line)
        if level == 4:
            boxes[key] = box  # type: ignore[assignment]
        elif level == 5 and cols[11].strip():
            lines.setdefault(key, []).append((cols[11].strip(), max(conf, 0.0)))
    paragraphs: dict[tuple[int, int], list[OcrLine]] = {}
    for key, words in lines.items():
        paragraphs.setdefault(key[:2], []).append(
            OcrLine(
                text=" ".join(w for w, _ in words),
                confidence=sum(c for _, c in words) / len(words),
                bbox=boxes.get(key, (0, 0, 0, 0)),
            )
        )
    return [
        OcrBlock(
            text="\n".join(line.text for line in found),
            confidence=sum(line.confidence for line in found) / len(found),
            page=page,
            lines=tuple(found),
        )
        for found in paragraphs.values()
    ]
