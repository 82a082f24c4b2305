"""Large array values sent to PostgreSQL in encodings psycopg does not build per element.

psycopg adapts a Python list one element at a time in Python (about 9 µs per element
for a query parameter, a few µs per list in a COPY row), which made the array parameters
of a BM25 write (tens of thousands of terms per batch) cost more than the statement. These
build the same values in one pass of C-level string operations:

- :func:`ints` — an integer array as its text literal; cast it in SQL (``%s::int8[]``);
- :func:`words` — strings without spaces (analyzer terms) joined by spaces; split them in
  SQL with ``string_to_array(%s, ' ')``;
- :func:`text_array_binary` — a ``text[]`` in PostgreSQL's binary array format, for a
  binary COPY column declared ``bytea`` (COPY hands the bytes to the column's receive
  function as they are);
- :func:`vector_binary` — a pgvector ``vector`` in its binary format, the same way.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

_TEXT_OID = 25
_ARRAY_HEAD = struct.Struct(">iiIii")
_EMPTY = struct.pack(">iiI", 0, 0, _TEXT_OID)
_LENGTH = struct.Struct(">i")


def ints(values: Iterable[int]) -> str:
    """``{1,2,3}``: an integer array parameter for ``%s::int8[]`` (or ``::int[]``)."""
    return "{" + ",".join(map(str, values)) + "}"


def words(values: Sequence[str]) -> str:
    """Space-free strings as one parameter for ``string_to_array(%s, ' ')``."""
    return " ".join(values)


_VECTOR_HEAD = struct.Struct(">HH")


def vector_binary(v: Any) -> bytes | None:
    """pgvector's binary ``vector``: dim (uint16), 0 (uint16), float4s — big-endian (a
    binary COPY hands it to ``vector_recv`` as it is; the text form costs ~0.3 ms of
    Python per 384-d vector)."""
    if v is None:
        return None
    if hasattr(v, "to_numpy"):  # a pgvector Vector (from the embedding cache)
        v = v.to_numpy()
    a = np.asarray(v, dtype=">f4").ravel()
    return _VECTOR_HEAD.pack(len(a), 0) + a.tobytes()


@lru_cache(maxsize=4096)
def text_array_binary(values: tuple[str, ...]) -> bytes:
    """``values`` as a one-dimensional ``text[]`` in the binary wire format (cached: a
    batch repeats the same group sets and heading paths)."""
    if not values:
        return _EMPTY
    head = _ARRAY_HEAD.pack(1, 0, _TEXT_OID, len(values), 1)
    parts = [head]
    for v in values:
        b = v.encode()
        parts.append(_LENGTH.pack(len(b)))
        parts.append(b)
    return b"".join(parts)
