"""Step time: compute (per-op efficiency) + exposed communication + pipeline bubble + optimizer
step, and the MFU/HFU it implies.

Compute per micro-batch on one GPU:
  matmuls    FLOPs / (peak x e_gemm), e_gemm = MAMF x d / (d + d_half)  with d the smallest GEMM
             dimension per GPU (hidden/tp or tokens); MAMF = the measured "maximum achievable
             matmul FLOPS" fraction of peak (stas00/ml-engineering, compute/accelerator README:
             A100 SXM 86.9%, H100 SXM 80.3%, MI300X 60.1%, ...), d_half calibrated (docs/step.md)
  attention  executed (causal) score/context FLOPs / (peak x e_attn); backward = 2.5 x forward
             (FlashAttention recomputes the scores; Dao 2023, FlashAttention-2 Sec. 3.1)
  elementwise  norms, activations, RoPE, residuals: memory-bound; bytes ~ 3 x the activation bytes
             a layer saves (written in forward, read and written in backward) / HBM bandwidth
Backward matmuls = 2 x forward. Full recompute re-runs each layer's forward; selective re-runs
attention. Pipeline: t = t_microbatch x (m + (p-1)/v) (Narayanan et al. 2021, eq. 1 and Sec. 2.2).
Scalars or numpy arrays may be passed for the layout degrees (the planner evaluates in bulk).
Units: seconds, FLOPs, bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.core import activations as A
from gpuplan.core import comm as C
from gpuplan.core import flops as F
from gpuplan.core.model import ModelSpec
from gpuplan.core.topology import Cluster

# Maximum achievable matmul FLOPS as a fraction of dense peak (BF16), measured with
# mamf-finder.py (stas00/ml-engineering, compute/accelerator/README.md, MAMF table).
MAMF_FRACTION = {
    "a100-sxm4-80gb": 0.869, "a100-sxm4-40gb": 0.869, "a800-sxm4-80gb": 0.869,
    "a100-pcie-80gb": 0.811, "a100-pcie-40gb": 0.811,
    "h100-sxm": 0.803, "h800-sxm": 0.803, "h200-sxm": 0.803, "h100-pcie": 0.80, "h100-nvl": 0.80,
    "gh200": 0.836, "b200": 0.776, "gb200": 0.776, "mi250x": 0.767, "mi300x": 0.601, "gaudi2": 0.969,
}
DEFAULT_MAMF_FRACTION = 0.75  # parts without a published MAMF measurement

# Executed (causal) attention FLOPs per second / dense peak, forward+backward of the fused
# attention kernel, fitted with the two GEMM constants below to the 209 llm-foundry MPT BF16
# benchmark runs (mosaicml/llm-foundry scripts/train/benchmarking/README.md; Triton/Flash
# attention of 2023-24): Ampere 0.30, Hopper 0.20 (FlashAttention-2 is not Hopper-tuned; FA3
# reaches ~0.6-0.75 fwd, Shah et al. 2024). Override with StepSettings.attention_efficiency.
ATTENTION_EFFICIENCY = {"h100-sxm": 0.20, "h800-sxm": 0.20, "h200-sxm": 0.20, "h100-pcie": 0.20,
                        "h100-nvl": 0.20, "h20": 0.20}
DEFAULT_ATTENTION_EFFICIENCY = 0.30


@dataclass(frozen=True)
class StepSettings:
    """Efficiency knobs (catalog defaults, calibratable) and the run's step shape."""

    seq_len: int = 4096
    recompute: str = "none"
    dtype: str = "bf16"
    gemm_d_half: float = 512.0
    """GEMM dimension at which efficiency is half of MAMF (saturating shape model; fitted with
    the attention efficiency, see ATTENTION_EFFICIENCY)."""
    attention_efficiency: float | None = None
    """Executed attention FLOPs / peak; None = the accelerator's default (ATTENTION_EFFICIENCY)."""
    hbm_efficiency: float = 0.75
    elementwise_factor: float = 6.0
    """HBM bytes moved by elementwise ops per byte of saved activations (fitted, see above)."""
    dp_overlap: float = 0.9
    """Fraction of DP/FSDP communication that bucketing and prefetch can hide behind compute."""
    tp_overlap: float = 0.0
    """Megatron TP collectives sit on the critical path unless TP comm overlap is enabled."""
    ep_overlap: float = 0.0
    grad_comm_bytes: float = 2.0
    """Bytes per gradient element on the wire (bf16 = 2; fp32 reduction = 4)."""
    weight_comm_bytes: float = 2.0
    finetune: str = "full"
    """'full', or 'lora'/'qlora': a frozen base (no weight-gradient matmuls, gradients and
    optimizer step for the adapters only; core/finetune.py)."""
    lora_rank: int = 16


@dataclass(frozen=True)
class StepBreakdown:
    """Seconds per optimizer step on the critical path (worst GPU)."""

    compute: float
    bubble: float
    tp_comm: float
    pp_comm: float
    dp_comm: float
    cp_comm: float
    ep_comm: float
    optimizer: float
    comm_total: float
    """All communication time, hidden or not."""

    @property
    def total(self) -> float:
        return (self.compute + self.bubble + self.tp_comm + self.pp_comm + self.dp_comm + self.cp_comm
                + self.ep_comm + self.optimizer)

    @property
    def exposed_comm(self) -> float:
        return self.tp_comm + self.pp_comm + self.dp_comm + self.cp_comm + self.ep_comm


def gemm_efficiency(gpu_id: str, smallest_dim, d_half: float):
    """Fraction of dense peak a GEMM reaches: MAMF x d / (d + d_half)."""
    return MAMF_FRACTION.get(gpu_id, DEFAULT_MAMF_FRACTION) * smallest_dim / (smallest_dim + d_half)


def _min(a, b):
    return C._minimum(a, b)


def microbatch_compute_time(spec: ModelSpec, cluster: Cluster, settings: StepSettings, tp, cp, micro_batch,
                            layers, head: bool):
    """Forward + backward (+ recompute) seconds for one micro-batch on one GPU of a stage with
    ``layers`` layers (``head``: the LM head lives here)."""
    gpu = cluster.gpu
    peak = gpu.peak(settings.dtype)  # matmuls run at the compute dtype's peak (FP8 linears) ...
    attn_peak = gpu.peak("bf16") if gpu.has_dtype("bf16") else peak  # ... attention stays in bf16
    tokens = micro_batch * settings.seq_len / cp
    h = spec.hidden_size
    gemm_flops = 2.0 * F.layer_matmul_weights_per_token(spec) / spec.num_layers / tp
    attn_flops = F.attention_core_flops_per_token(spec, settings.seq_len, "causal") / spec.num_layers / tp
    e_gemm = gemm_efficiency(gpu.id, _min(h / tp, tokens), settings.gemm_d_half)
    act = A.layer_activations(spec, settings.seq_len, impl="megatron").total / tp
    t_gemm = gemm_flops / (peak * e_gemm)
    e_attn = settings.attention_efficiency or ATTENTION_EFFICIENCY.get(gpu.id, DEFAULT_ATTENTION_EFFICIENCY)
    t_attn = attn_flops / (attn_peak * e_attn)
    t_elem = settings.elementwise_factor * act / (gpu.memory_bandwidth * settings.hbm_efficiency)
    fwd = tokens * (t_gemm + t_attn + t_elem / 3)
    weight_grads = 1.0 if settings.finetune == "full" else 0.0  # a frozen base computes input gradients only
    bwd = tokens * ((1 + weight_grads) * t_gemm + 2.5 * t_attn + 2 * t_elem / 3)
    extra = {"none": 0.0, "selective": tokens * t_attn, "full": fwd}[settings.recompute]
    per_layer = fwd + bwd + extra
    head_flops = 2.0 * spec.vocab_size * h / tp
    head_time = (2 + weight_grads) * tokens * head_flops / (peak * gemm_efficiency(gpu.id, _min(h, tokens),
                                                                                    settings.gemm_d_half))
    return (layers * per_layer + head * head_time, layers * tokens * (t_attn * 3.5),
            layers * tokens * (1 + weight_grads) * t_gemm)


def _link(cluster: Cluster, span):
    """Bandwidth and latency for groups spanning ``span`` consecutive ranks (array-friendly)."""
    up_bw, up_lat = cluster.link(1)
    out_bw, out_lat = cluster.link(cluster.gpus_per_node + 1)
    inside = span <= cluster.gpus_per_node
    return inside * up_bw + (1 - inside) * out_bw, inside * up_lat + (1 - inside) * out_lat


def params_per_gpu(spec: ModelSpec, tp, pp, ep):
    """Parameters one GPU holds before ZeRO sharding: dense weights / (tp x pp), experts /
    (ep x pp) (approximation used for communication volumes)."""
    from gpuplan.core.model import count_parameters

    counts = count_parameters(spec)
    dense = counts.total - counts.routed_experts
    return dense / (tp * pp) + counts.routed_experts / (ep * pp)


def _adapters_per_gpu(spec: ModelSpec, settings: StepSettings, tp, pp):
    from gpuplan.core.finetune import lora_params_per_layer

    return spec.num_layers * lora_params_per_layer(spec, settings.lora_rank, tp) / pp


def step_time(spec: ModelSpec, cluster: Cluster, settings: StepSettings, *, dp=1, tp=1, pp=1, vpp=1, cp=1,
              ep=1, zero=0, micro_batch=1, micro_batches=1, shard_group=None) -> StepBreakdown:
    """Seconds per optimizer step. Rank order tp (innermost), cp, dp, pp (Megatron's default
    'tp-cp-ep-dp-pp'): a group rides NVLink when it spans no more than a node. ``shard_group``
    (HSDP): ZeRO shards within groups of that many data-parallel ranks and all-reduces the
    shards across the groups (PyTorch HYBRID_SHARD)."""
    # uneven stages (core.memory.stage_layer_counts): the first ones take the remainder, the last
    # (with the LM head) never has more; the slowest stage sets the pipeline's pace
    base, extra = spec.num_layers // pp, spec.num_layers % pp
    layers = base + (extra > 0)  # the first (fullest) stage
    last_layers = base + (pp == 1) * extra
    t_mb, t_attn_mb, t_bwd_gemm_mb = microbatch_compute_time(spec, cluster, settings, tp, cp, micro_batch,
                                                              layers, head=(pp == 1))
    t_last, _, _ = microbatch_compute_time(spec, cluster, settings, tp, cp, micro_batch, last_layers, head=True)
    t_mb = t_mb + (t_last - t_mb) * (t_last > t_mb)
    compute = t_mb * micro_batches
    bubble = t_mb * (pp - 1) / vpp
    tokens = micro_batch * settings.seq_len / cp
    h = spec.hidden_size
    act_bytes = tokens * h * 2.0
    # TP: 2 all-reduces forward + 2 backward per layer (Megatron, Shoeybi et al. 2019 Fig. 4);
    # with sequence parallelism reduce-scatter + all-gather of the same volume; +2 on recompute
    per_layer_collectives = 4 + 2 * (settings.recompute == "full")
    tp_bw, tp_lat = _link(cluster, tp)
    tp_total = micro_batches * layers * per_layer_collectives * C.all_reduce_time(act_bytes, tp, tp_bw, tp_lat)
    tp_exposed = (1 - settings.tp_overlap) * tp_total
    # PP: activations (scattered over tp) forward and gradients backward at each boundary; only the
    # fill and drain transfers are exposed
    pp_bw, pp_lat = _link(cluster, tp * cp * dp * pp)
    pp_one = C.p2p_time(act_bytes / tp, pp_bw, pp_lat)
    pp_total = 2 * micro_batches * (pp > 1) * pp_one
    pp_exposed = 2 * (pp - 1) * pp_one
    # DP / ZeRO over dp x cp ranks
    data = dp * cp
    shard = data if shard_group is None else shard_group
    replicas = data / shard
    dp_bw, dp_lat = _link(cluster, tp * shard)
    rep_bw, rep_lat = _link(cluster, tp * data)
    params = params_per_gpu(spec, tp, pp, ep)
    trained = params if settings.finetune == "full" else _adapters_per_gpu(spec, settings, tp, pp)
    grads = trained * settings.grad_comm_bytes
    weights = params * settings.weight_comm_bytes
    zero3 = zero >= 3
    sync = (1 - zero3) * (C.reduce_scatter_time(grads, shard, dp_bw, dp_lat)
                          + C.all_gather_time(weights, shard, dp_bw, dp_lat))  # == all-reduce volume at zero 0
    gathers = zero3 * micro_batches * 2 * C.all_gather_time(weights, shard, dp_bw, dp_lat)
    across = C.all_reduce_time(grads / shard, replicas, rep_bw, rep_lat)  # HSDP: shards across groups
    dp_total = sync + gathers + zero3 * C.reduce_scatter_time(grads, shard, dp_bw, dp_lat) + across
    window = t_bwd_gemm_mb + zero3 * compute
    dp_exposed = C.exposed(dp_total, window, settings.dp_overlap)
    # CP: ring of K/V blocks, overlapped with attention (Liu et al. 2023, Ring Attention)
    a = spec.attention
    kv_width = (a.num_heads if a.is_mla else a.num_kv_heads) * (a.qk_head_dim + a.value_head_dim)
    cp_bw, cp_lat = _link(cluster, tp * cp)
    cp_total = micro_batches * layers * 3 * (cp - 1) * C.p2p_time(tokens * kv_width * 2.0 / tp, cp_bw, cp_lat)
    cp_exposed = C.exposed(cp_total, micro_batches * t_attn_mb, 1.0)
    # EP: dispatch + combine all-to-all per MoE layer, forward and backward
    ep_total = 0.0
    if spec.moe is not None:
        ep_bw, ep_lat = _link(cluster, tp * cp * ep)
        moe_layers = spec.num_moe_layers * layers / spec.num_layers
        routed = tokens * spec.moe.experts_per_token * h * 2.0
        ep_total = micro_batches * moe_layers * 4 * C.all_to_all_time(routed, ep, ep_bw, ep_lat)
    ep_exposed = (1 - settings.ep_overlap) * ep_total
    # optimizer: read+write weights, grads, fp32 master and two Adam states (~20 B/param, memory-bound)
    shards = data * (zero >= 1) + (zero < 1)
    optimizer = 2 * 16.0 * trained / shards / (cluster.gpu.memory_bandwidth * settings.hbm_efficiency)
    return StepBreakdown(compute, bubble, tp_exposed, pp_exposed, dp_exposed, cp_exposed, ep_exposed, optimizer,
                         comm_total=tp_total + pp_total + dp_total + cp_total + ep_total)


def model_flops_per_token(spec: ModelSpec, seq_len, finetune: str = "full", lora_rank: int = 16) -> float:
    """gpuplan's MFU numerator: exact training FLOPs per token with the PaLM/Megatron 'full'
    attention convention (no causal halving), LM head included, embeddings a lookup; with a
    frozen base (LoRA/QLoRA) the FLOPs a frozen base needs."""
    return F.training_flops_per_token(spec, seq_len, "full", finetune=finetune, lora_rank=lora_rank).model
