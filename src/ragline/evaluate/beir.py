"""Read a dataset in the BEIR layout: ``corpus.jsonl``, ``queries.jsonl`` and
``qrels/<split>.tsv`` in one folder.

Files are read line by line, so a large corpus is never held as raw text; use
:func:`iter_corpus` to stream documents without building the corpus dict.
Every malformed line is reported with its file and line number.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragline.core.errors import ConfigError, NotFoundError

__all__ = [
    "BeirDataset",
    "BeirDoc",
    "BeirFormatError",
    "available_splits",
    "fingerprint",
    "iter_corpus",
    "load_beir",
]

CORPUS_FILE = "corpus.jsonl"
QUERIES_FILE = "queries.jsonl"
QRELS_DIR = "qrels"
_FINGERPRINT_BLOCK = 64 * 1024


class BeirFormatError(ConfigError):
    """A line of a BEIR file is malformed. ``path`` and ``line`` locate it."""

    def __init__(self, path: Path, line: int, reason: str) -> None:
        super().__init__(f"{path}:{line}: {reason}")
        self.path = path
        self.line = line
        self.reason = reason


@dataclass(frozen=True)
class BeirDoc:
    """One corpus document."""

    doc_id: str
    title: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def full_text(self) -> str:
        """Title and text joined by a space: what BEIR systems index."""
        return f"{self.title} {self.text}".strip()


@dataclass(frozen=True)
class BeirDataset:
    """A BEIR dataset restricted to one split: only the split's judged queries."""

    name: str
    split: str
    corpus: dict[str, BeirDoc]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


# --------------------------------------------------------------------- paths
def _dataset_dir(path: Path | str) -> Path:
    root = Path(path)
    if not root.exists():
        raise NotFoundError(
            f"BEIR dataset folder {root} does not exist; pass the folder that holds "
            f"{CORPUS_FILE}, {QUERIES_FILE} and {QRELS_DIR}/<split>.tsv"
        )
    if not root.is_dir():
        raise NotFoundError(
            f"{root} is not a folder; pass the BEIR dataset folder that holds "
            f"{CORPUS_FILE}, {QUERIES_FILE} and {QRELS_DIR}/<split>.tsv"
        )
    return root


def _required_file(root: Path, name: str) -> Path:
    path = root / name
    if not path.is_file():
        raise NotFoundError(
            f"{path} is missing; a BEIR dataset folder needs {CORPUS_FILE}, "
            f"{QUERIES_FILE} and {QRELS_DIR}/<split>.tsv"
        )
    return path


def _corpus_file(path: Path | str) -> Path:
    """``path`` may be the dataset folder or the corpus file itself."""
    p = Path(path)
    if p.is_file():
        return p
    return _required_file(_dataset_dir(p), CORPUS_FILE)


def available_splits(path: Path | str) -> list[str]:
    """Names of the splits that have a ``qrels/<split>.tsv`` file, sorted."""
    qrels_dir = Path(path) / QRELS_DIR
    if not qrels_dir.is_dir():
        return []
    return sorted(p.stem for p in qrels_dir.glob("*.tsv") if p.is_file())


# ------------------------------------------------------------------- readers
def json_lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line of a JSON-lines file; a line that is
    not a JSON object is a :class:`BeirFormatError` naming the file and line."""
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise BeirFormatError(path, lineno, f"invalid JSON ({exc.msg})") from None
            if not isinstance(obj, dict):
                raise BeirFormatError(
                    path, lineno, f"expected a JSON object, got {type(obj).__name__}"
                )
            yield lineno, obj


def _id_of(obj: dict[str, Any], path: Path, lineno: int) -> str:
    raw = obj.get("_id")
    if isinstance(raw, bool) or not isinstance(raw, (str, int)) or raw == "":
        raise BeirFormatError(path, lineno, f'"_id" must be a non-empty string, got {raw!r}')
    return str(raw)


def _str_field(obj: dict[str, Any], key: str, path: Path, lineno: int) -> str:
    value = obj.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise BeirFormatError(path, lineno, f'"{key}" must be a string, got {type(value).__name__}')
    return value


def iter_corpus(path: Path | str) -> Iterator[BeirDoc]:
    """Stream the corpus documents in file order.

    ``path`` is the dataset folder or its ``corpus.jsonl``. Missing ``title`` or
    ``text`` read as ""; ``_id`` is required. Duplicate ids are not checked here
    (:func:`load_beir` does). A missing file raises here, not on first use.
    """
    corpus_path = _corpus_file(path)  # eager, so a bad path fails at the call
    return (doc for _, doc in _corpus_lines(corpus_path))


def _corpus_lines(corpus_path: Path) -> Iterator[tuple[int, BeirDoc]]:
    for lineno, obj in json_lines(corpus_path):
        doc_id = _id_of(obj, corpus_path, lineno)
        metadata = obj.get("metadata")
        if metadata is None:
            metadata = {}
        elif not isinstance(metadata, dict):
            raise BeirFormatError(
                corpus_path,
                lineno,
                f'"metadata" must be a JSON object, got {type(metadata).__name__}',
            )
        yield (
            lineno,
            BeirDoc(
                doc_id=doc_id,
                title=_str_field(obj, "title", corpus_path, lineno),
                text=_str_field(obj, "text", corpus_path, lineno),
                metadata=metadata,
            ),
        )


def _read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as fh:
        header = fh.readline()
        cols = header.rstrip("\r\n").split("\t")
        if cols[:2] != ["query-id", "corpus-id"]:
            raise BeirFormatError(
                path,
                1,
                f"expected the header 'query-id<TAB>corpus-id<TAB>score', got {header.strip()!r}",
            )
        for lineno, line in enumerate(fh, 2):
            if not line.strip():
                continue
            parts = line.rstrip("\r\n").split("\t")
            if len(parts) != 3:
                raise BeirFormatError(
                    path,
                    lineno,
                    f"expected 3 tab-separated columns (query-id, corpus-id, score), "
                    f"got {len(parts)}: {line.strip()!r}",
                )
            qid, did, raw_score = (p.strip() for p in parts)
            if not qid or not did:
                raise BeirFormatError(path, lineno, "empty query-id or corpus-id")
            try:
                score = int(raw_score)
            except ValueError:
                raise BeirFormatError(
                    path, lineno, f"score must be an integer, got {raw_score!r}"
                ) from None
            rels = qrels.setdefault(qid, {})
            if did in rels and rels[did] != score:
                raise BeirFormatError(
                    path,
                    lineno,
                    f"query {qid!r} judges doc {did!r} twice with different scores "
                    f"({rels[did]} and {score})",
                )
            rels[did] = score
    return qrels


# -------------------------------------------------------------------- public
def load_beir(path: Path | str, split: str = "test") -> BeirDataset:
    """Load a BEIR dataset folder, keeping only the queries judged in ``split``.

    Raises ``NotFoundError`` when the folder, a file or the split is missing
    (the message lists the available splits), ``BeirFormatError`` (a
    ``ConfigError``) for a malformed line or a duplicate id, and ``ConfigError``
    when a judged query is missing from ``queries.jsonl``.
    """
    root = _dataset_dir(path)
    corpus_path = _required_file(root, CORPUS_FILE)
    queries_path = _required_file(root, QUERIES_FILE)
    qrels_path = root / QRELS_DIR / f"{split}.tsv"
    if not qrels_path.is_file():
        splits = available_splits(root)
        choices = ", ".join(repr(s) for s in splits) if splits else "none"
        raise NotFoundError(
            f"split {split!r} not found: {qrels_path} is missing; "
            f"available splits in {root / QRELS_DIR}: {choices}"
        )

    qrels = _read_qrels(qrels_path)

    queries: dict[str, str] = {}
    for lineno, obj in json_lines(queries_path):
        qid = _id_of(obj, queries_path, lineno)
        text = _str_field(obj, "text", queries_path, lineno)
        if qid in qrels:
            if qid in queries:
                raise BeirFormatError(queries_path, lineno, f"duplicate query id {qid!r}")
            queries[qid] = text
    missing = [q for q in qrels if q not in queries]
    if missing:
        raise ConfigError(
            f"{len(missing)} queries judged in {qrels_path} are not in {queries_path}, "
            f"e.g. {missing[:5]}; the qrels and queries files do not belong together"
        )

    corpus: dict[str, BeirDoc] = {}
    first_line: dict[str, int] = {}
    for lineno, doc in _corpus_lines(corpus_path):
        if doc.doc_id in corpus:
            raise BeirFormatError(
                corpus_path,
                lineno,
                f"duplicate doc id {doc.doc_id!r} (first seen on line {first_line[doc.doc_id]})",
            )
        corpus[doc.doc_id] = doc
        first_line[doc.doc_id] = lineno

    return BeirDataset(name=root.name, split=split, corpus=corpus, queries=queries, qrels=qrels)


def fingerprint(path: Path | str) -> str:
    """A short id of the corpus file: sha256 over its size, mtime and first and
    last 64 KiB, as 16 hex digits.

    Cheap even for a large corpus; used to tell whether a stored evaluation
    collection was built from this data. Because the mtime is included,
    touching or copying the file also changes the fingerprint.
    """
    corpus_path = _corpus_file(path)
    stat = corpus_path.stat()
    h = hashlib.sha256(f"{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    with corpus_path.open("rb") as fh:
        h.update(fh.read(_FINGERPRINT_BLOCK))
        if stat.st_size > _FINGERPRINT_BLOCK:
            fh.seek(max(stat.st_size - _FINGERPRINT_BLOCK, _FINGERPRINT_BLOCK))
            h.update(fh.read(_FINGERPRINT_BLOCK))
    return h.hexdigest()[:16]
