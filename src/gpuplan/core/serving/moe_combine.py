"""The HBM round trip of an MoE layer's per-expert outputs before they are summed (SGLang's Triton / Marlin MoE).

Units: bytes a token a decoder layer (mean over the model's layers), on one TP rank.

Read in the sglang 0.5.6 wheel (python/sglang/srt/layers/moe/...): the Triton runner's fused function for no
all-to-all is fused_experts (moe_runner/triton.py@v0.5.6:328-337) -> fused_experts_impl
(fused_moe_triton/fused_moe.py@v0.5.6): the down projection's kernel writes one hidden-size row for every
(token, chosen expert) into intermediate_cache3, shape (tokens, top-k, hidden) in the activations' dtype (bf16
whatever the weights: L455-458, L581-611: invoke_fused_moe_kernel into intermediate_cache3 unless top-k is 1), and
a second kernel reads them back and writes their weighted sum (moe_sum_reduce, L616-638; torch.add of the two
slices at top-k 2). Against a dense MLP, whose down GEMM writes each token's hidden row once (counted nowhere: a
GEMM's epilogue), that is (top-k - 1) rows more written, top-k rows read and one row written: 2 x top-k x hidden
x bytes a token. Tensor parallelism does not shrink it (each rank holds every token's full hidden rows: the
reduction over ranks is the all-reduce after the layer). At 7,936 tokens Qwen3-235B-A22B's (top-k 8, hidden
4,096) is 520 MB a layer, four times a B200's L2: it goes through HBM. Not counted: the gate/up kernel's gathered
reads of each token's row top-k times (served largely from L2, and within the GEMM's compute-bound time at prefill
sizes).

Which runner SGLang picks is by kernel path, not by weight format (moe_runner_backend 'auto', no all-to-all, the
defaults; server_args.py@v0.5.6 and the quantisation methods):
- 16-bit: UnquantizedFusedMoEMethod, TRITON (quantization/unquant.py@v0.5.6:232-241).
- FP8: Fp8MoEMethod.create_moe_runner picks TRITON where no DeepEP / Mooncake all-to-all is set
  (quantization/fp8.py@v0.5.6:1008-1016) and apply runs fused_experts_impl with use_fp8_w8a8 (L1141-1165):
  the same bf16 intermediate_cache3. INT8 W8A8: TRITON too (w8a8_int8.py@v0.5.6:591-595).
- INT4 (AWQ / GPTQ on CUDA): fused_marlin_moe writes intermediate_cache3 as (tokens x top-k, hidden) and
  torch.sum's it into the output (fused_moe_triton/fused_marlin_moe.py@v0.5.6:135-136, 177-207; from
  awq.py@v0.5.6:833-848, gptq.py@v0.5.6:1062-1080); moe_wna16 runs TRITON (moe_wna16.py@v0.5.6:356-360). Same rows.
- Another kernel, 0 here: on sm100 (compute capability 10.x, is_sm100_supported, utils/common.py@v0.5.6:244-249)
  flashinfer_trtllm replaces the runner for DeepseekV3ForCausalLM in fp8 / modelopt_fp8 / modelopt_fp4, a
  DeepSeek checkpoint without a quantisation config being served as fp8 there (server_args.py@v0.5.6:1028-1057),
  Llama4 in fp8 / modelopt_fp8 (L1148-1153), Qwen3MoeForCausalLM / Qwen3VLMoe in fp8 / modelopt_fp4 (L1214-1236)
  and Qwen3NextForCausalLM in fp8 / modelopt_fp4 (L1244-1259) (FLASHINFER_TRTLLM_SM100). GPT-OSS runs
  flashinfer_mxfp4 on Blackwell in MXFP4, else triton_kernels' matmul_ogs where that package is installed at ep 1
  (L1102-1117; without it the Triton rows would apply: not modelled). NVFP4 elsewhere runs cutlass_moe_fp4
  (quantization/modelopt_quant.py@v0.5.6:1840-1843): not read, 0.
- DeepSeek V3/R1 (256 routed experts, 1 shared) fuses its shared expert into the routed MoE on NVIDIA parts of
  compute capability >= 8.0 at expert parallelism 1 (determine_num_fused_shared_experts, models/deepseek_v2.py
  @v0.5.6:3412-3452): its kernel writes top-k + 1 = 9 rows a token (the shared expert's MLP, which wrote its row
  once, is then part of it).

Scope: SGLang (other engines are not read here: 0), expert parallelism 1 and no all-to-all backend (the defaults).
"""

from __future__ import annotations

from gpuplan.core.hardware import Accelerator
from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.serving.releases import EngineRelease

FLASHINFER_TRTLLM_SM100 = {"deepseek_v3": ("bf16", "fp16", "fp8", "nvfp4"), "qwen3_moe": ("fp8", "nvfp4"),
                           "qwen3_next": ("fp8", "nvfp4"), "llama4": ("fp8",)}
"""model_type -> gpuplan weight formats whose MoE SGLang 0.5.6 runs on flashinfer's TensorRT-LLM kernels on sm100
(server_args.py@v0.5.6 lines in the module docstring; nvfp4 = modelopt_fp4; DeepSeek's 16-bit checkpoints are
served as fp8 there, L1041-1046)."""
OTHER_RUNNER_MODELS = ("gpt_oss",)
"""model_types whose MoE never runs the Triton per-expert rows under SGLang's defaults (GPT-OSS: flashinfer_mxfp4
or triton_kernels, server_args.py@v0.5.6:1102-1117)."""
FUSED_SHARED_MIN_CAPABILITY = (8, 0)
"""deepseek_v2.py@v0.5.6:3427-3433: shared-expert fusion on NVIDIA parts of compute capability >= 8.0."""


def _capability(gpu: Accelerator | None) -> tuple[int, ...]:
    """``gpu``'s compute capability; (0, 0) where no GPU is given or its entry states none."""
    return (gpu.compute_capability or (0, 0)) if gpu is not None else (0, 0)


def triton_rows_per_token(spec: ModelSpec, release: EngineRelease, fmt_name: str,
                          gpu: Accelerator | None = None) -> int:
    """Per-expert output rows a token that SGLang's MoE kernel writes to intermediate_cache3 and sums on ``gpu``
    (module docstring): top-k, + 1 for DeepSeek V3/R1's fused shared expert; 0 where another runner serves the
    layer (flashinfer_trtllm on sm100, GPT-OSS, NVFP4's cutlass kernel off that list), for dense models, other
    engines and top-k 1 (the down kernel then writes the output directly). ``gpu`` None: no sm100 path and no
    shared-expert fusion (the compute capability unknown)."""
    if release.engine != "sglang" or spec.moe is None or spec.model_type in OTHER_RUNNER_MODELS:
        return 0
    capability = _capability(gpu)
    if capability[0] == 10 and fmt_name in FLASHINFER_TRTLLM_SM100.get(spec.model_type, ()):  # sm100
        return 0
    if fmt_name == "nvfp4":
        return 0
    moe, topk = spec.moe, spec.moe.experts_per_token
    fused_shared = int(spec.model_type == "deepseek_v3" and moe.num_experts == 256
                       and moe.shared_intermediate_size == moe.expert_intermediate_size
                       and capability >= FUSED_SHARED_MIN_CAPABILITY)
    rows = topk + fused_shared
    return rows if rows >= 2 else 0


def combine_bytes_per_token(spec: ModelSpec, release: EngineRelease, fmt_name: str, act_bytes: int = 2,
                            gpu: Accelerator | None = None) -> float:
    """HBM bytes a token a layer (mean over the layers) that SGLang's MoE kernel moves to write its per-expert
    outputs and sum them, beyond a dense MLP's one output row: 2 x rows x hidden x ``act_bytes`` on each MoE layer
    (rows: triton_rows_per_token on ``gpu``), x the MoE layers' share; 0 where that gives no rows."""
    rows = triton_rows_per_token(spec, release, fmt_name, gpu)
    if not rows:
        return 0.0
    return 2.0 * rows * spec.hidden_size * act_bytes * spec.num_moe_layers / spec.num_layers
