"""Framework profiles: what a named training framework keeps, shards and recomputes, beyond the
architecture. ``--framework`` picks one; each field below is one behaviour, with the framework
version and source file it mirrors (read from the frameworks' code; the fake-tensor runs of their
own code are in catalog/reference/framework_measurements.yaml).

Units: bytes, elements per token where named. Degrees may be numbers or numpy arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.core.time.eager_fallbacks import MEGATRON_EAGER_FALLBACKS
from gpuplan.core.time.megatron_ops import TE_HIDDEN_TP_SHARE, te_hidden_tp_share
from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.parallel import ParallelLayout
from gpuplan.errors import InputError

FP32 = 4


@dataclass(frozen=True)
class FrameworkProfile:
    """One framework's memory behaviour (all defaults are the framework's own)."""

    name: str
    version: str
    sources: tuple[str, ...]
    recipe: str
    """Precision recipe of the model states by default (core.precision.RECIPES)."""
    implementation: str
    """Activation implementation (core.memory.activations): which tensors a layer saves."""
    optimizer_impl: str
    """Default optimizer kernel: foreach, fused or forloop ('recipe': the precision recipe's)."""
    selective: str
    """What --recompute selective keeps: 'op-sac' (every other matmul output + attention output),
    'core-attn' (drops only the attention core's s x s tensors), 'llmc-gelu' (llm.c -r 1: the GELU output) or
    'none' (no selective mode)."""
    loss: str
    """'hf-ce' (HF's output object keeps the bf16 logits; the loss saves its fp32 log-softmax),
    'fp32-ce' (only the fp32 log-softmax is saved: torchtitan's cross_entropy(pred.float()) with
    `del pred`), 'vocab-parallel-ce' (Megatron: the fp32 softmax, whose backward works in place) or
    'chunked' (LM head + CE per chunk)."""
    pp_keeps_unsharded: bool = False
    """FSDP under pipeline parallelism keeps the stage's params unsharded (bf16) and accumulates
    unsharded fp32 grads across micro-batches."""
    zero2_is_fsdp2_no_reshard: bool = False
    """Its ZeRO-2 is FSDP2's fully_shard(reshard_after_forward=False) (FSDP1's SHARD_GRAD_OP, torch's ZeRO-2):
    every parameter sharded as at ZeRO-3, the bf16 params kept unsharded from forward into backward
    (states_zero, pp_unsharded_stage_bytes)."""
    bucket_elements: float = 0.0
    """Gradient-reduction bucket(s) outside the model states (DeepSpeed IPG buffers), elements."""
    zero3_prefetch_elements: float = 0.0
    """Parameters ZeRO-3 gathers ahead of use beyond the layer running (DeepSpeed
    stage3_prefetch_bucket_size), elements."""
    step_fp32_grads: bool = False
    """The optimizer step converts the gradient partition to fp32 first (DeepSpeed ZeRO)."""
    fp32_adapters: bool = False
    """LoRA adapters kept in fp32 (PEFT autocast_adapter_dtype) whatever the base dtype."""
    hopper_tuned_attention: bool = False
    """Runs FA3-class attention on Hopper (TE's cuDNN fused attention): core.time.step.attention_efficiency."""
    loss_parallel: bool = False
    """With TP the loss runs on vocab-sharded logits through DTensor's loss_parallel (torchtitan)."""
    default_zero: int = 1
    """Sharding when data-parallel and none is given (FSDP2: 3; distributed optimizer: 1; DDP: 0)."""
    embedding_own_fsdp_unit: bool = False
    """The token embedding is its own FSDP unit, resharded after forward, so backward's working set
    holds only the head's unit (torchtitan apply_fsdp); otherwise embedding and head share the root."""
    expandable_segments: bool = False
    """Its launcher sets PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (core.memory.device_memory)."""
    reports: str = "allocated and reserved"
    """What its memory log line prints."""
    max_zero_with_pp: int = 3
    """Highest ZeRO stage the framework runs with pipeline parallelism (DeepSpeed's PipelineEngine
    asserts "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism",
    deepspeed/runtime/pipe/engine.py)."""
    pipeline_bf16_optimizer: bool = False
    """bf16 at ZeRO stage 0 under its pipeline engine runs DeepSpeed's BF16_Optimizer (engine.py@edaa722
    L2014-2018): fp32 master and optimizer states over the data-parallel ranks, a whole bf16 accumulation buffer
    (core.memory.bf16_optimizer), the bf16 weights all-gathered after each step (bf16_optimizer.py L454-464,
    core.comm.dp_costs)."""
    interleaved_pipeline: bool = True
    """Runs the interleaved 1F1B schedule (vpp > 1). DeepSpeed's PipelineEngine does not: its
    TrainSchedule steps 2 x (micro_batches + stages - 1) over whole stages
    (deepspeed/runtime/pipe/schedule.py)."""
    interleaved_needs_pp_micro_batches: bool = False
    """Its interleaved schedule needs at least pp micro-batches per step: Megatron-Core raises
    unless microbatch_group_size_per_vp_stage (default pp) lies in [pp, m]
    (megatron/core/pipeline_parallel/schedules.py); PyTorch's ScheduleInterleaved1F1B runs fewer
    in one round (core.time.pipeline_schedule prices the idle time)."""
    zero3_regathers_on_recompute: bool = False
    """ZeRO-3 gathers parameters again for the recomputed forward (core/comm/zero3_gathers.py)."""
    zero3_overlap: float | None = None
    """Share of ZeRO-3 communication hidden behind compute, where it differs from --dp-overlap."""
    trains_mtp: bool = False
    """Computes the MTP modules a config declares (num_nextn_predict_layers) by default (core.model.mtp)."""
    eager_fallbacks: tuple[str, ...] = ()
    """Paths it runs as eager PyTorch ops for models that have them (core.time.eager_fallbacks:
    Megatron-Core's expert fc2 bias and activation clamp without the TE op fuser, RoPE with a YaRN
    attention factor)."""
    moe_launch: str = "none"
    """How it issues a MoE layer (core.time.moe_host): 'eager' for Megatron-Core (cuda_graph_impl
    defaults to 'none', transformer_config.py@core_v0.15.0 L638), whose dispatcher makes the host wait once per MoE layer."""
    fused_qkv: bool | None = None
    """Where its selective recompute is op-level SAC (the only reader: op_sac_fused_qkv): its model code runs
    q, k and v as one linear (True), three (False), or as the model's config builds them (None: transformers)."""
    tp_overlap: float = 0.0
    """Share of the TP time its own linears hide unasked, at no or selective recompute (--tp-overlap's
    default; tp_overlap_for). Megatron-Core runs Transformer Engine's linears, which issue the
    column-parallel backward's dgrad reduce-scatter async beside wgrad: core.time.megatron_ops
    TE_HIDDEN_TP_SHARE (the published NeMo / Megatron-Bridge rows are timed with it). The others keep 0:
    torchtitan's TP is DTensor's (ColwiseParallel / RowwiseParallel), not TE's, and its published rows
    are timed with none hidden (async TP: --tp-comm-overlap); DeepSpeed's fitted rows (ZeRO-3, 2021)
    ran no TP and transformers has none (data parallelism only); generic is gpuplan's
    framework-neutral model, which hides only what it is told to."""
    recompute_modes: tuple[str, ...] = ("none", "selective", "full")
    """The --recompute modes it runs (llm.c: -r 0 and 1, none and selective; no whole-layer recompute)."""
    default_recompute: str = "none"
    """--recompute where `gpuplan memory` is not given one: its own default (llm.c: -r 1, core.memory.llmc_memory)."""
    dtypes: tuple[str, ...] = ()
    """The --dtype values it is modelled in (empty: any)."""
    caching_allocator: bool = True
    """Its tensors come from PyTorch's caching allocator (the reserve over allocated, core.memory.device_memory);
    False: plain cudaMalloc of each buffer once (llm.c), reserved = allocated."""

    def tp_overlap_for(self, recompute: str) -> float:
        """tp_overlap under ``recompute``: full recompute re-runs the forward's blocking collectives,
        so the same hidden ones are a smaller share (core.time.megatron_ops.te_hidden_tp_share:
        2 of 12 instead of 2 of 8)."""
        return self.tp_overlap * te_hidden_tp_share(recompute) / te_hidden_tp_share("none")

    def zero3_step_settings(self) -> dict:
        """Its ZeRO-3 behaviour as core.time.step.StepSettings fields (re-gathers, overlap)."""
        return {"zero3_regathers": self.zero3_regathers_on_recompute, "zero3_overlap": self.zero3_overlap}


# DeepSpeed ZeRO-3 hides far less of its parameter traffic than FSDP's prefetch: fitted on the
# three GPT-3 174B ZeRO-3 rows of Narayanan et al. 2021, Table 2 (384, 768, 1,536 A100s: 11.2%
# mean |error| at 0.30, the minimum over 0.15-0.35, with the recompute re-gathers above and the
# 2021 code's unfused attention, core/time/attention_core.py), held out on the three 529B rows (9.3%);
# docs/step.md. Its fetches are driven by module hooks, one submodule at a time
# (stage3_prefetch_bucket_size 5e7 elements is below one submodule of these models).
DEEPSPEED_ZERO3_OVERLAP = 0.30
LOSS_CHUNKS = 8  # torchtitan ChunkedLossWrapper(num_chunks=8), components/loss.py (HEAD b5bcd76)

FRAMEWORKS: dict[str, FrameworkProfile] = {p.name: p for p in (
    FrameworkProfile(
        "generic", "gpuplan", ("gpuplan's framework-neutral model (docs/memory.md)",),
        recipe="mixed", implementation="megatron", optimizer_impl="recipe", selective="core-attn", loss="hf-ce",
        trains_mtp=True),
    FrameworkProfile(
        "torchtitan", "0.3.0 (git b5bcd76)",
        ("torchtitan/distributed/fsdp.py: MixedPrecisionPolicy(bf16, fp32), reshard_after_forward = not pp",
         "torchtitan/distributed/activation_checkpoint.py: op-level SAC, every other mm recomputed",
         "torchtitan/models/llama3/__init__.py: fuse_qkv=True, one wqkv linear (3396a4b37 on; earlier wq, wk, wv)",
         "torch/distributed/pipelining/stage.py: set_reshard_after_backward(False) per micro-batch",
         "torchtitan/components/loss.py: ChunkedLossWrapper(num_chunks=8)",
         "torchtitan/components/optimizer.py: AdamW implementation 'fused' (PR #881)",
         "run_train.sh: PYTORCH_ALLOC_CONF=expandable_segments:True"),
        recipe="fsdp2", implementation="torchtitan", optimizer_impl="fused", selective="op-sac", loss="chunked",
        pp_keeps_unsharded=True, zero2_is_fsdp2_no_reshard=True, expandable_segments=True,
        embedding_own_fsdp_unit=True, default_zero=3,
        loss_parallel=True, reports="reserved (its log line 'memory: X GiB' is max_reserved)",
        fused_qkv=True),  # torchtitan/models/llama3/__init__.py fuse_qkv=True (TORCHTITAN_FUSED_QKV_SINCE)
    FrameworkProfile(
        "megatron", "megatron-core 0.16.1",
        ("megatron/core/distributed/param_and_grad_buffer.py: fp32 grad buffer of all local params",
         "megatron/core/optimizer/distrib_optimizer.py: fp32 main params + Adam on 1/d (6 + 12/d B/param)",
         "megatron/core/transformer/transformer_config.py: recompute_modules ['core_attn']",
         "megatron/core/tensor_parallel/cross_entropy.py: vocab-parallel CE in fp32",
         "megatron/core/extensions/transformer_engine.py: TEDotProductAttention (cuDNN fused attention)",
         "transformer_engine/pytorch/module/linear.py (v2.9) L730-745: dgrad reduce-scatter async_op=True beside wgrad",
         "megatron/core/transformer/multi_token_prediction.py: MTP modules on the last stage (core.model.mtp)",
         "megatron/core/pipeline_parallel/schedules.py: interleaved 1F1B needs >= pp micro-batches",
         "megatron/core/transformer/moe/experts.py: TEGroupedMLP._apply_bias, eager expert fc2 bias",
         "megatron/core/models/common/embeddings/rope_utils.py: unfused RoPE when YaRN mscale != 1"),
        recipe="megatron", implementation="megatron", optimizer_impl="fused", selective="core-attn",
        loss="vocab-parallel-ce", hopper_tuned_attention=True, trains_mtp=True,
        interleaved_needs_pp_micro_batches=True, eager_fallbacks=MEGATRON_EAGER_FALLBACKS, moe_launch="eager",
        tp_overlap=TE_HIDDEN_TP_SHARE),
    FrameworkProfile(
        "deepspeed", "0.19.x (git edaa722)",
        ("deepspeed/runtime/zero/config.py: reduce_bucket_size 5e8, overlap_comm only for stage 3",
         "deepspeed/runtime/zero/stage_1_and_2.py: IPG buffer(s); fp32 grad partition at step",
         "deepspeed/runtime/zero/stage3.py: grad partitions + IPG bucket; fp32 sub-group grads at step",
         ("deepspeed/runtime/zero/config.py: stage3_prefetch_bucket_size 5e7 (gathered ahead); "
         "stage3_param_persistence_threshold 1e5 (norm weights stay whole: < 0.01% of a Llama's parameters)"),
         "transformers gradient checkpointing (full only)",
         "deepspeed/runtime/zero/parameter_offload.py: module hooks re-gather for the recomputed forward",
         "deepspeed/runtime/pipe/engine.py: pipeline parallelism only with ZeRO 0 or 1",
         "deepspeed/runtime/pipe/schedule.py: TrainSchedule is plain 1F1B (no virtual stages)",
         "deepspeed/runtime/bf16_optimizer.py: bf16 ZeRO-0 pipeline, fp32 master + Adam over dp, bf16 accumulation"),
        recipe="mixed", implementation="hf", optimizer_impl="fused", selective="none", loss="hf-ce",
        bucket_elements=5e8, step_fp32_grads=True, zero3_prefetch_elements=5e7,
        zero3_regathers_on_recompute=True, zero3_overlap=DEEPSPEED_ZERO3_OVERLAP, max_zero_with_pp=1,
        interleaved_pipeline=False, pipeline_bf16_optimizer=True),
    FrameworkProfile(
        "hf", "transformers 5.24 / peft 0.21 / accelerate 1.15",
        ("transformers/modeling_utils.py: gradient checkpointing per decoder layer (full only)",
         "transformers/loss/loss_utils.py: ForCausalLMLoss upcasts logits to fp32",
         "peft/tuners/tuners_utils.py: cast_adapter_dtype (adapters in fp32)",
         "torch/optim/optimizer.py _default_to_fused_or_foreach: AdamW on CUDA tensors runs foreach "
         "(a training loop over transformers modules; HF Trainer's optim adamw_torch_fused: --optimizer-impl fused)",
         "gpuplan.profile.recompute: --recompute selective = torchtitan's op-level SAC per decoder layer"),
        recipe="amp", implementation="hf", optimizer_impl="foreach", selective="op-sac", loss="hf-ce",
        fp32_adapters=True, default_zero=0),
    FrameworkProfile(
        "llmc", "karpathy/llm.c (git f1e2ace)",
        ("train_gpt2.cu L118-428: parameters, bf16 gradients, activations, fp32 master + AdamW m, v allocated once "
         "with cudaMalloc (core.memory.llmc_memory)",
         "llmc/zero.cuh L496-573: ZeRO-1 shards master and m, v; gradients reduce-scattered per layer in backward",
         "llmc/fused_classifier.cuh: loss and logits gradient in one kernel, in place on the bf16 logits",
         "llmc/cudnn_att.cpp: cuDNN's fused attention (USE_CUDNN=1); llmc/matmul.cuh: cuBLASLt GEMMs, bias epilogue",
         "train_gpt2.cu L1406: -r 0|1|2 = none, gelu, gelu+ln (gpuplan: none, selective = -r 1)",
         "core.time.llmc_ops: its memory-bound kernels, launched from C"),
        recipe="mixed", implementation="llmc", optimizer_impl="fused", selective="llmc-gelu", loss="llmc-fused",
        default_zero=0, hopper_tuned_attention=True, recompute_modes=("none", "selective"), caching_allocator=False,
        dtypes=("bf16",), default_recompute="selective"),
)}
DEFAULT_FRAMEWORK = "megatron"
MEGATRON_CORE_FRAMEWORKS = ("megatron", "generic")
"""Where Megatron-Core / Transformer Engine options are taken (its recipe options, --ep-a2a-overlap's combined
1F1B, the TE kernel choices): megatron, and generic (gpuplan's framework-neutral model)."""


def check_framework_runs(profile: FrameworkProfile, recompute: str | None, dtype: str | None = None) -> None:
    """InputError when ``profile``'s framework has no such --recompute mode or --dtype (None: not given)."""
    if dtype is not None and profile.dtypes and dtype not in profile.dtypes:
        raise InputError("dtype", dtype, f"--framework {profile.name} is modelled in {' or '.join(profile.dtypes)} "
                         "only (llm.c's default PRECISION=BF16 build, Makefile@f1e2ace L233-234; it has no FP8 / FP4)")
    if recompute == "selective" and profile.selective == "none":
        raise InputError("recompute", "selective", f"--framework {profile.name} has no selective recompute "
                         "(gradient checkpointing is per layer): give none or full")
    if recompute is not None and recompute not in profile.recompute_modes:
        modes = " or ".join(profile.recompute_modes)
        raise InputError("recompute", recompute, f"--framework {profile.name} runs {modes} "
                         "only (llm.c: -r 0 and -r 1; it has no whole-layer recompute)")


def framework(name: str) -> FrameworkProfile:
    """The profile called ``name``; InputError naming the choices."""
    if name not in FRAMEWORKS:
        raise InputError("framework", name, f"one of {', '.join(FRAMEWORKS)}")
    return FRAMEWORKS[name]


TORCHTITAN_FUSED_QKV_SINCE = "3396a4b"
TORCHTITAN_FUSED_QKV_DATE = "2026-06-24"  # 3396a4b37's date: a 'main as of DATE' label is fused from then on
"""torchtitan 3396a4b37 (#3714, 2026-06-24, "Enable Fused qkv by default"): its Llama 3 (and Qwen3, gpt-oss) runs
q, k, v as one wqkv linear (models/llama3/__init__.py fuse_qkv: bool = True; the torchtitan 0.3.0 wheel, the
profile's version, has it). Before, three: ``xq, xk, xv = self.wq(x), self.wk(x), self.wv(x)``
(models/llama/model.py@9dec370 L189; models/llama3/model/model.py at v0.2.1 and v0.2.2)."""
TORCHTITAN_SEPARATE_QKV_RELEASES = ("1ea476e", "3faaa1a", "9dec370", "e7c0cae", "820504e")
"""The torchtitan commits behind the published rows (their ``framework`` 'torchtitan @9dec370 (...)' or
``framework_version`` 'torchtitan 9dec370 (...)'), none after 3396a4b37: ``git merge-base --is-ancestor
3396a4b37 COMMIT`` is false (exit 1) for each, run in a pytorch/torchtitan mirror whose HEAD is b5bcd76c6
(2026-08-21): 1ea476e (2024-04-24), 3faaa1a (2024-08-23), 9dec370 (2024-12-26), e7c0cae (2025-06-11),
820504e (2025-06-13): three separate q/k/v linears (tests/test_titan_sac_release.py reruns it where
GPUPLAN_TORCHTITAN_GIT names a clone)."""
TORCHTITAN_FUSED_QKV_RELEASES = ("3396a4b", "b5bcd76")
"""Commits at or after 3396a4b37 (merge-base --is-ancestor true, exit 0, same mirror at b5bcd76c6): the fused-QKV
commit itself (2026-06-24) and b5bcd76 (2026-08-21), the commit the profile's 0.3.0 was read at: one wqkv."""


def torchtitan_fuses_qkv(release: str = "") -> bool:
    """Whether the torchtitan a label names runs q/k/v as one linear: ``release`` a published row's
    'torchtitan @9dec370 (...)' or 'torchtitan 9dec370 (2024-12-26), ...' (or the bare commit), else its
    'main as of 2025-01-27' (TORCHTITAN_FUSED_QKV_DATE); neither = the profile's release (0.3.0: yes).
    ValueError for a commit not yet placed before or after 3396a4b37."""
    return _torchtitan_at_or_after(release, TORCHTITAN_FUSED_QKV_SINCE, TORCHTITAN_FUSED_QKV_DATE,
                                   bool(FRAMEWORKS["torchtitan"].fused_qkv))


TORCHTITAN_GQA_NATIVE_SINCE = "ff0829c"
TORCHTITAN_GQA_NATIVE_DATE = "2026-01-27"
"""torchtitan ff0829c10 (#2259, 2026-01-27, "GQA without kv repeats"): Llama 3's attention passes ``enable_gqa``
to SDPA / FlexAttention (models/llama3/model/model.py@ff0829c10 L199, L274; models/common/attention.py@b5bcd76
L901) instead of ``repeat_kv`` copying k and v to the query's heads (models/llama/model.py@9dec370). git
merge-base --is-ancestor ff0829c10 COMMIT (mirror at b5bcd76c6): false (exit 1) for the five published commits of
TORCHTITAN_SEPARATE_QKV_RELEASES, true for 3396a4b and b5bcd76 (TORCHTITAN_FUSED_QKV_RELEASES), so the known
commits split the same way on both facts; a 'main as of DATE' label between the two dates does not."""


def torchtitan_repeats_kv(release: str = "") -> bool:
    """Whether the torchtitan a label names (as torchtitan_fuses_qkv reads it) copies k and v to the query's
    heads (repeat_kv) for grouped-query attention: before ff0829c10 (published rows), not in 0.3.0."""
    return not _torchtitan_at_or_after(release, TORCHTITAN_GQA_NATIVE_SINCE, TORCHTITAN_GQA_NATIVE_DATE, True)


def _torchtitan_at_or_after(release: str, since: str, since_date: str, profile: bool) -> bool:
    """Whether the torchtitan release a label names contains commit ``since`` (dated ``since_date``): a known
    commit by TORCHTITAN_*_QKV_RELEASES (every one of them placed against both facts' commits), a 'main as of
    DATE' label by its date, neither ``profile`` (the profile's release, b5bcd76). ValueError for an unplaced commit."""
    import re

    match = re.search(r"(?:torchtitan @?|^)([0-9a-f]{7,40})\b", release.strip())
    if not match:
        date = re.search(r"main as of (\d{4}-\d{2}-\d{2})", release)
        return date.group(1) >= since_date if date else profile
    commit = match.group(1)
    if commit[:7] in TORCHTITAN_SEPARATE_QKV_RELEASES + TORCHTITAN_FUSED_QKV_RELEASES:
        return commit[:7] in TORCHTITAN_FUSED_QKV_RELEASES
    raise ValueError(f"torchtitan commit {commit!r}: place it before or after {since} "
                     "(git merge-base --is-ancestor) in core.frameworks.TORCHTITAN_*_QKV_RELEASES")


def op_sac_fused_qkv(spec: ModelSpec, framework_name: str, fused_qkv: bool | None = None) -> bool:
    """Whether op-level SAC counts q, k, v as one matmul (every other mm in forward order is recomputed, so
    the form moves which are saved): ``fused_qkv`` where the run says (a release's), else the framework's
    model code (FrameworkProfile.fused_qkv), else the model config's (spec.fused_qkv)."""
    if fused_qkv is not None:
        return fused_qkv
    profile = framework(framework_name)
    return spec.fused_qkv if profile.fused_qkv is None else profile.fused_qkv


def op_sac_bytes_per_token(spec: ModelSpec, c: int, tp, fused_qkv: bool = True) -> float:
    """Op-level selective activation checkpointing (torchtitan): per layer, every other matmul
    output in forward order is saved (the first, third, ...), plus the attention output and its
    fp32 logsumexp; norms, RoPE, SiLU and the SwiGLU product are recomputed. Llama-3-8B (fused
    wqkv, ffn 3.5h): qkv 3h + w1 7h + w2 2h + attention 2h = 14·sbh, as measured on torchtitan's
    own code (14.0·sbh); with wq, wk, wv (``fused_qkv`` False: torchtitan before 3396a4b37,
    transformers) q 2h + v 0.5h + w1 7h + w2 2h + attention 2h = 13.5·sbh. Under TP (with sequence
    parallel) column-parallel outputs are sharded, a row-parallel output is the full-size partial
    sum, and the reduce-scatter outputs after wo and w2 are saved too (on the save list): 10.0·sbh
    at tp 2, measured."""
    a = spec.attention
    h = spec.hidden_size
    q, kv = a.num_heads * a.qk_head_dim, a.num_kv_heads * a.qk_head_dim
    v = a.num_kv_heads * a.value_head_dim
    attn = [(q + kv + v, False)] if fused_qkv else [(q, False), (kv, False), (v, False)]
    mlp = [(spec.mlp.intermediate_size, False)] * (2 if spec.mlp.gated else 1) + [(h, True)]
    outputs = attn + [(a.num_heads * a.value_head_dim, True)] + mlp  # (size, row-parallel)
    import numpy as np  # lazily: the CLI's option vocabulary imports this module

    tp = np.asarray(tp, dtype=float)
    kept = sum(size if row else size / tp for size, row in outputs[0::2]) * c
    attention = (c * a.num_heads * a.value_head_dim + FP32 * a.num_heads) / tp
    reduce_scattered = (tp > 1) * 2 * c * h / tp
    return kept + attention + reduce_scattered


def chunked_loss_bytes(spec: ModelSpec, tp) -> tuple[float, float, float]:
    """torchtitan's chunked loss: (saved per token, transient per token, constant bytes). Saved:
    the fp32 accumulator of the hidden-state gradient (4h); transient: one chunk's bf16 logits,
    fp32 copy and fp32 gradient, (2 + 4 + 8)·V / 8; constant: the LM head's gradient accumulated
    unsharded in fp32 plus the bf16 per-chunk gradient, 6·V·h (divided by tp)."""
    v = spec.vocab_size / tp
    return FP32 * spec.hidden_size, (2 + 4 + 8) * v / LOSS_CHUNKS, 6 * v * spec.hidden_size


def states_zero(profile: FrameworkProfile, zero):
    """The ZeRO stage by which a stage's model states are sharded: 3 for a ZeRO-2 that is FSDP2 without
    reshard after forward (zero2_is_fsdp2_no_reshard: fully_shard shards every parameter whatever
    reshard_after_forward is; torch/distributed/fsdp/_fully_shard/_fully_shard.py@v2.13.0 L180-190), else ``zero``."""
    import numpy as np  # lazily: the CLI's option vocabulary imports this module

    return np.where(np.logical_and(profile.zero2_is_fsdp2_no_reshard, np.asarray(zero) == 2), 3, zero)


def pp_unsharded_stage_bytes(profile: FrameworkProfile, layout: ParallelLayout, stage_params_total, compute_bytes):
    """(unsharded params, unsharded fp32 grads) a pipeline stage keeps under FSDP (torchtitan): 2 + 4 B per
    stage parameter when pp > 1 and FSDP shards the gradients (ZeRO-2 and 3 alike). torch.distributed.pipelining
    runs every micro-batch's backward of an FSDP stage with set_reshard_after_backward(False) and
    set_requires_gradient_sync(False) whatever reshard_after_forward is (stage.py@v2.13.0 L844-847), so FSDP
    keeps the unsharded gradient, upcast to the reduce dtype (fp32 under torchtitan's MixedPrecisionPolicy) and
    accumulated (_fsdp_param_group.py L607-612, _fsdp_param.py L802-821), and reduce-scatters once in
    perform_reduce_grad after the last micro-batch (stage.py L1164-1187). Measured with torchtitan's own code
    (llama-3.1-8b, dp 8, pp 2, full AC, fake tensors): the peak holds both under reshard "default" (False
    with PP) and "always" (docs/memory.md). A ZeRO-2 that is FSDP2 without reshard after forward
    (zero2_is_fsdp2_no_reshard) keeps the bf16 params unsharded from forward into backward at pp 1 as well."""
    import numpy as np  # lazily: the CLI's option vocabulary imports this module

    zero = np.asarray(layout.zero)
    grads = np.logical_and(profile.pp_keeps_unsharded, np.logical_and(np.asarray(layout.pp) > 1, zero >= 2))
    params = np.logical_or(grads, np.logical_and(profile.zero2_is_fsdp2_no_reshard, zero == 2))
    return np.where(params, compute_bytes * stage_params_total, 0.0), np.where(grads, FP32 * stage_params_total, 0.0)


def bucket_bytes(profile: FrameworkProfile, layout: ParallelLayout, compute_bytes):
    """DeepSpeed's reduction buckets: reduce_bucket_size elements in the model dtype, two when
    overlap_comm is on (its default only for ZeRO-3), none without ZeRO."""
    import numpy as np  # lazily: the CLI's option vocabulary imports this module

    buffers = np.where(layout.zero >= 3, 2, np.where(layout.zero >= 1, 1, 0))
    return buffers * profile.bucket_elements * compute_bytes


def optimizer_impl_of(settings, recipe) -> str:
    """The optimizer kernel a run uses: the setting, else the framework's, else the recipe's."""
    profile = framework(settings.framework)
    return settings.optimizer_impl or (recipe.optimizer_impl if profile.optimizer_impl == "recipe"
                                       else profile.optimizer_impl)


def loss_of(settings) -> str:
    """The loss memory kind a run uses: the setting, else the framework's."""
    return settings.loss or framework(settings.framework).loss


def deepspeed_bf16_engine(framework_name: str, dtype: str, recipe: str) -> bool:
    """Whether the run is DeepSpeed's engine in bf16 with its own recipe (mixed: fp32 master; ``"bf16":
    {"enabled": true}``), the engine that builds the BF16_Optimizer at ZeRO 0 under its pipeline
    (runs_bf16_optimizer; engine.py@edaa722 L2014-2018, L2336-2357). Not under fp16 (FP16_Optimizer), a pure-bf16
    recipe (bf16 weights, no fp32 master: not that optimizer) or another framework. The one rule the memory
    (MemorySettings.deepspeed_bf16) and the step (StepSettings.deepspeed_bf16) are set by."""
    profile = framework(framework_name)
    return profile.pipeline_bf16_optimizer and dtype == "bf16" and recipe == profile.recipe


def runs_bf16_optimizer(deepspeed_bf16, zero, pp):
    """Where DeepSpeed's BF16_Optimizer runs (per layout, for arrays): its bf16 engine (``deepspeed_bf16``:
    deepspeed_bf16_engine) at ZeRO stage 0 with pp > 1 (engine.py@edaa722 L2014-2018: pipeline parallelism, no
    ZeRO). Its memory (core.memory.bf16_optimizer), its weight all-gather (core.comm.dp_costs), its optimizer
    step over 1/dp (core.time.step) and its 6 B accumulation pass (core.time.optimizer) read this."""
    import numpy as np  # lazily: the CLI's option vocabulary imports this module

    return np.logical_and(deepspeed_bf16, np.logical_and(np.asarray(zero) == 0, np.asarray(pp) > 1))
