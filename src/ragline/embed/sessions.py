"""The ONNX Runtime CPU session the local models (embedders, cross-encoder) run on."""

from __future__ import annotations

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
