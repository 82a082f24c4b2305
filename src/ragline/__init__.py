"""ragline: retrieval-augmented generation over your own documents, with cited answers.

``ragline.open(path_or_url)`` returns an :class:`~ragline.index.Index` with ``ingest``,
``delete``, ``search`` and ``ask``. Heavy dependencies load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .core.errors import RaglineError
from .core.requests import AskRequest, SearchRequest
from .core.types import ABSTAIN_SENTENCE, Answer, Citation, Hit, Principal

__version__ = "0.1.0"
__all__ = [
    "open",
    "Index",
    "Answer",
    "Citation",
    "Hit",
    "Principal",
    "SearchRequest",
    "AskRequest",
    "RaglineError",
    "ABSTAIN_SENTENCE",
]

if TYPE_CHECKING:
    from .index import Index


def open(target: Any = None, **kwargs: Any) -> Index:  # noqa: A001 - the documented name
    """Open a ragline index on a data directory or a ``postgresql://`` URL (see :func:`ragline.index.open`)."""
    from .index import open as _open

    return _open(target, **kwargs)


def __getattr__(name: str) -> Any:
    if name == "Index":
        from .index import Index

        return Index
    raise AttributeError(name)
