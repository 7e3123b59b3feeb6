"""The HBM round trip of an MoE layer's per-expert outputs before they are summed (SGLang's Triton MoE runner).

Units: bytes a token a decoder layer (mean over the model's layers), on one TP rank.

Read in the sglang 0.5.6 wheel (python/sglang/srt/layers/moe/...): an unquantised (BF16 / FP16) MoE layer runs
UnquantizedFusedMoEMethod with the Triton runner (quantization/unquant.py@v0.5.6:232-241 create_moe_runner:
TRITON unless triton_kernels; its forward_cuda L258-334 calls flashinfer's CUTLASS MoE only where
--moe-runner-backend flashinfer_cutlass is given), whose fused function for no all-to-all is fused_experts
(moe_runner/triton.py@v0.5.6:328-337) -> fused_experts_impl (fused_moe_triton/fused_moe.py@v0.5.6): the down
projection's kernel writes one hidden-size row for every (token, chosen expert) into intermediate_cache3, shape
(tokens, top-k, hidden) in the activations' dtype (L455-458, L581-611: invoke_fused_moe_kernel into
intermediate_cache3 unless top-k is 1), and a second kernel reads them back and writes their weighted sum
(moe_sum_reduce, L616-638; torch.add of the two slices at top-k 2). Against a dense MLP, whose down GEMM writes
each token's hidden row once (counted nowhere: a GEMM's epilogue), that is (top-k - 1) rows more written, top-k
rows read and one row written: 2 x top-k x hidden x bytes a token. Tensor parallelism does not shrink it (each
rank holds every token's full hidden rows: the reduction over ranks is the all-reduce after the layer). At
7,936 tokens Qwen3-235B-A22B's (top-k 8, hidden 4,096) is 520 MB a layer, four times a B200's L2: it goes
through HBM. Not counted: the gate/up kernel's gathered reads of each token's row top-k times (served largely
from L2, and within the GEMM's compute-bound time at prefill sizes).

Scope: SGLang with 16-bit weights (the path read); DeepSeek-V3 FP8 and GPT-OSS MXFP4 on sm100 run flashinfer's
TensorRT-LLM MoE kernels instead (layer_kernels), quantised Triton paths and other engines are not read here: 0.
"""

from __future__ import annotations

from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.serving.releases import EngineRelease

SIXTEEN_BIT = ("bf16", "fp16")
"""Weight formats that load UnquantizedFusedMoEMethod (no quantization config) in SGLang."""


def combine_bytes_per_token(spec: ModelSpec, release: EngineRelease, fmt_name: str, act_bytes: int = 2) -> float:
    """HBM bytes a token a layer (mean over the layers) that SGLang's Triton MoE runner moves to write its
    per-expert outputs and sum them, beyond a dense MLP's one output row: 2 x top-k x hidden x ``act_bytes`` on
    each MoE layer (module docstring), x the MoE layers' share; 0 for dense models, top-k 1 (the down kernel then
    writes the output directly), other engines and quantised formats."""
    if release.engine != "sglang" or spec.moe is None or fmt_name not in SIXTEEN_BIT:
        return 0.0
    topk = spec.moe.experts_per_token
    if topk < 2:
        return 0.0
    return 2.0 * topk * spec.hidden_size * act_bytes * spec.num_moe_layers / spec.num_layers
