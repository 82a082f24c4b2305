"""Request size limits every entry point shares (settings ``max_query_chars``,
``max_filter_chars``, ``max_filter_values``): checked before any work, so an oversized
query or filter is refused with a :class:`~ragline.core.errors.LimitError` naming the
setting, and nothing is searched or stored (no trace of it either)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import LimitError


def check_text(text: str, limit: int, what: str = "query") -> None:
    if len(text) > limit:
        raise LimitError(
            f"the {what} has {len(text):,} characters, more than the {limit:,} allowed "
            "(setting max_query_chars); shorten it"
        )


def check_filters(filters: Mapping[str, Any] | None, max_chars: int, max_values: int) -> None:
    """Filters as a request sends them: ``{key: value | [values]}``."""
    if not filters:
        return
    chars = values = 0
    for key, value in filters.items():
        items = value if isinstance(value, (list, tuple, set, frozenset)) else [value]
        values += len(items)
        chars += len(str(key)) + sum(len(str(v)) for v in items)
        if values > max_values:
            raise LimitError(
                f"the filters have more than {max_values:,} values (setting "
                "max_filter_values); filter on fewer values"
            )
    if chars > max_chars:
        raise LimitError(
            f"the filters have {chars:,} characters, more than the {max_chars:,} allowed "
            "(setting max_filter_chars); use shorter filter values"
        )
