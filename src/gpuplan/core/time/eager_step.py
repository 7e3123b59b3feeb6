"""One training step of an eager single-GPU stack (Hugging Face transformers + peft, torch.optim),
op class by op class.

Per micro-batch of T tokens on a stage of L decoder layers, forward and backward each take

    GPU  = matmuls (core.time.linears: the layers', the LM head's, LoRA's; recomputed ones in the
           backward) + attention (core.time.attention: SDPA's kernel, or eager's score matmuls)
           + memory-bound kernels (core.time.memory_kernels over the bytes and kernels of
           core.time.op_profile: norms, RoPE, activations, residuals, casts, the loss)
    host = the ops it dispatches x a measured CPU cost per op, carried to the GPU host (core.time.host)
    wall = max(GPU, host)

and the optimizer step is core.time.optimizer's bytes and kernels against its host time. Every
term is returned by class so `plan --explain` and `train --full` can show it.

Units: seconds, tokens, FLOP/s.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpuplan.core.bulk import maximum
from gpuplan.core.memory.activations import sliding_mask_applies
from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.time import attention as A
from gpuplan.core.time import linears as G
from gpuplan.core.time.host import (
    CPU_TINY_KERNEL_SECONDS,
    HOST_SECONDS_PER_TRAINED_TENSOR,
    cpu_seconds_per_op,
    phase_seconds,
    reference_scale,
)
from gpuplan.core.time.memory_kernels import memory_bound_seconds
from gpuplan.core.time.op_profile import EagerOps, layer_features, rest_features
from gpuplan.core.time.optimizer import optimizer_bytes, optimizer_kernels


@dataclass(frozen=True)
class PhaseTimes:
    """Seconds of one phase by op class, its host issue time, and its wall time."""

    gemm: object = 0.0
    attention: object = 0.0
    memory: object = 0.0
    host: object = 0.0

    @property
    def gpu(self):
        return self.gemm + self.attention + self.memory

    @property
    def wall(self):
        return phase_seconds(self.gpu, self.host)

    @property
    def host_beyond_gpu(self):
        """Seconds the GPU waits for the host in this phase (wall - gpu)."""
        return maximum(self.host - self.gpu, 0.0)


@dataclass(frozen=True)
class EagerRun:
    """What the eager step needs beyond the model: the part, the stack's op profile and options."""

    ops: EagerOps
    peak: float
    """Dense BF16 FLOP/s (autocast and bf16 linears run there)."""
    fp32_peak: float
    """FLOP/s of fp32 matmuls (LoRA's fp32 adapters; TF32 is off by default in PyTorch)."""
    mamf: float
    d_half: float
    hbm_bytes_per_second: float
    gpu: object
    """The Accelerator (attention kernel tables)."""
    attention_fallback_efficiency: float
    seq_len: int
    lora_rank: int = 0
    recompute: str = "none"
    attention_kernel: str = "flash"
    param_bytes: float = 2.0
    """Bytes per trained parameter and optimizer-state element (bf16 2, amp / fp32 4)."""
    optimizer_impl: str = "foreach"
    factors: tuple[float, float, float, float] = (1.0, 1.0, 1.0, 1.0)
    """Calibrated measured / predicted ratios of the (matmul, attention, memory-bound, host)
    seconds (gpuplan.calibrate); 1 = the model as derived."""


def _rates(run: EagerRun, peak: float, operand_bytes: float) -> G.GemmRates:
    return G.GemmRates(peak, run.mamf, run.d_half, run.hbm_bytes_per_second, operand_bytes)


def fp32_expert_loop(linears: list[G.Linear]) -> list[G.Linear]:
    """The routed experts of an amp run as torch executes them: transformers casts the tokens to the
    experts' fp32 weights (integrations/moe.py@5.17.0 L332: ``grouped_mm(input.to(weight.dtype), ...)``;
    grouped_mm is not autocast-enabled) and torch's CUDA _grouped_mm takes fp32 (GroupedMMUtils.h
    _grouped_mm_validate_inputs: Float32, BFloat16 or Float16) but runs its CUTLASS kernel for bf16 only
    (cuda/GroupedBlas.cpp _grouped_mm_cuda: ``use_fast_path = ... && a_b_and_out_are_bf16``, else
    _grouped_mm_fallback: offs.cpu(), one mm per group; torch 2.9-2.11). With TF32 off (torch's default) each
    expert is its own fp32 GEMM at the part's fp32 rate (count x groups, one group each). Not counted: the
    device-to-host sync of offs each such call (about one launch latency exposed per call)."""
    return [replace(lin, count=lin.count * lin.groups, groups=1.0) if lin.groups > 1 else lin for lin in linears]


def _base_matmuls(base: list[G.Linear], run: EagerRun, tokens, weight_grads: bool):
    """(forward, backward) seconds of the layer's own linears: bf16 (autocast) GEMMs, an amp run's
    experts in fp32 one per expert (fp32_expert_loop; param_bytes 4 = fp32 parameters under autocast)."""
    if run.param_bytes < 4.0 or not any(lin.groups > 1 for lin in base):
        return G.linears_seconds(base, tokens, _rates(run, run.peak, 2.0), weight_grads=weight_grads)
    dense = [lin for lin in base if lin.groups <= 1]
    experts = fp32_expert_loop([lin for lin in base if lin.groups > 1])
    f1, b1 = G.linears_seconds(dense, tokens, _rates(run, run.peak, 2.0), weight_grads=weight_grads)
    f2, b2 = G.linears_seconds(experts, tokens, _rates(run, run.fp32_peak, 4.0), weight_grads=weight_grads)
    return f1 + f2, b1 + b2


def expert_lora_rank(lin: G.Linear, rank: int) -> int:
    """peft's rank on a fused expert parameter: gate_up carries gate's and up's adapters, 2r
    (peft/utils/transformers_weight_conversion.py@0.21.0 L474: ``r * len(required_old_targets)``)."""
    return 2 * rank if lin.name.endswith("gate_up") else rank


PEFT_ACTIVATION_CPU_SECONDS = {"expert": 171e-6, "router": 122e-6}
"""Python seconds, on the CPU that measured core.time.host.HOST_SECONDS_PER_OP, of peft 0.21's
ParamWrapper._activate_lora entered and left once per forward (register_parametrization with its check,
remove_parametrizations), per adapted expert parameter and for the router. Measured 2026-12-06 on a tiny
Qwen3-MoE layer (8 experts, hidden 64; transformers 5.17.0, peft 0.21.0, torch 2.13 CPU, min of 7 x 200):
down_proj 199 us, gate_up_proj 208, router 146, less their 5 / 5 / 4 ATen ops at that machine's 1-element
add_ (2.73 us; the op profile counts them), x 2.465 / 2.73 (host.REFERENCE_PROBES' add_ over that one)."""
FOLDS_PER_FORWARD = 2
"""peft's expert fold per forward: the parametrization's registration check and its use (expert_lora_seconds)."""


def expert_lora_seconds(base: list[G.Linear], run: EagerRun, tokens):
    """(forward, backward) seconds LoRA on a MoE layer's experts adds (peft 0.21 with transformers 5.x 3-D
    expert parameters: "all-linear" targets gate_up_proj and down_proj as parameters, ParamWrapper).

    peft folds the adapters into the weight on every forward, W' = baddbmm(W, B, A) per expert in W's dtype
    (peft/tuners/lora/layer.py@0.21.0 _LoraFactorsProxy.forward L2292-2296: it reads W and writes an
    expert-stack-sized W'), so the grouped GEMM's weight gradient runs although W is frozen (W' needs it for
    A and B), and the backward of the baddbmm multiplies that gradient by A and by B (two batched GEMMs over
    it). peft registers the fold as a parametrization on each forward (_activate_lora L2567), and torch's
    register_parametrization evaluates it once to check its shape and dtype (torch/nn/utils/parametrize.py
    ParametrizationList.__init__: ``if not self.unsafe: Z = self()``): two folds per forward, one in the graph
    (the census of the layer shows two baddbmm per expert parameter forward, two bmm backward). Units: seconds."""
    experts = [lin for lin in base if lin.groups > 1]
    if not experts:
        return 0.0, 0.0
    _, without = _base_matmuls(experts, run, tokens, weight_grads=False)
    _, with_w = _base_matmuls(experts, run, tokens, weight_grads=True)
    fwd, bwd = 0.0, with_w - without
    peak = run.fp32_peak if run.param_bytes >= 4.0 else run.peak  # autocast is off inside the fold
    g = dict(peak=peak, mamf=run.mamf, d_half=run.d_half, hbm_bytes_per_second=run.hbm_bytes_per_second,
             operand_bytes=run.param_bytes)
    for lin in experts:
        r, out, inp = expert_lora_rank(lin, run.lora_rank), lin.outputs, lin.inputs
        w_bytes = lin.groups * out * inp * run.param_bytes  # baddbmm's C operand (W), read besides A, B and W'
        fold = G.gemm_seconds(out, r, inp, groups=lin.groups, **g) + memory_bound_seconds(w_bytes, 0.0,
                                                                                         run.hbm_bytes_per_second)
        fwd = fwd + FOLDS_PER_FORWARD * fold
        bwd = bwd + G.gemm_seconds(out, inp, r, groups=lin.groups, **g) + G.gemm_seconds(r, out, inp, groups=lin.groups,
                                                                                         **g)
    return fwd, bwd


ATTENTION_LINEARS = ("q", "k", "v", "o", "qkv")


def eager_layer_linears(spec: ModelSpec, moe: bool) -> list[G.Linear]:
    """One layer's linears as transformers runs them (core.time.linears.layer_linears), MLA's attention as
    DeepSeek-V2/V3's modeling code has it (modeling_deepseek_v3.py@5.17.0 L383-411, the linears
    core.model.finetune.peft_attention_widths counts and core.model.flops.attention_matmul_weights times):
    q_proj (or q_a_proj + q_b_proj), kv_a_proj_with_mqa (h -> kv_lora_rank + rope), kv_b_proj (kv_lora_rank ->
    heads x (nope + v)), o_proj, not q, k, v at the head widths (V2-Lite: 13.76 M weights, not 20.97 M)."""
    base, a, h = G.layer_linears(spec, moe_layer=moe), spec.attention, spec.hidden_size
    if not a.is_mla:
        return base
    q_out, latent = a.num_heads * a.qk_head_dim, a.kv_lora_rank or 0
    q = [G.Linear("q_a", h, a.q_lora_rank), G.Linear("q_b", a.q_lora_rank, q_out)] if a.q_lora_rank \
        else [G.Linear("q", h, q_out)]
    mla = q + [G.Linear("kv_a", h, latent + a.qk_rope_head_dim),
               G.Linear("kv_b", latent, a.num_heads * (a.qk_nope_head_dim + a.value_head_dim)),
               G.Linear("o", a.num_heads * a.value_head_dim, h)]
    return mla + [lin for lin in base if lin.name not in ATTENTION_LINEARS]


def peft_linear_adapters(base: list[G.Linear], rank: int) -> list[G.Linear]:
    """peft's per-token (A, B) pairs on a layer's 2-D linears ("all-linear"): every one but the routed experts
    (expert_lora_seconds) and the router (its weight is folded like theirs; the fold's h x experts is left out:
    under 0.1% of the experts'); a shared expert as the gate_proj, up_proj and down_proj it is in transformers
    (core.model.finetune.peft_moe_layer_params), its gate and up two adapters."""
    out = []
    for lin in base:
        if lin.groups > 1 or lin.name == "router":
            continue
        parts = [G.Linear(n, lin.inputs, lin.outputs / 2) for n in ("shared.gate", "shared.up")] \
            if lin.name == "shared.gate_up" else [lin]
        out += [x for q in parts for x in (G.Linear(q.name + ".lora_A", q.inputs, rank),
                                            G.Linear(q.name + ".lora_B", rank, q.outputs))]
    return out


def _layer_matmuls(spec: ModelSpec, run: EagerRun, tokens, moe: bool):
    """(forward, backward, recompute) matmul seconds of one layer."""
    base = eager_layer_linears(spec, moe)
    frozen = run.lora_rank > 0
    fwd, bwd = _base_matmuls(base, run, tokens, weight_grads=not frozen)
    if run.attention_kernel == "eager":
        seqs = tokens / run.seq_len
        for m, k, n, heads in A.eager_score_linears(spec, run.seq_len):
            g = dict(peak=run.peak, mamf=run.mamf, d_half=run.d_half, hbm_bytes_per_second=run.hbm_bytes_per_second,
                     groups=heads * seqs)
            fwd = fwd + G.gemm_seconds(m, k, n, **g)
            bwd = bwd + G.gemm_seconds(m, n, k, **g) + G.gemm_seconds(k, m, n, **g)
    if frozen:
        adapted = peft_linear_adapters(base, run.lora_rank)
        if moe:  # the routed experts' adapters: expert_lora_seconds
            f, b = expert_lora_seconds(base, run, tokens)
            fwd, bwd = fwd + f, bwd + b
        f, b = G.linears_seconds(adapted, tokens, _rates(run, run.fp32_peak, 4.0), weight_grads=True)
        fwd, bwd = fwd + f, bwd + b
    if run.recompute == "full":
        again = fwd
    elif run.recompute == "selective":  # op-level SAC recomputes every second matmul (core.time docstring)
        again, _ = _base_matmuls(base[1::2], run, tokens, weight_grads=False)
    else:
        again = 0.0
    return fwd, bwd, again


def _attention(spec: ModelSpec, run: EagerRun, tokens):
    if run.attention_kernel == "eager":
        return 0.0, 0.0  # its matmuls are in _layer_matmuls, its softmax and masks in the op profile
    f, b = A.sdpa_seconds_per_token(spec, run.seq_len, gpu=run.gpu, peak=run.peak,
                                    fallback_efficiency=run.attention_fallback_efficiency)
    return tokens * f, tokens * b


def masked_sdpa_extra(spec: ModelSpec, run: EagerRun, tokens) -> tuple[tuple, tuple]:
    """((bytes, kernels) forward, (bytes, kernels) backward) per layer that SDPA with a materialised sliding
    mask adds to the op profile (whose shapes stay below the window: scripts/hf_op_profiles.py), averaged over
    the layers. With a mask, transformers repeats k and v to every head (integrations/sdpa_attention.py@5.17.0
    L97-101; use_gqa_in_sdpa L27-35 needs ``attention_mask is None``): forward two copies reading kv and writing q
    width, backward two sums back; and torch turns the boolean (b, 1, s, s) mask into an additive one on every
    call (attention.cpp convert_boolean_attn_mask_cudnn: ``where(mask.logical_not(), -65504, 0)``: 1 + 1 B,
    then 1 + 2 B per element, two kernels). Recompute (full, or op-level SAC: none of these is a saved mm)
    runs the forward's again in the backward. bf16 k / v. Units: bytes, kernels."""
    if run.attention_kernel == "eager" or not sliding_mask_applies(spec, run.seq_len):
        return (0.0, 0.0), (0.0, 0.0)
    a = spec.attention
    share = spec.num_sliding_layers / spec.num_layers
    mask = 5.0 * tokens * run.seq_len
    if a.num_heads > a.num_kv_heads:
        k, v = a.num_kv_heads * a.qk_head_dim, a.num_kv_heads * a.value_head_dim
        repeat = 2.0 * tokens * (k + v + a.num_heads * (a.qk_head_dim + a.value_head_dim))
        copies = 2.0
    else:
        repeat = copies = 0.0
    fwd = (share * (mask + repeat), share * (2.0 + copies))
    again = fwd if run.recompute in ("full", "selective") else (0.0, 0.0)
    return fwd, (share * repeat + again[0], share * copies + again[1])


def _head_matmuls(spec: ModelSpec, run: EagerRun, tokens):
    head = [G.Linear("lm_head", spec.hidden_size, spec.vocab_size)]
    return G.linears_seconds(head, tokens, _rates(run, run.peak, 2.0), weight_grads=run.lora_rank == 0)


def layer_kinds(spec: ModelSpec, layers) -> tuple[tuple[object, bool], ...]:
    """((layers of the kind, is a MoE layer), ...) on a stage of ``layers`` decoder layers: a model with MoE
    layers keeps spec.num_dense_layers dense ones (DeepSeek's first_k_dense_replace: V2-Lite 1 of 27, V3 3 of
    61; core.model.spec.count_parameters and core.model.finetune.lora_params count them apart), split across a
    stage in their whole-model proportion as lora_params splits them (hf is data-parallel only: the stage is
    the model)."""
    if spec.moe is None or spec.num_moe_layers <= 0:
        return ((layers, False),)
    if spec.num_dense_layers <= 0:
        return ((layers, True),)
    moe = layers * spec.num_moe_layers / spec.num_layers
    return ((moe, True), (layers - moe, False))


def microbatch(spec: ModelSpec, run: EagerRun, tokens, layers, head=1.0) -> tuple[PhaseTimes, PhaseTimes]:
    """(forward, backward) of one micro-batch on a stage with ``layers`` decoder layers (and the
    embedding, LM head and loss where ``head`` is 1: a number or an array of 0 / 1). Dense and MoE layers
    (layer_kinds) each take their own linears, adapters and op-profile features (P, R, T*I or the experts')."""
    rf = rest_features(spec, tokens, run.seq_len)
    kinds = []  # (layers, features, (fwd, bwd, recompute) matmul seconds, peft host seconds a forward) per kind
    for n, moe in layer_kinds(spec, layers):
        # a LoRA MoE layer's peft activations, each forward (recompute: the backward's again)
        peft_cpu = 2 * PEFT_ACTIVATION_CPU_SECONDS["expert"] + PEFT_ACTIVATION_CPU_SECONDS["router"] \
            if run.lora_rank and moe else 0.0
        kinds.append((n, layer_features(spec, tokens, run.seq_len, run.lora_rank, moe_layer=moe),
                      _layer_matmuls(spec, run, tokens, moe), peft_cpu))
    att_f, att_b = _attention(spec, run, tokens)
    h_f, h_b = _head_matmuls(spec, run, tokens)
    h_f, h_b = head * h_f, head * h_b
    recompute_attention = att_f if run.recompute == "full" else 0.0
    scale = reference_scale()
    out = []
    masked = masked_sdpa_extra(spec, run, tokens)
    for phase, gemm, att, (extra_bytes, extra_kernels) in (
            ("forward", h_f, layers * att_f, masked[0]),
            ("backward", h_b, layers * (att_b + recompute_attention), masked[1])):
        per_op = cpu_seconds_per_op(phase, run.recompute == "selective")
        nbytes = kernels = all_kernels = host_cpu = 0.0
        for n, lf, (fwd_g, bwd_g, again), peft_cpu in kinds:
            gemm = gemm + n * (fwd_g if phase == "forward" else bwd_g + again)
            nbytes = nbytes + n * (run.ops.value("layer", f"{phase}.memory", "bytes", lf) + extra_bytes)
            kernels = kernels + n * (run.ops.value("layer", f"{phase}.memory", "kernels", lf) + extra_kernels)
            all_kernels = all_kernels + n * (run.ops.cell_total("layer", phase, "kernels", lf) + extra_kernels)
            host = n * run.ops.cell_total("layer", phase, "ops", lf) * per_op
            if phase == "forward" or run.recompute in ("full", "selective"):
                host = host + n * peft_cpu
            host_cpu = host_cpu + host
        nbytes = nbytes + head * run.ops.value("rest", f"{phase}.memory", "bytes", rf)
        kernels = kernels + head * run.ops.value("rest", f"{phase}.memory", "kernels", rf)
        all_kernels = all_kernels + head * run.ops.cell_total("rest", phase, "kernels", rf)
        host_cpu = host_cpu + head * run.ops.cell_total("rest", phase, "ops", rf) * per_op
        memory = memory_bound_seconds(maximum(nbytes, 0.0), maximum(kernels, 0.0), run.hbm_bytes_per_second)
        host_cpu = maximum(host_cpu, all_kernels * CPU_TINY_KERNEL_SECONDS)  # a first-layer correction can be < 0
        fg, fa, fm, fh = run.factors
        out.append(PhaseTimes(fg * gemm, fa * att, fm * memory, fh * scale.seconds(host_cpu, all_kernels)))
    return out[0], out[1]


def optimizer_step(run: EagerRun, trained_params, tensors) -> PhaseTimes:
    """The optimizer step over ``trained_params`` parameters in ``tensors`` tensors."""
    nbytes = optimizer_bytes(run.optimizer_impl, trained_params, run.param_bytes)
    kernels = optimizer_kernels(run.optimizer_impl, trained_params, tensors)
    host = reference_scale().seconds(tensors * HOST_SECONDS_PER_TRAINED_TENSOR, kernels)
    _, _, fm, fh = run.factors
    return PhaseTimes(memory=fm * memory_bound_seconds(nbytes, kernels, run.hbm_bytes_per_second), host=fh * host)


def trained_tensors(spec: ModelSpec, lora_rank: int, layers) -> float:
    """Parameter tensors the optimizer walks: per layer the weights and norms (LoRA: each adapted
    linear's A and B, nothing else), plus embedding, final norm and LM head."""
    if lora_rank:
        return layers * len(G.lora_linears(spec, lora_rank))
    return layers * (len(G.layer_linears(spec)) + spec.norms_per_layer) + 2 + (0 if spec.tie_embeddings else 1)
