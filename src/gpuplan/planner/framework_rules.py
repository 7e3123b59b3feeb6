"""What each framework can run, as the layout search needs it: the ZeRO stages it offers and the
parallelisms each combines with (the pipeline and virtual-stage rules live in core.frameworks).

- torchtitan (git b5bcd76): data parallelism is FSDP2 (dp_shard; ZeRO-3) or HSDP; plain DDP
  (dp_replicate alone) only without other parallelism ("DDP has not supported > 1D parallelism",
  torchtitan/models/llama3/infra/parallelize.py apply_ddp); no optimizer-only or gradient sharding
  (ZeRO-1 / 2). FSDP composes with TP, PP, CP and EP (its published benchmarks run all of them).
  Its published reserved peaks run above gpuplan's memory estimate: the fit rule takes FSDP2's stream
  pools as a ZeRO-3 layout's reserved peak (fsdp2_stream_pools) and keeps the share left beyond them free
  (TORCHTITAN_PUBLISHED_RESERVE), so a layout is not recommended on memory the published runs did not have.
  Its pipelines are torch.distributed.pipelining's schedules: 1F1B needs at least pp micro-batches, interleaved
  1F1B a multiple of its rounds (torch_pipeline_runs). Its context parallelism runs FlexAttention only, which
  gpuplan does not time: no CP (cp_attention_untimed); a model with tied embeddings gets no pipeline
  (pipeline_with_tied_embeddings). A user-fixed cp > 1 or such pp > 1 is refused (schema.layout_rules).
- Megatron-Core (0.16): DDP (ZeRO-0), the distributed optimizer (optimizer states sharded,
  gradients reduce-scattered: gpuplan's ZeRO-1) or Megatron-FSDP (ZeRO-3); Megatron-FSDP's optim_grads shards
  gradients and optimizer states ("conceptually close to ZeRO-2", megatron_fsdp.py@core_v0.16.1 L87), so a
  stated --zero 2 is taken, but the search offers 0, 1 and 3 (no published Megatron row runs optim_grads). Torch
  FSDP2 inside Megatron refuses pipeline and expert parallelism (megatron/training/arguments.py:
  '--use-torch-fsdp2 is not supported with pipeline parallelism'), and every Megatron-Bridge recipe
  published with FSDP runs it without a pipeline (catalog/reference/published_throughput.yaml: 15 of
  15 FSDP rows pp 1), so ZeRO-3 is offered with pp 1 only.
- DeepSpeed: ZeRO 0-3, at most ZeRO-1 under its pipeline engine (core.frameworks max_zero_with_pp).
- HF (Trainer / accelerate): DDP or FSDP (ZeRO-3); no TP / PP of its own beyond what the search
  already allows.

Megatron-Core's pipeline schedules (the search and the schema, schema/training_fields.py, apply them):
interleaved 1F1B runs only with at least pp micro-batches per step (interleaved_runs), and the
combined 1F1B schedule of --ep-a2a-overlap only with expert parallelism, a pipeline only interleaved,
no full recompute (combined_1f1b_runs, COMBINED_1F1B_REFUSED_RECOMPUTE) and, as gpuplan times it
(micro-batch groups of pp), a multiple of pp micro-batches. Requiring the multiple of every Megatron
interleaved layout (Megatron's default group size) was measured and not adopted: a user sets
microbatch_group_size_per_vp_stage to run the rest, and the planner's PaLM 540B layout
(dp32 tp8 pp24 vpp7, 64 micro-batches: group 32) lost its interleaving (MFU 35.5% -> 28.3%).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FixedOption:
    """One setup option a framework runs one way only: ``runs`` the values that are its own behaviour (None: the
    option left out), ``what`` what it runs instead, as the refusal says it."""

    field: str
    runs: tuple
    what: str


LLMC_CODE = "train_gpt2.cu@f1e2ace"
LLMC_FIXED_OPTIONS = (
    FixedOption("finetune", ("full",), f"trains every weight: {LLMC_CODE} has no LoRA / QLoRA adapters"),
    FixedOption("lora_rank", (), f"has no adapters ({LLMC_CODE} trains every weight)"),
    FixedOption("mtp_layers", (None, 0), f"trains GPT-2 with no multi-token-prediction modules ({LLMC_CODE})"),
    FixedOption("optimizer", ("adamw",), "runs AdamW only (llmc/adamw.cuh adamw_kernel3, train_gpt2.cu L1101)"),
    FixedOption("offload_optimizer", (None, False), "keeps master weights and m, v on the GPU (no CPU step; "
                "cudaMallocManaged only as a fallback, train_gpt2.cu@f1e2ace L391-416)"),
    FixedOption("dropout", (None, 0, 0.0), f"has no dropout ({LLMC_CODE})"),
    FixedOption("implementation", (None,), "runs its own CUDA kernels (core.memory.llmc_memory)"),
    FixedOption("recipe", (None, "mixed"), "keeps bf16 weights and gradients, fp32 master weights and m, v "
                f"({LLMC_CODE} L118-428)"),
    FixedOption("loss", (None,), "computes the loss and its gradient in one kernel, in place on the "
                "logits (llmc/fused_classifier.cuh)"),
    FixedOption("optimizer_impl", (None, "fused"), "runs one fused AdamW kernel (llmc/adamw.cuh)"),
    FixedOption("allocator", (None,), f"allocates its buffers once with cudaMalloc ({LLMC_CODE} L155, L265): no "
                "PyTorch caching allocator"),
    FixedOption("grad_all_reduce", (None, False), "all-reduces gradients at -z 0 and reduce-scatters them at -z 1 "
                "(llmc/zero.cuh@f1e2ace L533-547)"),
    FixedOption("attention_kernel", (None, "flash", "eager"), "runs cuDNN's fused attention (flash: "
                "llmc/cudnn_att.cpp, USE_CUDNN=1) or its own unfused kernels (eager: llmc/attention.cuh), no "
                "PyTorch SDPA or FlashAttention 1 (wave 12: sdpa was taken silently)"),
)
"""What --framework llm.c runs of the setup options: any other value is refused (one line, exit 2)."""


def check_fixed_options(framework: str, inputs) -> None:
    """InputError for a setup option ``inputs`` (a job's fields) give that the framework has no choice of
    (FrameworkRules.fixed_options): naming the field and what the framework runs."""
    from gpuplan.errors import InputError

    for option in rules_for(framework).fixed_options:
        value = getattr(inputs, option.field, None)
        if option.field in inputs.given and value not in option.runs:
            shown = next((v for v in option.runs if v not in (None, False)), None)  # (0 == False: dropout, MTP)
            give = f"give {shown} or leave it out" if shown is not None else "leave it out"
            raise InputError(option.field, value, f"--framework {framework} {option.what}: {give}")


@dataclass(frozen=True)
class FrameworkRules:
    """The data-parallel sharding a framework offers and what it combines with."""

    zero_stages: tuple[int, ...]
    """ZeRO stages it runs (0: DDP, 1: optimizer states sharded, 2: + gradients, 3: + parameters)."""
    zero3_with_pipeline: bool = True
    """Parameter sharding (FSDP) together with pipeline parallelism."""
    replicated_only_alone: bool = False
    """Unsharded data parallelism (DDP, ZeRO-0 with dp > 1) only without TP / PP / CP / EP."""
    data_parallel_only: bool = False
    """No tensor, pipeline, context or expert parallelism of its own: DDP / FSDP only (transformers'
    Trainer with accelerate)."""
    data_parallel_engine: str = ""
    """Under data_parallel_only: what its data parallelism is, as the refusal of a model-parallel degree names it."""
    refuses_other_zero: bool = False
    """A --zero outside zero_stages is refused (llm.c); otherwise a stated stage is taken as given."""
    optimizer_offload: bool = True
    """It can keep the optimizer step on the CPU (ZeRO-Offload); llm.c cannot (its m, v and master weights only
    fall back to cudaMallocManaged, train_gpt2.cu@f1e2ace L391-416)."""
    published_reserve: float = 0.0
    """Share by which the framework's published reserved-memory peaks exceed gpuplan's reserved
    estimate beyond the model states (weights, master weights, optimizer states), median over its
    published runs: the fit rule keeps that much more free, so the planner does not recommend a
    layout the published runs say would not fit. 0: no such gap measured."""
    cp_attention_untimed: bool = False
    """Context parallelism runs only with an attention kernel gpuplan does not time, which no published run
    checks: the free search leaves CP out (planner.space.structures), as it leaves a tied model's pipeline out,
    and a cp > 1 the user fixes is refused (schema.layout_rules). (Before review wave 6 such layouts were offered
    with the widest uncertainty, planner.search, and the 8B-on-64 BF16 choice was one.) torchtitan at b5bcd76
    refuses CP with ScaledDotProductAttention ("Context Parallel is not supported with
    ScaledDotProductAttention or VarlenAttention. Use FlexAttention or disable CP.",
    torchtitan/models/common/decoder.py L173-183, since 5dd944e62, 2026-08-19); gpuplan times torchtitan's
    SDPA (FlashAttention-2), and its published CP rows ran SDPA at 9dec370; they are evaluated at their layouts
    outside the schema and the search, so they stay scored."""
    pipeline_with_tied_embeddings: bool = True
    """A model whose output layer shares the embedding's weights runs pipeline parallelism. torchtitan at
    b5bcd76 refuses it ("Weight tying is not supported with Pipeline Parallel.", models/common/decoder.py
    L168-170; its Llama 3.2 1B / 3B configs tie, models/llama3/__init__.py L159, L203): the free search
    gives such a model pp 1, and a pp > 1 the user fixes is refused (schema.layout_rules.check_model)."""
    torch_pipelining: bool = False
    """Pipelines run torch.distributed.pipelining's schedules, with their micro-batch rules
    (torch_pipeline_runs)."""
    kv_subsharding: bool = False
    """tp may be a multiple of the model's key/value heads, not only a divisor (core.parallel.check_kv_heads):
    Megatron-Core 0.16 sub-shards the QKV activation (attention.py@core_v0.16.0 L1397-1416, f7dfb99795 'Support
    TP greater than num_kv_heads'); the generic model takes Megatron-Core's modules. torchtitan views each
    rank's K/V shard as whole heads (models/common/attention.py@b5bcd76 L697-705, L766-771: tp must divide
    them); transformers runs no TP (data_parallel_only); DeepSpeed's TP modules were not read for it: kept to
    the divisor. The free search tries those multiples too on a dense model (planner.space.free_kv_subsharding;
    until wave 16 only a tp the user fixed did, so PaLM's one K/V head was searched at tp 1 alone)."""
    fixed_options: tuple[FixedOption, ...] = ()
    """Setup options the framework has no choice of: given with another value, refused (check_fixed_options)."""
    fsdp2_stream_pools: bool = False
    """The fit rule takes a ZeRO-3 layout's reserved peak as FSDP2's three stream pools
    (core.memory.fsdp_streams: compute + reduce-scatter + all-gather), not allocated x (1 + fragmentation);
    published_reserve is then the share left beyond those pools."""


TORCHTITAN_PUBLISHED_RESERVE = 0.116
"""torchtitan's published max_reserved peaks beyond gpuplan's reserved estimate of FSDP2's three stream
pools (core/memory/fsdp_streams.py, the rows' own FSDP units and loss: jobs/validation/published_memory.py),
the gap taken on the part beyond the model states: (published - pools x 1.03) / (pools x 1.03 - states x
1.03). **Kept at 0.116 since the loss hole was modelled (session 19, a0a79f3e / e617b535: the bf16 logits' block
the eager fp32 loss frees, core/memory/fsdp_streams.py), not lowered to the new median 0.019:** the 17 shares now
split into ~0 (-0.007 to +0.023: the ten rows whose gap the hole explains, CP and compiled blocks) and +0.091 to
+0.216 (six rows it leaves: the eager blocks on 8 / 128 GPUs 0.103 / 0.093, the 70B 2D row 0.091, the two H200
compiled-loss rows 0.100 / 0.124, which have no hole, and the FlexAttention CP row 0.216); a median across the two
groups would leave layouts like the second group's (torchtitan's default chunked loss has no hole either) ~9%
short (tests/test_torchtitan_reserve_loo.py). 0.116 was taken with the hole inside its rows' gaps, so the fit rule adds
no hole where it applies (core.memory.training.peak_and_framework_gap; review s19b S1: hole + share over-reserved the 17
rows by 6.3% mean): the fit rule is the one scored below. Before the hole: median 0.1163 over the 17 rows, taken
to three places (0.12 would sit above every leave-one-out median; tests/test_planner_torchtitan_choice.py
recomputes it; 16 of 17 at +0.057 to +0.177, the FlexAttention CP row at +0.289). 0.113 / 0.11 before a0be8c0
held the float8 all-gather rows' gathered layer at 1 B (their estimates 0.21 GiB lower: wave-12 mend); 0.091 and
0.09 before the op-SAC rows kept their releases' separate wq, wk, wv, core.frameworks.torchtitan_fuses_qkv: 0.5·sbh
a layer less, docs/memory.md). Measured on those 17 rows: they are not held-out checks of this share;
leave-one-out (each row scored with the median of the other 16: 0.1081-0.1171) the reserved peak is off 2.9% mean
|error|, max 6.8% (tests/test_torchtitan_reserve_loo.py; the in-sample fit verdicts: docs/memory.md). All 17 are pp 1
ZeRO-3 layouts: pipeline layouts (stage_pool_bytes' pp > 1 branch, read from code) and ZeRO-0 ones take the same
share with no published row behind it (review wave 5b). What is left:
torch.compile's Inductor buffers, the caching allocator beyond its 3% and the all-gather pool's second
in-flight buffer (docs/memory.md). Before FSDP2's pools were modelled the share was taken over allocated
x 1.03: 0.27, from a derivation that took the last estimated row's model states for every row; with each
row's own states it was 0.210 (docs/memory.md, Reserve of the fit rule)."""


RULES: dict[str, FrameworkRules] = {
    "torchtitan": FrameworkRules((0, 3), replicated_only_alone=True, published_reserve=TORCHTITAN_PUBLISHED_RESERVE,
                                 fsdp2_stream_pools=True, torch_pipelining=True, cp_attention_untimed=True,
                                 pipeline_with_tied_embeddings=False),
    "megatron": FrameworkRules((0, 1, 3), zero3_with_pipeline=False, kv_subsharding=True),
    "deepspeed": FrameworkRules((0, 1, 2, 3)),
    "hf": FrameworkRules((0, 3), replicated_only_alone=True, data_parallel_only=True,
                         data_parallel_engine="DDP or FSDP: transformers"),
    # llm.c: data parallelism over NCCL only, -z 0 or 1 (llmc/zero.cuh@f1e2ace L558-578: stages 2 and 3 "not yet
    # supported", switched off); train_gpt2.cu has no tensor, pipeline, context or expert parallelism
    "llmc": FrameworkRules((0, 1), data_parallel_only=True, data_parallel_engine="DDP or ZeRO-1 over NCCL: llm.c",
                           refuses_other_zero=True, optimizer_offload=False, fixed_options=LLMC_FIXED_OPTIONS),
    "generic": FrameworkRules((0, 1, 2, 3), kv_subsharding=True),
}


MODEL_PARALLEL_DEGREES = ("tp", "pp", "vpp", "cp", "ep")
"""The degrees a data_parallel_only framework keeps at 1."""
TENSOR_PARALLEL_OPTIONS = ("tp_comm_overlap", "sequence_parallel", "tp_overlap")
"""Options of tensor parallelism a data_parallel_only framework has none of: given, refused (wave 12: --framework
llmc / hf took --tp-comm-overlap, --sequence-parallel and --tp-overlap 0.5 and answered as without them)."""


OPTIMIZER_ZERO_STAGES = {("megatron", "muon"): (0, 1)}
"""ZeRO stages a (framework, optimizer) runs where narrower than the framework's: Megatron-Core's Muon asserts no
distributed optimizer, torch FSDP2 or Megatron-FSDP (megatron/training/arguments.py@core_v0.16.1 L1178-1186), while
dist_muon's layer-wise sharding keeps ZeRO-1-like memory: 0 and 1. The free search and memory's advice keep to them
(review w15 R4 M5: llama-3-70b on 16 H100 under megatron + muon was planned at ZeRO 3); a stated 2 / 3 under a stated
framework is refused (schema.layout_rules._check_optimizer)."""


def optimizer_zero_stages(framework: str, optimizer: str | None) -> tuple[int, ...]:
    """The ZeRO stages ``optimizer`` runs with under ``framework`` (OPTIMIZER_ZERO_STAGES; else all four)."""
    return OPTIMIZER_ZERO_STAGES.get((framework, optimizer), (0, 1, 2, 3))


def rules_for(framework: str) -> FrameworkRules:
    """The rules of ``framework`` (generic's, which allow everything, for an unknown name)."""
    return RULES.get(framework, RULES["generic"])


def check_data_parallel_only(framework: str, inputs) -> None:
    """InputError for a tensor, pipeline, context or expert degree above 1 that ``inputs`` give under a framework
    with data parallelism only (FrameworkRules.data_parallel_only)."""
    from gpuplan.errors import InputError

    rules = rules_for(framework)
    if not rules.data_parallel_only:
        return
    for name in MODEL_PARALLEL_DEGREES:
        value = getattr(inputs, name, None)
        if value is not None and value > 1:
            raise InputError(name, value, f"--framework {framework} trains with data parallelism only "
                             f"({rules.data_parallel_engine} has no tensor, pipeline, context or expert "
                             "parallelism); give 1, or --framework torchtitan / megatron")
    from gpuplan.core.frameworks import framework as profile

    unread = {"tp_overlap": profile(framework).tp_overlap}  # the framework's own (0): answered as unstated
    for name in TENSOR_PARALLEL_OPTIONS:  # a stated default (--sequence-parallel) is answered: nothing reads it
        value = getattr(inputs, name, None)
        if inputs.stated_otherwise(name, unread.get(name)):
            raise InputError(name, value, f"--framework {framework} has no tensor parallelism "
                             f"({rules.data_parallel_engine} trains with data parallelism only): leave it out, or "
                             "give --framework torchtitan / megatron")


def check_zero_runs(framework: str, zero: int | None) -> None:
    """InputError for a stated --zero the framework does not run, where its rules refuse it (refuses_other_zero)."""
    from gpuplan.errors import InputError

    rules = rules_for(framework)
    if zero is not None and rules.refuses_other_zero and zero not in rules.zero_stages:
        raise InputError("zero", zero, f"--framework {framework} runs ZeRO stage "
                         f"{' or '.join(map(str, rules.zero_stages))} only (llm.c's -z: stages 2 and 3 are switched "
                         "off, llmc/zero.cuh@f1e2ace L575-578)")


def zero_allowed(rules: FrameworkRules, zero: int, *, dp: int, tp: int, pp: int, cp: int, ep_max: int) -> bool:
    """Whether the framework runs ZeRO stage ``zero`` with these degrees (``ep_max``: the largest
    expert-parallel degree the structure allows; 1 for a dense model)."""
    if zero not in rules.zero_stages:
        return False
    if zero >= 3 and pp > 1 and not rules.zero3_with_pipeline:
        return False
    model_parallel = tp > 1 or pp > 1 or cp > 1 or ep_max > 1
    return not (zero == 0 and dp * cp > 1 and rules.replicated_only_alone and model_parallel)


HSDP_ZERO_STAGES = {
    # FSDP2 over dp_shard x cp, replicated over dp_replicate (config/configs.py@b5bcd76 L122-142: "the parallelism
    # method used is HSDP"; distributed/parallel_dims.py L224-225, L280-281: fsdp = dp_shard x cp); its ZeRO-2 is
    # the same fully_shard without reshard after forward (core.comm.fsdp2_reshard)
    "torchtitan": (2, 3),
    # the distributed optimizer sharded within num_distributed_optimizer_instances groups (ZeRO-1: parallel_state.py
    # @core_v0.16.0 L834-841, reduce-scatter within, all-reduce across instances: param_and_grad_buffer.py
    # L458-470); Megatron-FSDP turns HSDP on with the same option (mcore_fsdp_adapter.py@core_v0.16.0 L203-214)
    "megatron": (1, 2, 3),
    # MiCS (mics_shard_size) is a ZeRO-3 optimizer (engine.py@edaa722 L2434, L2468-2469; zero/mics.py
    # MiCS_Optimizer(DeepSpeedZeroOptimizer_Stage3) L361, all-reduce across the replicas L407-431). ZeRO++'s hpZ
    # (zero_hpz_partition_size, zero/config.py L309-312) is not it: a secondary partition of the parameters only,
    # gradients and optimizer states still over every data-parallel rank
    "deepspeed": (3,),
    # accelerate's FSDP HYBRID_SHARD / HYBRID_SHARD_ZERO2 (utils/constants.py@16cb6eb8 L38): full shard or
    # SHARD_GRAD_OP within a group, replicated across (parallelism_config.py L61-65, dp_replicate x dp_shard)
    "hf": (2, 3),
    "llmc": (),  # llmc/zero.cuh@f1e2ace: ZeRO-1 over every rank, no shard group
    "generic": (1, 2, 3),
}
"""ZeRO stages each framework runs with a shard group smaller than its data-parallel ranks (--shard-group, HSDP)."""


def stage_list(stages) -> str:
    """ZeRO stages as one phrase: '1, 2 or 3', '2 or 3', '3' (every HSDP refusal words them so)."""
    return ", ".join(map(str, stages[:-1])) + " or " * (len(stages) > 1) + str(stages[-1])


def shard_group_refusal(framework: str, zero: int | None, shard_group: int, default: bool = False) -> str | None:
    """Why ``framework`` cannot run ZeRO ``zero`` (None: not given; ``default``: the framework's default stage, not
    given) with ``shard_group`` (what is valid), or None.
    A group of 1 shards nothing: every rank keeps whole states and all-reduces the gradients, DDP (torchtitan runs
    dp_shard 1 as replicate, parallel_dims.py@b5bcd76; accelerate's ParallelismConfig calls it invalid,
    parallelism_config.py@16cb6eb8 L61-65): refused naming --zero 0 (R1 N6). torchtitan's dp_shard x cp needs no
    check here: torchtitan with cp > 1 is refused first (FlexAttention), R1 N5."""
    stages = HSDP_ZERO_STAGES.get(framework, HSDP_ZERO_STAGES["generic"])
    if not stages:
        return f"--framework {framework} has no hybrid sharding (llm.c shards ZeRO-1 over every rank): leave it out"
    valid = stage_list(stages)
    if zero == 0:
        return f"shards model states within groups (HSDP): give --zero {valid}; ZeRO 0 replicates them on every rank"
    if shard_group == 1:
        return ("a group of 1 shards nothing (every rank keeps whole states and all-reduces the gradients: DDP): "
                "give --zero 0 without a shard group, or a group of 2 or more")
    if zero is not None and zero not in stages:
        stage = f"its default ZeRO {zero}" if default else f"not {zero}"
        return f"--framework {framework} runs a shard group with ZeRO {valid} only ({stage}): give --zero {valid}"
    return None


CPU_OFFLOAD_PP, CPU_OFFLOAD_RECOMPUTE = 1, "none"
"""The pipeline degree and recompute mode Megatron-Core's CPU activation offloading
(--cpu-offloading-num-layers) runs with: transformer_config.py __post_init__ raises "no support for
Pipeline parallelism with CPU offloading" and "CPU offloading does not work when activation
recomputation is enabled". The schema refuses others given (schema.training_fields._offload_rules),
the search keeps to these (jobs.plan.search.space_limits) and memory's advice leaves recompute and PP out."""


COMBINED_1F1B_REFUSED_RECOMPUTE = ("full",)
"""Recompute modes Megatron-Core refuses under --overlap-moe-expert-parallel-comm: "disable full
recomputation" (transformer_config.py@core_v0.15.0 L1460-1462; recompute_method None, L1463-1465)."""


def interleaved_runs(pp, vpp, micro_batches, default_groups=False):
    """Whether Megatron-Core's interleaved schedule runs ``micro_batches`` per step (array-friendly;
    True without interleaving). forward_backward_pipelining_with_interleaving raises unless
    microbatch_group_size_per_vp_stage lies in [pp, m] (schedules.py@core_v0.15.0 L975-983) and the
    last group, m mod that size, is 0 or at least pp (L987-993): m >= pp, with the size set to m if
    need be. ``default_groups``: at the default size pp (model_parallel_config.py L395-396, the order
    core.time.pipeline_schedule's combined 1F1B count was read off), m must be a multiple of pp."""
    whole = (micro_batches >= pp) & ((micro_batches % pp == 0) | (not default_groups))
    return (vpp == 1) | whole


def combined_1f1b_runs(pp, vpp, ep):
    """Whether Megatron-Core runs its combined 1F1B schedule (--overlap-moe-expert-parallel-comm) on
    this layout (array-friendly): expert parallelism ("only supported with expert model parallelism",
    transformer_config.py@core_v0.15.0 L1452-1454) and, with a pipeline, virtual stages
    ("virtual_pipeline_model_parallel_size must be specified when pipeline_model_parallel_size > 1",
    L1446-1450; a virtual size of 1 is None, training/arguments.py L555-556, L582-583)."""
    return (ep > 1) & ((pp == 1) | (vpp > 1))


def torch_pipeline_runs(pp, vpp, micro_batches):
    """Whether torch.distributed.pipelining runs ``micro_batches`` per step on ``pp`` stages (torchtitan's
    pipelines; array-friendly; True without a pipeline). One stage a rank is torchtitan's default schedule
    "1F1B" (torchtitan/config/configs.py@b5bcd76 pipeline_parallel_schedule), whose Schedule1F1B raises
    unless micro-batches >= stages (torch 2.13 torch/distributed/pipelining/schedules.py L1020-1024);
    virtual stages run ScheduleInterleaved1F1B, which raises unless the micro-batches are a multiple of
    its rounds, max(1, m // pp) (L2935-2942)."""
    import numpy as np

    m = np.asarray(micro_batches)
    rounds = np.maximum(1, m // np.maximum(pp, 1))
    single = m >= pp
    interleaved = m % rounds == 0
    return (np.asarray(pp) == 1) | np.where(np.asarray(vpp) > 1, interleaved, single)


PER_MICRO_BATCH_SPLIT = ("torchtitan",)
"""Frameworks whose sequence-split rule counts the micro-batch's tokens (sequence_split_runs): the search applies it
where it picks the micro-batch (planner.space.enumerate_layouts), the others' where it picks tp and cp (structures)."""


def sequence_divisor(framework: str, sequence_parallel: bool, tp: int, cp: int) -> int:
    """What the framework asserts divides split_tokens(...) (1: nothing to divide).

    - megatron: sequence parallelism scatters each rank's [s, b, h] activations over the TP ranks along s and
      asserts 'First dimension of the tensor should be divisible by tensor parallel size'
      (megatron/core/tensor_parallel/mappings.py@00caa53 L67-70): tp, under sequence parallelism.
    - torchtitan (b5bcd76): seq_len_divisor = (tp if enable_sequence_parallel else 1) x (2 cp if cp > 1 else 1),
      and a ValueError unless it divides the tokens per pipeline micro-batch (torchtitan/trainer.py L296-308).
    - every other name (generic, deepspeed, hf, llmc): none. generic is framework-neutral (it times Megatron-Core's
      modules, core.frameworks, but holds no framework's assertion), so its --tp 8 --seq-len 4100 answers."""
    split = tp if sequence_parallel else 1
    if framework == "megatron":
        return split
    if framework == "torchtitan":
        return split * (2 * cp if cp > 1 else 1)
    return 1


def split_tokens(framework: str, seq_len: int, cp: int, micro_batch: int) -> int:
    """The tokens sequence_divisor must divide: Megatron's first dimension s on a context-parallel rank, seq_len / cp
    (the [s, b, h] layout keeps the micro-batch b out of it); torchtitan's num_tokens_per_microbatch_per_dp_rank,
    micro_batch x seq_len ("before context or tensor parallel sharding", config/configs.py@b5bcd76 L37-40)."""
    return micro_batch * seq_len if framework in PER_MICRO_BATCH_SPLIT else seq_len // max(cp, 1)


def sequence_split_runs(framework: str, sequence_parallel: bool, *, tp: int, cp: int, seq_len: int,
                        micro_batch: int | None) -> bool:
    """Whether the framework splits the sequence over this layout (sequence_divisor). ``micro_batch`` None: not
    chosen yet (the search's tp / cp loop), so a framework whose rule counts it (PER_MICRO_BATCH_SPLIT) answers True
    there and is asked again with each micro-batch."""
    if micro_batch is None and framework in PER_MICRO_BATCH_SPLIT:
        return True
    return split_tokens(framework, seq_len, cp, micro_batch or 1) % sequence_divisor(framework, sequence_parallel,
                                                                                     tp, cp) == 0
