"""What the HTTP and MCP faces show of internal values: the public view of a response.

Three rules, applied to every response body a key receives (the CLI and Python API show
internal values, for the operator):

- **Opaque ids.** ``chunk_id``, ``document_id`` and ``merged_chunks`` anywhere, and the
  ids of documents, jobs and keys, are shown encrypted (:mod:`ragline.serve.ids`), and
  ids in paths are decrypted; an id that does not decrypt is unknown (404).
- **No server paths.** A ``source`` or ``doc_key`` that is an absolute file path is shown
  relative to the caller's tenant's sync root that holds it (``handbook/parking.md``),
  else as its file name; a ``source`` filter given relative is widened back to the roots.
- **Inert answers.** An answer's text is made of document text, which may hold markup
  (``<img src=x onerror=…>``). In answers (text, claims, citations, streamed pieces) a
  ``<`` that would open an HTML tag becomes ``&lt;`` and a Markdown link to a
  ``javascript:``/``vbscript:``/``data:`` URL loses its link syntax, so a chat UI that
  renders Markdown or HTML shows the text instead of running it. Search hits keep the
  passage text verbatim (it is data: render it as text).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from .ids import IdCodec

_ID_KEYS = {"chunk_id": "chk", "document_id": "doc"}
_PATH_KEYS = ("source", "doc_key")
_TAG = re.compile(r"<(?=[A-Za-z/!?]|\Z)")
_SCHEME = re.compile(r"\]\((?=\s*<?\s*(?:javascript|vbscript|data)\s*:)", re.IGNORECASE)


def neutralize(text: str) -> str:
    """``text`` with HTML tags and script links made inert (see the module docstring)."""
    if "<" not in text and "](" not in text:
        return text
    return _SCHEME.sub(r"\\](", _TAG.sub("&lt;", text))


class PublicView:
    """Turns internal response values into what a caller of ``tenant`` may see."""

    def __init__(self, codec: IdCodec, roots: Callable[[str], Iterable[Path]] = lambda _t: ()):
        self.codec = codec
        self.roots = roots

    # -- ids --------------------------------------------------------------------------
    def id(self, kind: str, n: int) -> str:
        return self.codec.encode(kind, int(n))

    def internal(self, kind: str, text: str) -> int | None:
        return self.codec.decode(kind, text)

    # -- whole bodies -----------------------------------------------------------------
    def out(self, obj: Any, tenant: str) -> Any:
        """``obj`` (a JSON-ready value) with ids encrypted and server paths hidden."""
        roots = [str(r) for r in self.roots(tenant)]
        return self._walk(obj, roots)

    def _walk(self, obj: Any, roots: list[str]) -> Any:
        if isinstance(obj, dict):
            out: dict[str, Any] = {}
            for k, v in obj.items():
                if k in _ID_KEYS and isinstance(v, int) and not isinstance(v, bool):
                    out[k] = self.codec.encode(_ID_KEYS[k], v)
                elif k == "merged_chunks" and isinstance(v, list):
                    out[k] = [self.codec.encode("chk", int(x)) for x in v]
                elif k in _PATH_KEYS and isinstance(v, str):
                    out[k] = hide_path(v, roots)
                else:
                    out[k] = self._walk(v, roots)
            return out
        if isinstance(obj, list):
            return [self._walk(v, roots) for v in obj]
        return obj

    def answer(self, d: Mapping[str, Any], tenant: str) -> dict[str, Any]:
        """An :func:`~ragline.core.trace.answer_dict` as shown: :meth:`out`, and its
        document-made text inert."""
        a = dict(self.out(d, tenant))
        a["answer"] = neutralize(a.get("answer") or "")
        a["claims"] = [{**c, "text": neutralize(c.get("text") or "")} for c in a.get("claims", ())]
        a["citations"] = [self.citation(c) for c in a.get("citations", ())]
        return a

    def citation(self, c: Mapping[str, Any]) -> dict[str, Any]:
        out = dict(c)
        for k in ("title", "quote", "text"):
            if isinstance(out.get(k), str):
                out[k] = neutralize(out[k])
        out["heading_path"] = [neutralize(h) for h in out.get("heading_path") or ()]
        return out

    def filters_in(self, filters: Mapping[str, Any] | None, tenant: str) -> Any:
        """Request filters with a relative ``source`` prefix widened to the tenant's roots
        (what :func:`hide_path` showed; absolute and ``upload:`` prefixes stay)."""
        if not filters or "source" not in filters:
            return filters
        roots = [str(r) for r in self.roots(tenant)]
        value = filters["source"]
        items = value if isinstance(value, list) else str(value).split("|")
        widened: list[str] = []
        for v in items:
            v = str(v)
            widened.append(v)
            if v and not v.startswith("/") and ":" not in v:
                widened += [str(PurePosixPath(r) / v) for r in roots]
        return {**filters, "source": widened}


def hide_path(value: str, roots: Iterable[str]) -> str:
    """An absolute file path shown without the server's folders: relative to the root
    holding it, else the file name; anything else (``upload:…``, URLs) as it is."""
    if not value.startswith("/"):
        return value
    best = ""
    for r in roots:
        r = r.rstrip("/")
        if value.startswith(r + "/") and len(r) > len(best):
            best = r
    if best:
        return value[len(best) + 1 :]
    return PurePosixPath(value).name
