"""Where documents come from: files on disk (recursively) or ready-made documents (BEIR corpora)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..core.errors import ParseError
from ..core.types import ParsedDocument


@dataclass(frozen=True)
class Source:
    """One document to ingest. ``load`` parses it only when it has changed."""

    doc_key: str
    source_uri: str
    content_hash: str
    load: Callable[[], ParsedDocument]
    modified_at: datetime | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    path: Path | None = None
    """A file on disk: parsed in a worker process (time- and memory-limited) when set."""


def doc_key_for(path: Path) -> str:
    """The stable id of a file: its absolute path, resolved."""
    return str(Path(path).expanduser().resolve())


@dataclass(frozen=True)
class Skipped:
    """A file found while walking a folder that is not a document format ragline knows."""

    source: str
    reason: str


def iter_files(paths: Iterable[str | Path]) -> Iterator[tuple[Path, ParseError | Skipped | None]]:
    """Every file under ``paths`` (directories recursively, hidden entries skipped), sorted.

    Paths that do not exist are yielded with a :class:`ParseError` so the batch reports
    them and goes on. Files met while walking a folder whose extension is no known
    document format (``.csv``, ``.py``, ...) are yielded as :class:`Skipped`; a file named
    explicitly is always attempted, so its error is reported.
    """
    from ..parse import is_known_extension

    for p in paths:
        path = Path(p).expanduser()
        if path.is_dir():
            found = []
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                found.extend(Path(root) / f for f in files if not f.startswith("."))
            for f in sorted(found):
                try:
                    regular = _is_regular(f)
                except OSError as exc:  # a broken link or a link loop: say so
                    yield f, ParseError(str(f), f"cannot open: {exc.strerror or exc}")
                    continue
                if not regular:
                    yield f, Skipped(str(f), "not a regular file (FIFO, device or socket)")
                elif is_known_extension(f):
                    yield f, None
                else:
                    yield (
                        f,
                        Skipped(
                            str(f),
                            f"not a document format ragline reads ({f.suffix or 'no extension'})",
                        ),
                    )
        elif path.is_file() and _regular_or_false(path):
            yield path, None
        elif path.exists():
            yield (
                path,
                ParseError(
                    str(path), "not a regular file (FIFO, device or socket); nothing to read"
                ),
            )
        else:
            yield path, ParseError(str(path), "no such file or directory")


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _is_regular(path: Path) -> bool:
    """Whether ``path`` (links followed) is a regular file; OSError for broken links/loops."""
    import stat

    return stat.S_ISREG(path.stat().st_mode)


def _regular_or_false(path: Path) -> bool:
    try:
        return _is_regular(path)
    except OSError:
        return False


def file_source(path: Path) -> Source:
    """A :class:`Source` for a file: hashed now, parsed lazily."""
    from ..parse import parse_bytes

    try:
        digest = _file_digest(path)
        mtime = datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)
    except OSError as exc:
        raise ParseError(str(path), f"cannot read the file: {exc.strerror or exc}") from exc
    return Source(
        doc_key=doc_key_for(path),
        source_uri=str(path.resolve()),
        content_hash=digest,
        load=lambda: parse_bytes(path.read_bytes(), path=path),
        modified_at=mtime,
        path=path,
    )


def text_source(
    doc_key: str,
    title: str,
    text: str,
    *,
    source_uri: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> Source:
    """A :class:`Source` for text that is not a file (e.g. a BEIR corpus entry)."""
    from ..core.types import Block

    digest = hashlib.sha256(f"{title}\x00{text}".encode()).hexdigest()

    def load() -> ParsedDocument:
        paragraphs = [p.strip() for p in text.split("\n\n") if p.strip()] or [text.strip()]
        blocks = tuple(Block(kind="paragraph", text=p) for p in paragraphs if p)
        return ParsedDocument(
            title=title, blocks=blocks, media_type="text/plain", metadata=dict(metadata or {})
        )

    return Source(
        doc_key=doc_key,
        source_uri=source_uri or doc_key,
        content_hash=digest,
        load=load,
        metadata=dict(metadata or {}),
    )
