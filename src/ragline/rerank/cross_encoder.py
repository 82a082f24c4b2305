"""A local cross-encoder model directory exported to ONNX, on ONNX Runtime (no torch).

What the directory holds (a sentence-transformers ``CrossEncoder`` saved, then exported
with ``optimum-cli export onnx --task text-classification``):

* ``model.onnx`` or ``onnx/model.onnx`` (required): inputs ``input_ids`` and optionally
  ``attention_mask``, ``token_type_ids``; its ``logits`` output (else its first output)
  is ``(batch, num_labels)``.
* ``tokenizer.json`` (required; the Hugging Face ``tokenizers`` format).
* ``config.json`` (optional): ``num_labels`` / ``id2label`` and ``max_position_embeddings``.

Scores: with one label, the raw logit (sentence-transformers applies a sigmoid on top,
which does not change the order). With two or more labels, the softmax probability of the
positive label: the ``id2label`` entry named like ``1``, ``LABEL_1``, ``positive``,
``relevant``, ``yes``, ``true`` or ``entailment``, else label 1 of two.

Each (query, passage) pair is tokenized as the model was trained on it
(``[CLS] query [SEP] passage [SEP]`` for BERT). Only the passage is truncated to fit
``max_length``; a query longer than half the window is first cut to that half, so a long
question cannot push its passage out.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import ConfigError, MissingDependencyError, RaglineError
from ..embed.onnx_dir import find_model_file
from ..embed.sessions import cpu_session
from . import rank_by_scores

if TYPE_CHECKING:
    import numpy as np

    from ..core.types import Hit

POSITIVE_LABELS = frozenset(
    {"1", "label_1", "positive", "pos", "relevant", "yes", "true", "entailment"}
)
_MIN_LENGTH = 8
_INPUTS = frozenset({"input_ids", "attention_mask", "token_type_ids"})


def _read_config(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    import json

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must hold a JSON object")
    return data


def positive_label(num_labels: int, id2label: dict[str, Any] | None) -> int:
    """Index of the label that means "relevant" for a model with ``num_labels`` ≥ 2."""
    names = {int(k): str(v).strip().lower() for k, v in (id2label or {}).items()}
    found = [i for i, name in sorted(names.items()) if name in POSITIVE_LABELS and i < num_labels]
    if len(found) == 1:
        return found[0]
    if num_labels == 2 and not found:
        return 1
    raise ConfigError(
        f"cannot tell which of the {num_labels} labels {sorted(names.values()) or ''} means "
        f"relevant; name exactly one of them in config.json id2label as one of: "
        f"{', '.join(sorted(POSITIVE_LABELS))}"
    )


class CrossEncoderReranker:
    """Reranks hits by scoring each (query, passage) pair with a local cross-encoder.

    The constructor only checks the files and reads ``config.json``; the tokenizer and the
    ONNX session load in :meth:`warm_up` (or on first use). ``latency_budget_ms`` bounds
    the scoring time of one :meth:`rerank` call (model loading excluded): pairs are scored
    ``batch_size`` at a time in input order, at least one batch is always scored, and no
    batch is started that the time per batch so far says would overrun the budget. Hits
    left unscored follow the scored ones in input order; :attr:`last_scored` says how
    many were scored in the last call."""

    def __init__(
        self,
        model_dir: str | os.PathLike[str],
        *,
        max_length: int = 512,
        batch_size: int = 16,
        latency_budget_ms: float | None = None,
        threads: int | None = None,
    ) -> None:
        root = Path(model_dir).expanduser()
        if not root.is_dir():
            raise ConfigError(f"cross-encoder model directory not found: {root}")
        if max_length < _MIN_LENGTH or batch_size < 1:
            raise ConfigError(
                f"max_length must be ≥ {_MIN_LENGTH} and batch_size ≥ 1, "
                f"got {max_length} and {batch_size}"
            )
        if latency_budget_ms is not None and not latency_budget_ms >= 0:
            raise ConfigError(f"latency_budget_ms must be ≥ 0 or None, got {latency_budget_ms}")
        self.path = root
        try:
            self.model_file = find_model_file(root)
        except ConfigError as exc:
            raise ConfigError(f"cross-encoder: {exc}") from None
        self.tokenizer_file = root / "tokenizer.json"
        if not self.tokenizer_file.is_file():
            raise ConfigError(
                f"missing {self.tokenizer_file}: the cross-encoder needs the Hugging Face "
                "tokenizer.json of the model (save it with tokenizer.save_pretrained)"
            )
        config = _read_config(root / "config.json")
        id2label = config.get("id2label") if isinstance(config.get("id2label"), dict) else None
        n = config.get("num_labels", len(id2label) if id2label else None)
        self.num_labels: int | None = n if isinstance(n, int) and n > 0 else None
        self._id2label = id2label
        self.positive = (
            positive_label(self.num_labels, id2label)
            if self.num_labels is not None and self.num_labels > 1
            else 0
        )
        limit = config.get("max_position_embeddings")
        if isinstance(limit, int) and limit > 0:
            if config.get("model_type") in ("roberta", "xlm-roberta", "camembert"):
                limit -= 2  # RoBERTa-family models reserve two positions for padding
            max_length = min(max_length, limit)
        self.max_length = max_length
        self.batch_size = batch_size
        self.latency_budget_ms = latency_budget_ms
        self.threads = threads or max(1, min(os.cpu_count() or 1, 4))
        self._session: Any = None
        self._tokenizer: Any = None
        self._query_tokenizer: Any = None
        self._lock = threading.Lock()
        self.calls = 0  # rerank calls that ran the model
        self.pairs_scored = 0  # (query, passage) pairs scored, all calls together
        self.last_scored = 0  # hits scored in the last rerank call

    def __repr__(self) -> str:
        return f"CrossEncoderReranker({str(self.path)!r}, max_length={self.max_length})"

    # -- loading --------------------------------------------------------------------
    def warm_up(self) -> None:
        """Load the tokenizer and the ONNX session (idempotent)."""
        if self._session is not None:
            return
        with self._lock:
            if self._session is not None:
                return
            try:
                import onnxruntime  # noqa: F401
                from tokenizers import Tokenizer
            except ImportError as exc:
                raise MissingDependencyError(
                    "the cross-encoder reranker needs onnxruntime and tokenizers: "
                    "pip install onnxruntime tokenizers"
                ) from exc
            try:
                pairs = Tokenizer.from_file(str(self.tokenizer_file))
                queries = Tokenizer.from_file(str(self.tokenizer_file))
            except Exception as exc:
                raise ConfigError(f"cannot load {self.tokenizer_file}: {exc}") from exc
            pairs.enable_truncation(max_length=self.max_length, strategy="only_second")
            pad_id, pad_token = _pad(pairs)
            pairs.enable_padding(pad_id=pad_id, pad_token=pad_token)  # longest in batch
            queries.no_padding()
            queries.enable_truncation(max_length=self.max_length // 2)
            try:
                session = cpu_session(str(self.model_file), self.threads)
            except Exception as exc:
                raise ConfigError(f"cannot load {self.model_file}: {exc}") from exc
            inputs = {i.name for i in session.get_inputs()}
            if "input_ids" not in inputs or inputs - _INPUTS:
                raise ConfigError(
                    f"{self.model_file}: inputs {sorted(inputs)} are not a cross-encoder's; "
                    "expected input_ids and optionally attention_mask, token_type_ids"
                )
            outputs = session.get_outputs()
            names = [o.name for o in outputs]
            out = outputs[names.index("logits")] if "logits" in names else outputs[0]
            width = out.shape[-1] if len(out.shape) == 2 else 1
            if isinstance(width, int):
                self._check_labels(width)
            self._inputs = inputs
            self._output = out.name
            self._tokenizer, self._query_tokenizer, self._session = pairs, queries, session

    def _check_labels(self, width: int) -> None:
        if self.num_labels is None:
            self.num_labels = width
            if width > 1:
                self.positive = positive_label(width, self._id2label)
        elif width != self.num_labels:
            raise ConfigError(
                f"{self.model_file} outputs {width} logits per pair but config.json says "
                f"num_labels={self.num_labels}"
            )

    # -- scoring --------------------------------------------------------------------
    def _fit_query(self, query: str) -> str:
        """``query`` cut to at most half of ``max_length`` tokens."""
        enc = self._query_tokenizer.encode(query, add_special_tokens=False)
        if not enc.overflowing:
            return query
        return query[: enc.offsets[-1][1]] if enc.offsets else ""

    def _score_batch(self, query: str, passages: Sequence[str]) -> np.ndarray:
        """One relevance score per passage (float64, input order)."""
        import numpy as np

        enc = self._tokenizer.encode_batch([(query, p) for p in passages])
        ids = np.asarray([e.ids for e in enc], dtype=np.int64)
        feed = {"input_ids": ids}
        if "attention_mask" in self._inputs:
            feed["attention_mask"] = np.asarray([e.attention_mask for e in enc], dtype=np.int64)
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.asarray([e.type_ids for e in enc], dtype=np.int64)
        logits = np.asarray(self._session.run([self._output], feed)[0], dtype=np.float64)
        if logits.ndim == 1:
            logits = logits[:, None]
        if logits.ndim != 2 or logits.shape[0] != len(passages):
            raise RaglineError(
                f"{self.model_file} returned logits of shape {logits.shape} for "
                f"{len(passages)} pairs; expected ({len(passages)}, num_labels)"
            )
        self._check_labels(logits.shape[1])
        if logits.shape[1] == 1:
            scores = logits[:, 0]
        else:
            z = logits - logits.max(axis=1, keepdims=True)
            p = np.exp(z)
            scores = p[:, self.positive] / p.sum(axis=1)
        if not np.all(np.isfinite(scores)):
            raise RaglineError(f"{self.model_file} produced non-finite scores")
        return scores

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        """Relevance of each passage to ``query`` (input order), all of them scored."""
        self.warm_up()
        q = self._fit_query(query)
        out: list[float] = []
        for s in range(0, len(passages), self.batch_size):
            out.extend(float(x) for x in self._score_batch(q, passages[s : s + self.batch_size]))
        self.pairs_scored += len(passages)
        return out

    def rerank(self, query: str, hits: Sequence[Hit], *, top_k: int) -> list[Hit]:
        """The ``top_k`` best of ``hits`` for ``query``, best first (see the class doc)."""
        if top_k < 0:
            raise ConfigError(f"top_k must be ≥ 0, got {top_k}")
        self.last_scored = 0
        if not hits or top_k == 0:
            return []
        self.warm_up()
        self.calls += 1
        q = self._fit_query(query)
        budget_s = None if self.latency_budget_ms is None else self.latency_budget_ms / 1000
        scores: list[float | None] = [None] * len(hits)
        start = time.perf_counter()
        batches = 0
        for s in range(0, len(hits), self.batch_size):
            if budget_s is not None and batches:
                elapsed = time.perf_counter() - start
                if elapsed + elapsed / batches > budget_s:
                    break
            chunk = hits[s : s + self.batch_size]
            for i, x in enumerate(self._score_batch(q, [h.text for h in chunk])):
                scores[s + i] = float(x)
            batches += 1
            self.last_scored += len(chunk)
        self.pairs_scored += self.last_scored
        return rank_by_scores(hits, scores, top_k)


def _pad(tokenizer: Any) -> tuple[int, str]:
    """The tokenizer's padding token (id, text)."""
    padding = tokenizer.padding
    if padding and padding.get("pad_token"):
        return int(padding.get("pad_id", 0)), str(padding["pad_token"])
    for tok in ("[PAD]", "<pad>", "<|endoftext|>"):
        tid = tokenizer.token_to_id(tok)
        if tid is not None:
            return int(tid), tok
    return 0, "[PAD]"


__all__ = ["CrossEncoderReranker", "POSITIVE_LABELS", "positive_label"]
