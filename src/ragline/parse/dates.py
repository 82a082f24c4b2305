"""A document's own date, from the metadata its parser extracted.

Front matter (``last_updated: 2024-06-18``, ``date``, ``updated`` ...), PDF and DOCX
properties (``modified``, ``created``) and HTML ``<meta>`` dates all land in a parsed
document's metadata; :func:`document_date` picks the one that says when the content was
last changed. The file's modification time is only the fallback (the caller's): a copy,
a checkout or an unzip resets it, the document's own date survives them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, date, datetime
from typing import Any

DATE_KEYS = (
    "modified", "last_modified", "last_updated", "lastmod", "updated", "date_modified",
    "datemodified", "revised", "date", "published", "date_published", "datepublished",
    "created", "date_created",
)  # fmt: skip
"""Metadata keys holding a document date, the most telling first (case, ``-`` and ``_``
ignored): a change date beats a publication date beats a creation date."""

HTML_META_DATES = {
    "article:modified_time": "modified", "og:updated_time": "modified",
    "last-modified": "modified", "dcterms.modified": "modified", "dc.date.modified": "modified",
    "date": "date", "dc.date": "date", "dcterms.date": "date",
    "article:published_time": "published", "dcterms.created": "created",
}  # fmt: skip
"""``<meta name|property|http-equiv=...>`` names the HTML parser keeps, and the metadata key
each becomes."""

_DAY_FIRST = re.compile(r"^(\d{1,2})[./](\d{1,2})[./](\d{4})$")


def _norm(key: str) -> str:
    return key.casefold().replace("-", "_").replace(" ", "_")


def parse_date(value: Any) -> datetime | None:
    """``2024-06-18``, ``2024-06-18T09:30:00+02:00``, ``2024-06-18 09:30``, a
    ``datetime``/``date`` -> an aware datetime (UTC when no zone is given); else None."""
    if isinstance(value, datetime):
        d = value
    elif isinstance(value, date):
        d = datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            d = datetime.fromisoformat(text)
        except ValueError:
            m = _DAY_FIRST.match(text)  # 18.06.2024 (day first: the common European order)
            if not m:
                return None
            try:
                d = datetime(int(m.group(3)), int(m.group(2)), int(m.group(1)))
            except ValueError:
                return None
    else:
        return None
    if not 1900 <= d.year <= 2200:
        return None
    return d if d.tzinfo else d.replace(tzinfo=UTC)


def document_date(metadata: Mapping[str, Any]) -> datetime | None:
    """The document's own date from its metadata (see :data:`DATE_KEYS`), or None."""
    by_key = {_norm(str(k)): v for k, v in metadata.items()}
    for key in DATE_KEYS:
        if key in by_key and (d := parse_date(by_key[key])) is not None:
            return d
    return None
