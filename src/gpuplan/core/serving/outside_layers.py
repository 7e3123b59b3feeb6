"""What a decode step runs outside its decoder layers (issue 38, wave 17; review w17 ME): the small kernels a
CUDA-graph step puts on the GPU's critical path besides the layers' (outside_kernels counts them in each engine's
code: SGLang 0.5.6, vLLM 0.10.1 V1), timed at the small-kernel floor's rate a kernel (graph_floor.GRAPH_KERNEL_S,
whose fit rows carry vLLM's own), and the two TP collectives of the vocabulary-parallel embedding and the LM head
(SGLang and vLLM). TensorRT-LLM: none (its graph floor is 0, its embedding and LM head not read).

Read and not modelled (session 22, docs/inference.md 5o): SGLang 0.5.6's per-token host path (scheduler.py@v0.5.6:
992-1037 overlap loop, stream_interval 1 at server_args.py@v0.5.6:289, the detokenizer process forwarding each
token, detokenizer_manager.py@v0.5.6:112-118) adds no step time here: the same cookbook's gpt-oss-120b TP 8 B200 run
streams a token every 2.31 ms, so no stage of it costs more on that hardware, and the overlap scheduler hides host
work under the ~10 ms Qwen3 / DeepSeek steps. Their residual (~13-17 us a layer) is GPU time not attributed.

Units: kernels, bytes, seconds.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from gpuplan.core.comm.collectives import collective_seconds
from gpuplan.core.comm.topology import cluster_for
from gpuplan.core.hardware import Accelerator
from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.serving import kernels as KR
from gpuplan.core.serving import layer_kernels as LK
from gpuplan.core.serving import outside_kernels as OK
from gpuplan.core.serving import graph_floor as GF
from gpuplan.core.serving.identity_memo import by_identity
from gpuplan.core.serving.releases import EngineRelease
from gpuplan.core.serving.setup import ServingSetup
from gpuplan.core.serving.tp_span import on_pcie

COLLECTIVE_ENGINES = ("sglang", "vllm")
"""Engines whose embedding all-reduces and whose LM head all-gathers at TP > 1: SGLang (below) and vLLM
(model_executor/layers/vocab_parallel_embedding.py@v0.10.1:414 tensor_model_parallel_all_reduce;
logits_processor.py@v0.10.1:89-101 _gather_logits: an all-gather under V1 (platforms/interface.py@v0.10.1:476-486
use_all_gather), a gather to rank 0 under V0, timed as the all-gather of the same bytes)."""


def decode_backend(spec: ModelSpec, release: EngineRelease | None, fabric: Accelerator | None, fmt_name: str) -> str:
    """The decode attention backend whose metadata kernels outside_kernels.DECODE_METADATA counts: the sm100 path
    layer_kernels reads ('trtllm_mla' for DeepSeek-V3/R1 FP8, 'trtllm_mha' for GPT-OSS MXFP4), else 'flashinfer'."""
    return (LK.table_path(spec, release, fabric, fmt_name) if release is not None else None) or "flashinfer"


def overlapped(release: EngineRelease | None, pp: int, speculating: bool) -> bool:
    """Whether SGLang's overlap scheduler runs (its prepare_for_decode off the critical path): off with speculative
    decoding (server_args.py@v0.5.6:1693-1694, SGLANG_ENABLE_SPEC_V2 unset) and at PP > 1 (L1604-1605)."""
    return release is not None and release.engine == "sglang" and pp <= 1 and not speculating


def outside_layer_kernels(release: EngineRelease | None, tp: int, backend: str = "flashinfer", *, rows: float = 1.0,
                          overlap: bool = True) -> int:
    """Kernels a CUDA-graph decode step runs on its critical path outside its layers. SGLang: the forward stream's
    (SGLANG_ON_PATH + the backend's DECODE_METADATA: FlashInfer 20 at TP > 1, 18 at TP 1; trtllm_mha 22, trtllm_mla 17
    at TP > 1), + prepare_for_decode's without ``overlap`` (SGLANG_OFF_PATH 5, + the paged allocation's 4 on the
    trtllm paths); vLLM from 0.2.6 (graphs): VLLM_V1_OUTSIDE's 23; + 1 copy in the logits all-gather's reshape at TP
    > 1 and ``rows`` > 1 (GATHER_RESHAPE). 0 for other engines."""
    if release is None:
        return 0
    gather = OK.total((OK.GATHER_RESHAPE,), tp) if rows > 1 else 0
    if release.engine == "sglang":
        parts = OK.SGLANG_ON_PATH + OK.DECODE_METADATA[backend]
        if not overlap:
            parts += OK.SGLANG_OFF_PATH + ((OK.PAGED_ALLOCATION,) if backend != "flashinfer" else ())
        return OK.total(parts, tp) + gather
    if release.engine == "vllm" and release.version >= GF.VLLM_GRAPHS_SINCE:
        return OK.total(OK.VLLM_V1_OUTSIDE, tp) + gather
    return 0


def kernel_seconds(graph_layer_s: float | None, layer_kernels) -> float:
    """The floor a kernel outside the layers: graph_floor.GRAPH_KERNEL_S (4.267 us), or a given --graph-layer-us (a layer's,
    whatever the layer) over the kernels of this model's layer, ``layer_kernels()`` (layer_kernels.graph_kernels: 11
    a dense Llama layer, 15 a Qwen3 MoE one; review w17 ME N4), so that the given value keeps one rate a kernel."""
    if graph_layer_s is None:
        return GF.GRAPH_KERNEL_S
    return graph_layer_s / layer_kernels() if graph_layer_s > 0 else 0.0


def graph_step_outside(spec: ModelSpec, setup: ServingSetup, fabric: Accelerator | None, tp: int, pp: int,
                       tokens: float, rows: float) -> tuple[int, float]:
    """(kernels, seconds a kernel) outside the layers of a scheduled CUDA-graph step of ``tokens`` with ``rows`` of
    logits: outside_layer_kernels on the decode backend (decode_backend) and the overlap scheduler's state
    (overlapped), at kernel_seconds' rate. The one reading roofline.step_time's floor (kernels x seconds a kernel: GPU
    seconds, not fitted on any row: the count is the code's, the rate the floor's) and the answer's note share."""
    release = setup.runtime.release
    per_kernel = kernel_seconds(setup.efficiency.graph_layer_s, lambda: LK.graph_kernels(
        spec, release, fabric, setup.fmt.name, tp=tp, tokens=tokens))
    kernels = outside_layer_kernels(release, tp, decode_backend(spec, release, fabric, setup.fmt.name), rows=rows,
                                    overlap=overlapped(release, pp, setup.speculation is not None))
    return kernels, per_kernel


def floor_note(kernels: int, per_kernel_s: float) -> str:
    """The answer's words for the kernels outside the layers ('' where none or 0 s): '+ 20 kernels outside the layers
    x 4.27 us ...'."""
    if not kernels or per_kernel_s <= 0:
        return ""
    return (f" + {kernels} kernels outside the layers x {per_kernel_s * 1e6:.2f} us (input copies, metadata, "
            "embedding, final norm, LM head, sampler; core/serving/outside_layers.py)")


def _exchanges(release: EngineRelease | None, tp: int) -> bool:
    """Whether a forward exchanges its embedding and logits outside the layers: a COLLECTIVE_ENGINES release at TP
    > 1 (comm_note and outside_layer_comm_seconds ask the same)."""
    return release is not None and release.engine in COLLECTIVE_ENGINES and tp > 1


def comm_note(release: EngineRelease | None, tp: int) -> str:
    """The answer's words for outside_layer_comm_seconds ('' where it is 0)."""
    if not _exchanges(release, tp):
        return ""
    return (" + the embedding's all-reduce and the LM head's logits all-gather (NCCL) outside the layers "
            "(core/serving/outside_layers.py)")


def logits_rows(tokens: float, sequences: float, prefill: bool) -> float:
    """Rows of logits a forward computes: the last token of each prompt in a prefill (logits_processor.py
    @v0.5.6 prunes to the last position of each extend), every scored token in a decode step."""
    return sequences if prefill else tokens


def outside_layer_comm_seconds(release: EngineRelease | None, spec: ModelSpec, tp: int, one_allreduce_s: float,
                               rows: float, fabric: Accelerator | None, p2p: bool = True) -> float:
    """TP collectives of an SGLang or vLLM forward outside its layers (COLLECTIVE_ENGINES), seconds: the vocabulary-parallel embedding's
    all-reduce of the step's hidden states (vocab_parallel_embedding.py@v0.5.6:484-486
    tensor_model_parallel_all_reduce: the same message and kernel as a layer's, ``one_allreduce_s``) and the LM
    head's all-gather of ``rows`` x vocab bf16 logits (logits_processor.py@v0.5.6:869-898
    tensor_model_parallel_all_gather -> parallel_state.py@v0.5.6:772-834 -> all_gather_into_tensor, L733-741:
    pynccl, NCCL's all-gather, captured in the graph), timed by core.comm.collectives on the TP group
    (x kernels.PCIE_NCCL_SLOWDOWN over PCIe, as the all-reduces). 0 at TP 1 and for other engines."""
    if not _exchanges(release, tp):
        return 0.0
    gather = _all_gather_seconds(rows, spec.vocab_size * 2, tp, fabric, p2p) if fabric is not None else 0.0
    return one_allreduce_s + gather


_GATHER_ROWS = 1024
"""Rows of logits (1 .. this) whose all-gathers are evaluated together, in one vectorised pass, on a first miss."""


def _gathers_by_row(row_bytes: int, tp: int, fabric: Accelerator, p2p: bool = True) -> np.ndarray:
    """NCCL's all-gather of 1 .. _GATHER_ROWS rows of ``row_bytes`` over ``tp`` GPUs of ``fabric`` (with GPU P2P or
    not: the links are kernels.collective_fabric's, x PCIE_NCCL_SLOWDOWN over PCIe), seconds, index = rows - 1: one
    numpy pass (collective_seconds takes arrays), where one scalar evaluation costs ~0.5 ms and a sizing search asks
    for every batch on every layout (infer --rps: 3,204 scalar evaluations, +2 s, before). Kept by the part as given
    and ``p2p`` (_gathers_of), so the collective part (host_path without P2P) is worked out once a (GPU, TP), not at
    every step: a speculative step's verify and draft forwards each asked it again (tests/test_slow_asks_w16.py)."""
    return np.asarray(_gather_seconds(np.arange(1, _GATHER_ROWS + 1, dtype=float) * row_bytes, tp, fabric, p2p),
                      dtype=float)


def _gather_seconds(total_bytes, tp: int, fabric: Accelerator, p2p: bool):
    """core.comm.collectives' all-gather producing ``total_bytes`` (a number or an array) over ``tp`` GPUs on
    kernels.collective_fabric(fabric, p2p)'s links, x kernels.PCIE_NCCL_SLOWDOWN where the TP group's ring runs over
    PCIe (tp_span.on_pcie)."""
    part = KR.collective_fabric(fabric, p2p)
    slowdown = KR.PCIE_NCCL_SLOWDOWN if on_pcie(part, tp) else 1.0
    return collective_seconds("all_gather", total_bytes, cluster_for(part).group(tp)) * slowdown


def _gathers(row_bytes: int, tp: int, p2p: bool, fabric: Accelerator) -> np.ndarray:
    """_gathers_by_row, looked up by name at each call: a test's monkeypatch of it is read (roofline.clear_memos)."""
    return _gathers_by_row(row_bytes, tp, fabric, p2p)


_gathers_of = by_identity(lru_cache(maxsize=256)(_gathers), 256, by_value=3)
"""_gathers_by_row's arrays by (row bytes, tp, p2p) and the part's identity (identity_memo): a sizing answer asks
~11,000 times (one a decode step), and an lru_cache hashed the frozen part field by field at each
(docs/performance.md, 'Serving sizing')."""


def _all_gather_seconds(rows: float, row_bytes: int, tp: int, fabric: Accelerator, p2p: bool = True) -> float:
    """NCCL's all-gather producing ``rows`` x ``row_bytes`` over ``tp`` GPUs of ``fabric`` (_gather_seconds): read
    from _gathers_by_row for whole rows up to _GATHER_ROWS, else evaluated alone."""
    if float(rows).is_integer() and 1 <= rows <= _GATHER_ROWS:
        return float(_gathers_of(int(row_bytes), tp, p2p, fabric)[int(rows) - 1])
    return float(_gather_seconds(float(rows * row_bytes), tp, fabric, p2p))
