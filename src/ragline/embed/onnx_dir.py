"""Any local sentence-transformers model directory exported to ONNX, on ONNX Runtime.

What the directory holds (the layout of ``SentenceTransformer.save`` plus an ONNX export):

* ``model.onnx`` or ``onnx/model.onnx`` (required; external weights beside it are hashed too)
  whose first output is the token embeddings ``(batch, seq, dim)``; an output named
  ``sentence_embedding`` (or a 2-D output) is taken as already pooled.
* ``tokenizer.json`` (required; the Hugging Face ``tokenizers`` format).
* ``modules.json`` → the Pooling module's ``config.json`` (default ``1_Pooling/config.json``)
  for the pooling mode: ``mean`` (the default when there is none), ``cls``, ``max`` or
  ``lasttoken``. A Dense module is refused: export it inside the ONNX graph instead.
* ``sentence_bert_config.json`` → ``max_seq_length`` (else ``tokenizer_config.json``'s
  ``model_max_length``, else ``config.json``'s position embeddings, else 512).
* ``config_sentence_transformers.json`` → ``prompts``: ``"query"`` is prepended to queries,
  ``"document"`` (or ``"passage"``) to documents, e.g. ``"query: "`` / ``"passage: "`` for e5.

Outputs are always L2-normalised. ``model_id`` is ``"onnx-dir:"`` + a short content hash of
the weights, the tokenizer and the settings read above, so another model, or the same one
pooled differently, never shares cached vectors.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import ConfigError, MissingDependencyError
from .batching import embed_longest_first
from .sessions import SingleThreaded, cpu_session
from .token_count import TokenCounter

if TYPE_CHECKING:
    import numpy as np

POOLING_MODES = ("mean", "cls", "max", "lasttoken")
_POOLING_KEYS = {
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_cls_token": "cls",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_lasttoken": "lasttoken",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens": "weightedmean",
}
_DEFAULT_MAX_LEN = 512
_HASH_CHARS = 12


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc


def find_model_file(root: Path) -> Path:
    """``model.onnx`` or ``onnx/model.onnx`` under ``root``, or an error naming both."""
    for cand in (root / "model.onnx", root / "onnx" / "model.onnx"):
        if cand.is_file():
            return cand
    raise ConfigError(
        f"no ONNX model in {root}: expected model.onnx or onnx/model.onnx "
        "(export one with optimum: optimum-cli export onnx --model <dir> <dir>/onnx)"
    )


def read_pooling(root: Path) -> str:
    """The pooling mode the directory declares (``mean`` when it declares none)."""
    pool_dir: Path | None = root / "1_Pooling"
    modules = root / "modules.json"
    if modules.is_file():
        pool_dir = None
        for mod in _read_json(modules):
            kind = str(mod.get("type", ""))
            if kind.endswith(".Pooling"):
                pool_dir = root / mod.get("path", "")
            elif kind.endswith(".Dense"):
                raise ConfigError(
                    f"{modules} has a Dense module ({mod.get('path')}); the onnx-dir embedder "
                    "applies only pooling and normalisation: export the Dense layer inside model.onnx"
                )
        if pool_dir is None:
            return "mean"
    assert pool_dir is not None
    cfg_file = pool_dir / "config.json"
    if not cfg_file.is_file():
        if modules.is_file():
            raise ConfigError(f"{modules} names a Pooling module but {cfg_file} is missing")
        return "mean"
    cfg = _read_json(cfg_file)
    if cfg.get("include_prompt") is False:
        raise ConfigError(f"{cfg_file}: include_prompt=false is not supported")
    if isinstance(cfg.get("pooling_mode"), str):
        modes = [cfg["pooling_mode"]]
    else:
        modes = [name for key, name in _POOLING_KEYS.items() if cfg.get(key)]
    if len(modes) != 1 or modes[0] not in POOLING_MODES:
        raise ConfigError(
            f"{cfg_file}: unsupported pooling {modes or 'none'}; "
            f"exactly one of {', '.join(POOLING_MODES)} is supported"
        )
    return modes[0]


def read_max_seq_length(root: Path) -> int:
    """Tokens per input (special tokens included), as sentence-transformers truncates."""
    sb = root / "sentence_bert_config.json"
    if sb.is_file():
        n = _read_json(sb).get("max_seq_length")
        if isinstance(n, int) and n > 0:
            return n
    tc = root / "tokenizer_config.json"
    if tc.is_file():
        n = _read_json(tc).get("model_max_length")
        if isinstance(n, int) and 0 < n <= 100_000:
            return n
    cfg = root / "config.json"
    if cfg.is_file():
        c = _read_json(cfg)
        n = c.get("max_position_embeddings")
        if isinstance(n, int) and n > 0:
            # RoBERTa-family models reserve two positions for the padding offset
            if c.get("model_type") in ("roberta", "xlm-roberta", "camembert"):
                n -= 2
            return min(n, _DEFAULT_MAX_LEN)
    return _DEFAULT_MAX_LEN


def read_prompts(root: Path) -> tuple[str, str]:
    """(query prompt, document prompt) from ``config_sentence_transformers.json``."""
    f = root / "config_sentence_transformers.json"
    if not f.is_file():
        return "", ""
    prompts = _read_json(f).get("prompts") or {}
    if not isinstance(prompts, dict):
        raise ConfigError(f"{f}: 'prompts' must be an object of name → text")
    query = prompts.get("query", "")
    document = prompts.get("document", prompts.get("passage", prompts.get("doc", "")))
    return str(query or ""), str(document or "")


def _hash_files(paths: Sequence[Path], extra: str) -> str:
    h = hashlib.blake2b(digest_size=16)
    for p in paths:
        h.update(p.name.encode() + b"\0")
        with p.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    h.update(extra.encode())
    return h.hexdigest()[:_HASH_CHARS]


class OnnxDirEmbedder:
    """Embeds with a local ONNX sentence-transformers model directory.

    The constructor only checks that the files exist and reads the small JSON configs;
    arguments left ``None`` come from those files (pass them to override)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        pooling: str | None = None,
        max_seq_length: int | None = None,
        query_prompt: str | None = None,
        document_prompt: str | None = None,
        threads: int | None = None,
        batch_size: int = 32,
    ) -> None:
        root = Path(path).expanduser()
        if not root.is_dir():
            raise ConfigError(f"onnx model directory not found: {root}")
        self.path = root
        self.model_file = find_model_file(root)
        self.tokenizer_file = root / "tokenizer.json"
        if not self.tokenizer_file.is_file():
            raise ConfigError(
                f"missing {self.tokenizer_file}: the onnx-dir embedder needs the Hugging Face "
                "tokenizer.json of the model (save it with tokenizer.save_pretrained)"
            )
        self.pooling = pooling or read_pooling(root)
        if self.pooling not in POOLING_MODES:
            raise ConfigError(
                f"unknown pooling {self.pooling!r}; choose one of: {', '.join(POOLING_MODES)}"
            )
        self.max_tokens = max_seq_length or read_max_seq_length(root)
        q, d = read_prompts(root)
        self.query_prompt = q if query_prompt is None else query_prompt
        self.document_prompt = d if document_prompt is None else document_prompt
        self.threads = threads or max(1, min(os.cpu_count() or 1, 4))
        self.batch_size = batch_size
        self._model_id: str | None = None
        self._dim: int | None = self._declared_dim()
        self._session: Any = None
        self._tokenizer: Any = None
        self._counter: Any = None
        self._bulk: SingleThreaded | None = None
        self._lock = threading.Lock()
        self.calls = 0  # number of embed_documents/embed_query calls that ran the model
        self.texts_embedded = 0

    # -- identity -------------------------------------------------------------------
    @property
    def model_id(self) -> str:
        """``onnx-dir:`` + hash of the weights, tokenizer and settings (computed once)."""
        if self._model_id is None:
            files = [self.model_file]
            for ext in ("model.onnx_data", "model.onnx.data"):
                if (self.model_file.parent / ext).is_file():
                    files.append(self.model_file.parent / ext)
            files.append(self.tokenizer_file)
            settings = json.dumps(
                [self.pooling, self.max_tokens, self.query_prompt, self.document_prompt]
            )
            self._model_id = "onnx-dir:" + _hash_files(files, settings)
        return self._model_id

    @property
    def dim(self) -> int:
        """Vector dimension: from the configs when they say, else from the loaded model."""
        if self._dim is None:
            self.warm_up()
        assert self._dim is not None
        return self._dim

    def _declared_dim(self) -> int | None:
        pool = self.path / "1_Pooling" / "config.json"
        for f, key in (
            (pool, "word_embedding_dimension"),
            (self.path / "config.json", "hidden_size"),
        ):
            if f.is_file():
                n = _read_json(f).get(key)
                if isinstance(n, int) and n > 0:
                    return n
        return None

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
                    "the onnx-dir embedder needs onnxruntime and tokenizers: "
                    "pip install onnxruntime tokenizers"
                ) from exc
            try:
                tokenizer = Tokenizer.from_file(str(self.tokenizer_file))
                counter = Tokenizer.from_file(str(self.tokenizer_file))
            except Exception as exc:
                raise ConfigError(f"cannot load {self.tokenizer_file}: {exc}") from exc
            tokenizer.enable_truncation(max_length=self.max_tokens)
            pad_id, pad_token = self._pad(tokenizer)
            tokenizer.enable_padding(pad_id=pad_id, pad_token=pad_token)  # longest in batch
            counter.no_truncation()
            counter.no_padding()
            count = TokenCounter(counter)
            try:
                session = cpu_session(str(self.model_file), self.threads)
            except Exception as exc:
                raise ConfigError(f"cannot load {self.model_file}: {exc}") from exc
            self._bulk = SingleThreaded(str(self.model_file))
            inputs = {i.name for i in session.get_inputs()}
            unknown = inputs - {"input_ids", "attention_mask", "token_type_ids", "position_ids"}
            if "input_ids" not in inputs or unknown:
                raise ConfigError(
                    f"{self.model_file}: inputs {sorted(inputs)} are not a text encoder's; "
                    "expected input_ids, attention_mask and optionally token_type_ids, position_ids"
                )
            outputs = session.get_outputs()
            names = [o.name for o in outputs]
            pick = names.index("sentence_embedding") if "sentence_embedding" in names else 0
            out = outputs[pick]
            self._input_names = inputs
            self._output = out.name
            self._pooled = len(out.shape) == 2
            self._tokenizer, self._counter, self._session = tokenizer, count, session
            last = out.shape[-1]
            if isinstance(last, int) and last > 0:
                if self._dim is not None and self._dim != last:
                    raise ConfigError(
                        f"{self.model_file} outputs {last}-d vectors but the configs say {self._dim}"
                    )
                self._dim = last
            elif self._dim is None:
                self._dim = int(self._embed_batch(["dimension probe"]).shape[1])

    @staticmethod
    def _pad(tokenizer: Any) -> tuple[int, str]:
        padding = tokenizer.padding
        if padding and padding.get("pad_token"):
            return int(padding.get("pad_id", 0)), str(padding["pad_token"])
        for tok in ("[PAD]", "<pad>", "<|endoftext|>"):
            tid = tokenizer.token_to_id(tok)
            if tid is not None:
                return int(tid), tok
        return 0, "[PAD]"

    # -- embedding ------------------------------------------------------------------
    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` as embedded as a document (document prompt included),
        without the special tokens the tokenizer adds."""
        self.warm_up()
        return int(self._counter(self.document_prompt + text))

    def _embed_batch(self, texts: Sequence[str], session: Any = None) -> np.ndarray:
        import numpy as np

        session = session or self._session
        enc = self._tokenizer.encode_batch(list(texts))
        ids = np.asarray([e.ids for e in enc], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in enc], dtype=np.int64)
        feed = {"input_ids": ids}
        if "attention_mask" in self._input_names:
            feed["attention_mask"] = mask
        if "token_type_ids" in self._input_names:
            feed["token_type_ids"] = np.zeros_like(ids)
        if "position_ids" in self._input_names:
            feed["position_ids"] = np.broadcast_to(np.arange(ids.shape[1]), ids.shape).copy()
        out = np.asarray(session.run([self._output], feed)[0], dtype=np.float32)
        pooled = out if self._pooled else pool(out, mask, self.pooling)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)

    def embed_documents(
        self, texts: Sequence[str], *, progress: Callable[[int], None] | None = None
    ) -> np.ndarray:
        """Unit vectors for ``texts`` (rows in input order), batched longest-first."""
        import numpy as np

        self.warm_up()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        self.calls += 1
        self.texts_embedded += len(texts)
        bulk = self._bulk
        assert bulk is not None
        return embed_longest_first(
            [self.document_prompt + t for t in texts],
            self.dim,
            self.batch_size,
            self._embed_batch,
            max_chars=4 * self.max_tokens,
            workers=self.threads,
            side_by_side=lambda batch: self._embed_batch(batch, bulk.get()),
            progress=progress,
        )

    def embed_query(self, text: str) -> np.ndarray:
        self.warm_up()
        self.calls += 1
        self.texts_embedded += 1
        return self._embed_batch([self.query_prompt + text])[0]


def pool(hidden: np.ndarray, mask: np.ndarray, mode: str) -> np.ndarray:
    """Pool token vectors ``(batch, seq, dim)`` over the attention mask ``(batch, seq)``."""
    import numpy as np

    if mode == "cls":
        return hidden[:, 0]
    if mode == "lasttoken":
        last = np.clip(mask.sum(axis=1) - 1, 0, None)  # right padding
        return hidden[np.arange(hidden.shape[0]), last]
    m = mask[:, :, None].astype(np.float32)
    if mode == "max":
        return np.where(m > 0, hidden, -np.inf).max(axis=1)
    return (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
