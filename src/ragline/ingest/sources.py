"""Where documents come from: files on disk (recursively) or ready-made documents (BEIR corpora)."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import ParseError
from ..core.types import ParsedDocument

if TYPE_CHECKING:
    from ..parse.files import Boundary


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
    boundary: Boundary | None = None
    """The folder ``path`` was found in (a sync): it is read only inside it."""


def doc_key_for(path: Path) -> str:
    """The stable id of a file: its absolute path, resolved."""
    return str(Path(path).expanduser().resolve())


@dataclass(frozen=True)
class Skipped:
    """A file found while walking a folder that is not a document format ragline knows."""

    source: str
    reason: str


def iter_files(
    paths: Iterable[str | Path], *, boundary: Boundary | None = None
) -> Iterator[tuple[Path, ParseError | Skipped | None]]:
    """Every file under ``paths`` (directories recursively, hidden entries skipped), sorted.

    Paths that do not exist are yielded with a :class:`ParseError` so the batch reports
    them and goes on. Inside a folder, symbolic links (to files or folders) are never
    followed, and entries that are no regular file or whose extension is no known
    document format (``.csv``, ``.py``, ...) are yielded as :class:`Skipped`, as is
    whatever a strict ``boundary`` refuses (other file systems, hard links). A file named
    explicitly is always attempted, so its error is reported.
    """
    from ..parse.files import Boundary

    for p in paths:
        path = Path(p).expanduser()
        if path.is_dir():
            root = path.resolve()  # the folder itself may be a link: the operator named it
            yield from _walk(root, boundary or Boundary.of(root))
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


def _walk(root: Path, boundary: Boundary) -> Iterator[tuple[Path, ParseError | Skipped | None]]:
    from ..parse import is_known_extension

    found: list[tuple[Path, ParseError | Skipped | None]] = []
    mounts = boundary.mounts_inside()
    todo = [root]
    while todo:
        folder = todo.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError as exc:
            found.append((folder, ParseError(str(folder), f"cannot list: {exc.strerror or exc}")))
            continue
        for e in entries:
            if e.name.startswith("."):
                continue
            f = folder / e.name
            try:
                st = e.stat(follow_symlinks=False)
            except OSError as exc:
                found.append((f, ParseError(str(f), f"cannot open: {exc.strerror or exc}")))
                continue
            why = boundary.refusal(st, other_mount=str(f) in mounts)
            if stat.S_ISLNK(st.st_mode):
                found.append(
                    (f, Skipped(str(f), "symbolic link: links inside a folder are not followed"))
                )
            elif why:
                found.append((f, Skipped(str(f), why)))
            elif stat.S_ISDIR(st.st_mode):
                todo.append(f)
            elif not stat.S_ISREG(st.st_mode):
                found.append((f, Skipped(str(f), "not a regular file (FIFO, device or socket)")))
            elif is_known_extension(f):
                found.append((f, None))
            else:
                reason = f"not a document format ragline reads ({f.suffix or 'no extension'})"
                found.append((f, Skipped(str(f), reason)))
    yield from sorted(found, key=lambda x: str(x[0]))


def _regular_or_false(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return False


def file_source(path: Path, boundary: Boundary | None = None) -> Source:
    """A :class:`Source` for a file: hashed now, parsed lazily.

    A file found by a folder walk (``boundary``: the folder) is read only inside it and
    keyed by its path under the folder, never by a link's target; a file named explicitly
    is keyed by its resolved path."""
    from ..parse import parse_bytes
    from ..parse.files import open_file, read_file

    if boundary is not None and not boundary.contains(path):
        raise ParseError(str(path), "is not inside the folder being read")
    try:
        with open(open_file(path, boundary), "rb") as f:
            h = hashlib.sha256()
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
            mtime = datetime.fromtimestamp(os.fstat(f.fileno()).st_mtime, tz=UTC)
    except OSError as exc:
        raise ParseError(str(path), f"cannot read the file: {exc.strerror or exc}") from exc
    real = Path(os.path.normpath(path)) if boundary is not None else Path(path).resolve()
    return Source(
        doc_key=str(real),
        source_uri=str(real),
        content_hash=h.hexdigest(),
        load=lambda: parse_bytes(read_file(real, boundary), path=real),
        modified_at=mtime,
        path=real,
        boundary=boundary,
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
