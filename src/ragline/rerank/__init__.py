"""Rerankers behind one protocol (:class:`ragline.core.protocols.Reranker`).

* :class:`CrossEncoderReranker`: a local cross-encoder model directory exported to ONNX
  (``model.onnx`` or ``onnx/model.onnx`` + ``tokenizer.json``), on ONNX Runtime. No
  cross-encoder ships in any wheel ragline depends on and nothing is downloaded: point it
  at a directory you exported (``optimum-cli export onnx --model <model> <dir>``).
* :class:`HttpReranker`: a rerank server, TEI (``api="tei"``) or the Cohere/Jina shape
  (``api="cohere"``, also served by vLLM, Infinity and llama.cpp).

Both return new :class:`~ragline.core.types.Hit` values built by :func:`rank_by_scores`:
the rerank score in ``scores["rerank"]`` and ``score``, the new 1-based position in
``ranks["rerank"]`` and ``rank``. The classes are imported on first use, so importing
this package stays light.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..core.backends import Registry, Spec
from ..core.errors import ConfigError

if TYPE_CHECKING:
    from ..core.types import Hit
    from .cross_encoder import CrossEncoderReranker
    from .http import HttpReranker, RerankAPIError

__all__ = [
    "CrossEncoderReranker",
    "HttpReranker",
    "RerankAPIError",
    "get_reranker",
    "rank_by_scores",
]

STAGE = "rerank"
"""The key rerankers write into ``Hit.scores`` and ``Hit.ranks``."""


def _onnx(spec: Spec, opt: dict[str, Any]) -> Any:
    from .cross_encoder import CrossEncoderReranker

    return CrossEncoderReranker(spec.path(), latency_budget_ms=opt.get("latency_budget_ms"))


def _tei(spec: Spec, _opt: dict[str, Any]) -> Any:
    from .http import HttpReranker

    return HttpReranker(spec.url(), api="tei")


def _cohere(spec: Spec, _opt: dict[str, Any]) -> Any:
    from .http import HttpReranker

    at = max(spec.target.rfind("@http://"), spec.target.rfind("@https://"))
    if at < 0:  # the model may be left out: cohere:@http://host/v1
        raise ConfigError(f"{spec.text!r} names no server; write cohere:MODEL@http://host:port/v1")
    model, url = spec.target[:at], spec.target[at + 1 :]
    return HttpReranker(url, model=model or None, api="cohere", api_key_env="RERANK_API_KEY")


RERANKERS = Registry("rerankers", noun="reranker")
RERANKERS.add(
    "onnx", _onnx, usage="onnx:/path/to/dir", about="a local cross-encoder exported to ONNX"
)
RERANKERS.add(
    "tei",
    _tei,
    usage="tei:http://host:port",
    about="a Text Embeddings Inference /rerank server",
)
RERANKERS.add(
    "cohere",
    _cohere,
    usage="cohere:MODEL@http://host:port/v1",
    about="a Cohere/Jina-shaped /rerank server (vLLM, Infinity, llama.cpp)",
)
RERANKER_SPECS = RERANKERS.usages()


def get_reranker(spec: str, *, latency_budget_ms: float | None = None) -> Any:
    """Build a reranker from a spec string (see :data:`RERANKER_SPECS`)."""
    return RERANKERS.create(spec, latency_budget_ms=latency_budget_ms)


def rank_by_scores(hits: Sequence[Hit], scores: Sequence[float | None], top_k: int) -> list[Hit]:
    """The best ``top_k`` of ``hits`` reordered by ``scores`` (one per hit, ``None`` for a
    hit that was not scored).

    Scored hits come first, highest score first; ties keep their input order (the
    first-stage rank). Unscored hits follow in input order and keep their first-stage
    ``score``; they get a rank but no ``scores["rerank"]``, which is how to tell them
    apart. Input hits are never modified.
    """
    if len(scores) != len(hits):
        raise ValueError(f"{len(scores)} scores for {len(hits)} hits")
    if top_k < 0:
        raise ConfigError(f"top_k must be ≥ 0, got {top_k}")
    for s in scores:
        if s is not None and math.isnan(s):
            raise ValueError("a rerank score is NaN; the model or server is broken")
    scored = sorted(
        (i for i, s in enumerate(scores) if s is not None),
        key=lambda i: (-float(scores[i]), i),  # type: ignore[arg-type]
    )
    unscored = [i for i, s in enumerate(scores) if s is None]
    out: list[Hit] = []
    for rank, i in enumerate((scored + unscored)[:top_k], start=1):
        hit, s = hits[i], scores[i]
        ranks = {**hit.ranks, STAGE: rank}
        if s is None:
            out.append(replace(hit, rank=rank, ranks=ranks))
        else:
            out.append(
                replace(
                    hit,
                    score=float(s),
                    rank=rank,
                    scores={**hit.scores, STAGE: float(s)},
                    ranks=ranks,
                )
            )
    return out


def __getattr__(name: str) -> Any:
    if name == "CrossEncoderReranker":
        from .cross_encoder import CrossEncoderReranker

        return CrossEncoderReranker
    if name in ("HttpReranker", "RerankAPIError"):
        from . import http

        return getattr(http, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
