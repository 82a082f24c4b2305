"""Metadata filters a caller can put on a search; applied inside both retrieval legs.

Known keys: ``language`` (ISO code, e.g. ``hu``), ``type`` (media type or a short name:
md, txt, html, pdf, docx, image), ``source`` (path/URI prefix), ``modified_after`` /
``modified_before`` / ``ingested_after`` / ``ingested_before`` (ISO dates). Any other key
matches the document's metadata (front matter, ``--meta key=value``, parser metadata) by
string equality. Several values for one key (a list, or ``a|b``) mean "any of these".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from .errors import ConfigError

SHORT_TYPES = {
    "md": "text/markdown",
    "markdown": "text/markdown",
    "txt": "text/plain",
    "text": "text/plain",
    "html": "text/html",
    "pdf": "application/pdf",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
}
DATE_KEYS = ("modified_after", "modified_before", "ingested_after", "ingested_before")
KNOWN_KEYS = ("language", "type", "source", *DATE_KEYS)


def _values(v: Any) -> tuple[str, ...]:
    if isinstance(v, (list, tuple, set, frozenset)):
        items = [str(x) for x in v]
    else:
        items = str(v).split("|")
    out = tuple(x.strip() for x in items if str(x).strip())
    if not out:
        raise ConfigError("a filter needs a value, e.g. language=hu")
    return out


def _date(key: str, v: Any) -> datetime:
    if isinstance(v, datetime):
        d = v
    else:
        try:
            d = datetime.fromisoformat(str(v))
        except ValueError as exc:
            raise ConfigError(
                f"filter {key}={v!r}: not an ISO date (use e.g. 2024-06-30 or 2024-06-30T12:00)"
            ) from exc
    return d if d.tzinfo else d.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Filters:
    languages: tuple[str, ...] = ()
    media_types: tuple[str, ...] = ()
    source_prefixes: tuple[str, ...] = ()
    dates: Mapping[str, datetime] = field(default_factory=dict)
    metadata: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @classmethod
    def parse(cls, spec: Mapping[str, Any] | None) -> Filters | None:
        """Build filters from ``{"language": "hu", "product": "X-570", ...}``; None if empty."""
        if not spec:
            return None
        langs: tuple[str, ...] = ()
        types: tuple[str, ...] = ()
        sources: tuple[str, ...] = ()
        dates: dict[str, datetime] = {}
        meta: dict[str, tuple[str, ...]] = {}
        for key, value in spec.items():
            k = str(key).strip()
            if not k:
                raise ConfigError("a filter key is empty; use KEY=VALUE")
            if k == "language":
                langs = tuple(v.lower() for v in _values(value))
            elif k == "type":
                types = tuple(SHORT_TYPES.get(v.lower(), v.lower()) for v in _values(value))
            elif k == "source":
                sources = _values(value)
            elif k in DATE_KEYS:
                dates[k] = _date(k, value)
            else:
                meta[k] = _values(value)
        return cls(langs, types, sources, dates, meta)

    @classmethod
    def from_pairs(cls, pairs: Any) -> Filters | None:
        """From CLI ``KEY=VALUE`` strings (a key may repeat: any of the values matches)."""
        spec: dict[str, list[str]] = {}
        for pair in pairs or ():
            if "=" not in pair:
                raise ConfigError(
                    f"filter {pair!r} is not KEY=VALUE; known keys: {', '.join(KNOWN_KEYS)} or any metadata key"
                )
            k, v = pair.split("=", 1)
            spec.setdefault(k.strip(), []).extend(_values(v))
        return cls.parse(spec)

    def sql(self, doc_alias: str = "d") -> tuple[str, dict[str, Any]]:
        """A condition on a ``documents`` row and its parameters."""
        d = doc_alias
        parts: list[str] = []
        params: dict[str, Any] = {}
        if self.languages:
            parts.append(f"{d}.language = ANY(%(f_lang)s)")
            params["f_lang"] = list(self.languages)
        if self.media_types:
            parts.append(f"{d}.media_type = ANY(%(f_type)s)")
            params["f_type"] = list(self.media_types)
        if self.source_prefixes:
            ors = []
            for i, prefix in enumerate(self.source_prefixes):
                ors.append(f"starts_with({d}.source_uri, %(f_src{i})s)")
                params[f"f_src{i}"] = prefix
            parts.append("(" + " OR ".join(ors) + ")")
        ops = {
            "modified_after": (f"{d}.modified_at", ">="),
            "modified_before": (f"{d}.modified_at", "<"),
            "ingested_after": (f"{d}.ingested_at", ">="),
            "ingested_before": (f"{d}.ingested_at", "<"),
        }
        for key, when in self.dates.items():
            col, op = ops[key]
            parts.append(f"{col} {op} %(f_{key})s")
            params[f"f_{key}"] = when
        for i, (key, values) in enumerate(sorted(self.metadata.items())):
            parts.append(f"({d}.metadata ->> %(f_mk{i})s) = ANY(%(f_mv{i})s)")
            params[f"f_mk{i}"] = key
            params[f"f_mv{i}"] = list(values)
        return (" AND ".join(parts) or "TRUE"), params
