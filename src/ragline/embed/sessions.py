"""The ONNX Runtime CPU sessions the local models (embedders, cross-encoder) run on.

One call (a query) is fastest on a session that spreads it over the cores: MiniLM 3.9 ms
on two threads, 6.4 on one. Many batches are faster as single-threaded calls side by side,
one per core, each batch that many times smaller so the working memory stays the same
(:func:`ragline.embed.batching.embed_longest_first`): a multi-threaded call waits at each
step for its slowest thread, so whatever else takes a core (the writer, the server, the
parser) stalls it whole. On 2 cores, ``bench/ingest_throughput.py --docs 400``: ingest
65.4–66.5 s instead of 71.6–74.2, the bare embedder 56.7–58.1 s instead of 64.6–66.7, peak
RSS 810 MB instead of 848 (bench/README, stop 33). So an embedder keeps both sessions.
"""

from __future__ import annotations

import threading
from typing import Any


def cpu_session(model_file: str, threads: int) -> Any:
    """An ONNX Runtime CPU session whose every call runs on ``threads`` threads."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(model_file, so, providers=["CPUExecutionProvider"])


class SingleThreaded:
    """A model's single-threaded session, loaded on first use: an embedder's batches run
    on it side by side, one per thread."""

    def __init__(self, model_file: str) -> None:
        self.model_file = model_file
        self._session: Any = None
        self._lock = threading.Lock()

    def get(self) -> Any:
        if self._session is None:
            with self._lock:
                if self._session is None:
                    self._session = cpu_session(self.model_file, 1)
        return self._session
