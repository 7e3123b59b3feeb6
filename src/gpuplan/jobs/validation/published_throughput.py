"""Tokens per second per GPU of recent published runs with full layouts
(catalog/reference/published_throughput.yaml: NeMo / Megatron-Bridge performance summaries on
H100, B200, B300, GB200, torchtitan benchmarks on H100/H200; dense and MoE, BF16 and FP8),
predicted by the step model at each run's exact layout. Every family is held out; the one constant
fitted on these rows is MXFP8's GEMM-time factor, on the FP8-CS / MXFP8 ratio of three 25.09 dense
configurations (jobs/validation/fp8_recipes.py). Rows the model cannot express are listed as
excluded with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from gpuplan.catalog import load_accelerator
from gpuplan.core.time.eager_fallbacks import CLAMPED_GLU, EXPERT_BIAS, UNFUSED_BDA, YARN_ROPE
from gpuplan.core.time.step import StepSettings, attention_efficiency, step_time
from gpuplan.core.time.titan_ops import from_framework_label
from gpuplan.core.time.pipeline_schedule import layout_stage_layers
from gpuplan.core.frameworks import framework, torchtitan_fuses_qkv, torchtitan_repeats_kv
from gpuplan.core.time.megatron_ops import cross_entropy_impl
from gpuplan.core.comm.dp_costs import ParamGather
from gpuplan.core.comm.dp_overlap import NEMO_BUCKET_PARAMS
from gpuplan.core.memory.recipe_facts import reduced_grad_bytes
from gpuplan.core.precision import RECIPES
from gpuplan.core.comm.topology import cluster_for
from gpuplan.jobs.validation.throughput import run_spec
from gpuplan.schema.te_kernels import kernel_step_settings
from gpuplan.schema.vocabulary import STATE_DTYPE_BYTES

# What the step model runs each precision label as: MXFP8 (Blackwell block scaling) and FP8
# tensorwise/current/delayed scaling all as FP8 GEMMs with operand casts (core/time/step.py; MXFP8 with
# its own recipe, StepSettings.fp8_recipe).
PRECISION = {"bf16": "bf16", "fp8": "fp8", "fp8-tensorwise": "fp8", "fp8-delayed": "fp8", "mxfp8": "fp8",
             "nvfp4": "fp4"}
# StepSettings.fp8_recipe by label: TE's delayed scaling quantises the experts' inputs in one fused multi-tensor cast
# (core.time.moe_layer: 'delayed'; the NeMo 2.2.0 perf scripts' bf16_with_fp8_mixed, review w12 R1 S4); every other
# per-tensor label runs current scaling's per-expert quantisers
FP8_RECIPE = {"mxfp8": "mxfp8", "fp8-delayed": "delayed"}
# torchtitan's "selective" is op-level SAC (its configs' default); NeMo/Megatron's is core_attn
SELECTIVE = {"torchtitan": "op-sac"}


@dataclass(frozen=True)
class PublishedThroughputCase:
    id: str
    family: str
    precision: str
    moe: bool
    measured: float
    """Tokens per second per GPU, as published."""
    predicted: float
    note: str = ""
    """The row's validation_note (published_throughput.yaml), printed beside its family."""

    @property
    def error(self) -> float:
        return (self.predicted - self.measured) / self.measured


def release(family: str) -> tuple[int, ...]:
    """Release order of a NeMo / Megatron-Bridge family ('nemo-26.04.01-gb200' -> (26, 4, 1));
    () for families without one (torchtitan)."""
    import re

    match = re.match(r"nemo-(\d+)\.(\d+)(?:\.(\d+))?-", family)
    return tuple(int(x or 0) for x in match.groups()) if match else ()


def newest_releases(cases: list[PublishedThroughputCase]) -> set[str]:
    """Ids of the NeMo / Megatron-Bridge rows that are the newest release of their
    configuration (model, GPU type, GPU count, precision label). Performance summaries republish
    the same configuration release after release, its figure moving by up to 3x as the software
    changes; the newest is what the current stack achieves."""
    rows = {r["id"]: r for r in published_throughput_rows()}
    newest: dict[tuple, tuple[tuple[int, ...], str]] = {}
    for c in cases:
        r = rows[c.id]
        if not release(r["family"]):
            continue
        key = (r["model"].get("catalog") or r["model"]["name"], r["gpu"], r["gpus"], r["precision"])
        if key not in newest or release(r["family"]) > newest[key][0]:
            newest[key] = (release(r["family"]), c.id)
    return {case_id for _, case_id in newest.values()}


def published_throughput_rows() -> list[dict[str, Any]]:
    """The rows of catalog/reference/published_throughput.yaml, a fresh copy per call (callers may edit them):
    the file is parsed once per process (gpuplan validate reads the rows four times)."""
    from copy import deepcopy

    return deepcopy(_parsed_rows())


@cache
def _parsed_rows() -> list[dict[str, Any]]:
    from gpuplan.catalog import reference_yaml

    return reference_yaml("published_throughput.yaml")["runs"]


def published_expert_tp(lay: dict[str, Any]) -> int:
    """A published row's expert TP, read by memory (published_layout) and the step (predicted_step): its etp, else 1 —
    Megatron-Bridge / NeMo MoE recipes set expert_tensor_parallel_size = 1 (src/megatron/bridge/recipes/qwen/*/
    qwen3_moe.py, perf_recipes/*); no torchtitan MoE row is published (its rule: core.expert_layout)."""
    return lay.get("etp") or 1


def published_layout(lay: dict[str, Any]):
    """The core.parallel.ParallelLayout of a published row's ``layout`` (absent degrees: 1, ZeRO: 0)."""
    from gpuplan.core.parallel import ParallelLayout

    return ParallelLayout(dp=lay["dp"], tp=lay["tp"], pp=lay["pp"], vpp=lay.get("vpp") or 1, cp=lay.get("cp") or 1,
                          ep=lay.get("ep") or 1, etp=published_expert_tp(lay), zero=lay.get("zero") or 0,
                          micro_batch=lay["micro_batch"], global_batch=lay["global_batch"])


def nemo2_layout(run: dict[str, Any]) -> dict[str, Any]:
    """A row's layout, with optimizer-state sharding (ZeRO-1) where the page leaves it unprinted and the row's
    recipe_memory.zero, read at the release's tag, says the recipe shards; the memory check (published_fits.row_plan)
    and the step (predicted_step) both read it here. NeMo 24.07 (NeMo-Framework-Launcher 24.07 training configs'
    optim distributed_fused_adam, Apex's optimizer that shards the fp32 master weights and Adam states over the
    data-parallel ranks), NeMo 25.02 / 25.04 (NeMo v2.2.0 / v2.3.0 pretraining
    recipes' distributed_fused_adam_with_cosine_annealing, use_distributed_optimizer=True), cited per row."""
    lay = run["layout"]
    zero = (run.get("recipe_memory") or {}).get("zero")
    return lay if lay.get("zero") is not None or zero is None else dict(lay, zero=zero)


def megatron_ddp(run: dict[str, Any]) -> bool:
    """The row trains through Megatron-Core's DDP with NeMo 2's or Megatron-Bridge's comm-overlap setup (NeMo 25.02
    on; NeMo 24.07's launcher: Apex's DistributedFusedAdam): by the row's family, its release or Megatron-Bridge's
    own ('mbridge-...', no NeMo release), not by the id's prefix."""
    return release(run["family"]) >= (25, 2) or run["family"].startswith("mbridge-")


def bridge_release(run: dict[str, Any]) -> tuple[int, ...]:
    """(year, month, patch) of a Megatron-Bridge performance row (NeMo 25.09 on), () otherwise."""
    rel = release(run["family"])
    return rel if rel >= (25, 9) and run["id"].startswith("mbridge-") else ()


def _per_tensor_fp8(run: dict[str, Any]) -> bool:
    """The row runs FP8 with per-tensor scaling (delayed / current / tensorwise), not MXFP8's blocks."""
    return PRECISION.get(run["precision"]) == "fp8" and run["precision"] != "mxfp8"


def recipe_low_precision_weights(run: dict[str, Any]) -> str | None:
    """How a Megatron-Bridge row's recipe holds the layer weights (the plan input low_precision_weights, which the
    memory check, published_fits.recipe_memory_fields, and the step's parameter gather, predicted_step, both read
    here): the perf scripts take Bridge's precision presets (scripts/performance/utils/precision.py@v0.3.0
    L25-41; utils/helpers.py@v0.2.2 L35-50, first_last_layers_bf16 = False), whose MXFP8 and FP8-CS presets set
    fp8_param_gather = True (training/mixed_precision.py@v0.1.0rc4 L230, L268; @v0.2.2 and @v0.3.0 L251, L289):
    'primary'. The NVFP4
    preset keeps bf16 weights (fp8_param_gather = False, @v0.3.0 L402: 'cached') until fp4_param_gather = True
    (@v0.4.2 L422, 26.04.01 on: 'primary'). NeMo 25.02 / 25.04 FP8 rows: 'primary' too (25.02: the perf scripts'
    bf16_with_fp8_mixed, scripts/llm/performance/pretrain_llama3_8b.py@v2.2.0 L64-65, sets fp8_params = True,
    recipes/precision/mixed_precision.py@v2.2.0 L53, which turns fp8_param_gather on, lightning/pytorch/plugins/
    mixed_precision.py@v2.2.0 L99-105; 25.04: bf16_with_fp8_mixed / _current_scaling_mixed set fp8_param_gather =
    True, mixed_precision.py@v2.3.0 L70 / L135, taken by scripts/performance/utils.py@v2.3.0 L340-349) except
    under Megatron FSDP (ZeRO-3 rows: the same utils.py L352-354 turns it off). None for other rows (not read:
    NeMo 24.07's launcher, torchtitan)."""
    rel = bridge_release(run)
    if not rel:
        nemo2 = release(run["family"])[:2] in ((25, 2), (25, 4)) and run["id"].startswith("nemo25")
        return "primary" if nemo2 and _per_tensor_fp8(run) and nemo2_layout(run).get("zero") != 3 else None
    if run["precision"] in ("fp8-tensorwise", "mxfp8"):
        return "primary"
    if run["precision"] == "nvfp4":
        return "primary" if rel >= (26, 4, 1) else "cached"
    return None


def param_gather(run: dict[str, Any]) -> ParamGather:
    """StepSettings.param_gather of a row: primary per-tensor FP8 weights (recipe_low_precision_weights 'primary'
    under FP8-CS or NeMo 2's delayed / current scaling) gather their layer matrices at 1 B
    (core.comm.dp_costs.gather_bytes); bf16 otherwise (MXFP8's primary weights gather in bf16 through the gradient
    buffer, the same docstring; NVFP4 'primary' from 26.04.01: Megatron-Core 0.16's buffer has no FP4 path read,
    taken as bf16). Overlapped unless the row's overlap_param_gather is false (cited per row: the 25.11 perf
    configs' fp8_mx switch)."""
    fp8 = _per_tensor_fp8(run) and (recipe_low_precision_weights(run) == "primary"  # torchtitan: core.time.titan_float8
                                    or run.get("fsdp_float8_all_gather") is True)
    return ParamGather(fp8_matrices=fp8,
                       overlapped=run.get("overlap_param_gather") is not False)


def why_not(run: dict[str, Any]) -> str:
    """Why a row cannot be predicted ('' when it can)."""
    if run.get("precision") == "fp8-rowwise":
        return ("torchao float8 rowwise: no step model for its scaling yet, and the benchmark itself flags these "
                "vanilla-TP rowwise figures as a known low baseline (slower than BF16 on the 8B; pytorch/torchtitan#1207)")
    if run.get("known_regression"):
        return f"measured on a release its own page flags: {run['known_regression']}"
    if PRECISION.get(run.get("precision")) is None:
        return f"precision {run.get('precision')}: no step model for it yet"
    lay, model = run["layout"], run["model"]
    if not model.get("catalog") and any(model.get(k) is None for k in ("layers", "hidden", "heads", "ffn", "vocab")):
        return "model shape incomplete (vocabulary not stated)"
    if not run["measured"].get("tokens_per_s_per_gpu"):
        return "no tokens/s/GPU published"
    if any(lay.get(k) is None for k in ("tp", "pp", "dp", "micro_batch", "global_batch")):
        return "layout incomplete"
    return ""


def tp_comm_overlapped(run: dict[str, Any]) -> bool:
    """Whether the run's recipe pipelines its TP collectives with the GEMMs (StepSettings.
    tp_comm_overlap). torchtitan: only the rows run with AsyncTP (its benchmark tables say so).
    NeMo / Megatron-Bridge: the Llama 3 / 3.1 pretraining recipes with TP > 1 set TE userbuffers
    (Megatron-Bridge @067f987 recipes/llama/h100/llama3.py CommOverlapConfig(tp_comm_overlap=True,
    tp_comm_overlap_cfg=userbuffers_*), perf_recipes/llama/{h100,b200,gb200}/llama3*.py
    tp_comm_overlap_cfg = userbuffers_*); the Llama 2 recipe (recipes/llama/h100/llama2.py) and
    the MoE recipes (qwen3_moe, deepseek) set tp_comm_overlap=False. NVFP4 rows run without it: every
    Llama perf config sets ``tp_comm_overlap = False if precision == "nvfp4"`` (scripts/performance/
    configs/llama3/llama3_llm_pretrain.py@v0.2.2 L78; configs/llama/llama3_llm_pretrain.py@v0.3.0 L79,
    @v0.5.0 L80; configs/llama/llama31_llm_pretrain.py@v0.3.0 L74, @v0.5.0 L87), TE's async backward only."""
    if run["layout"]["tp"] <= 1 or run.get("precision") == "nvfp4":
        return False
    if run["family"].startswith("torchtitan"):
        return "AsyncTP" in run["framework"]
    name = run["model"].get("catalog") or ""
    return name.startswith(("llama-3-", "llama-3.1-")) and run_spec(run["model"]).moe is None


def megatron_eager_fallbacks(run: dict[str, Any]) -> tuple[str, ...]:
    """The Megatron-Core paths a NeMo / Megatron-Bridge row ran as eager ops (core.time.eager_fallbacks):
    the experts' fc2 bias and the clamp of their gated activation unless the recipe runs TE's fused
    grouped MLP (the row's moe_comm.fused_grouped_mlp); the YaRN RoPE from Megatron-Core 0.16 (containers 26.02 on): before,
    apply_rope_fusion ran TE's fused RoPE whatever the mscale (rope_utils.py@core_v0.15.0), and
    NeMo 25.11 shipped core 0.15; the unfused bias-dropout-add at every release (a model with expert biases: TEGroupedMLP
    refuses the fusion, core.time.eager_fallbacks)."""
    experts = () if (run.get("moe_comm") or {}).get("fused_grouped_mlp") else (EXPERT_BIAS, CLAMPED_GLU)
    return experts + ((YARN_ROPE,) if release(run["family"]) >= (26,) else ()) + (UNFUSED_BDA,)  # bda: every release


def recipe_recompute(run: dict[str, Any]) -> dict[str, Any]:
    """StepSettings recompute fields of a row: the layout's where the source prints it (torchtitan),
    else the Megatron-Bridge recipe's (``recipe_recompute``, read at the row's tag; core.memory.recompute):
    block recompute of N layers per chunk, or the selective modules (an empty list recomputes nothing)."""
    given = run["layout"].get("recompute")
    rc = run.get("recipe_recompute")
    if given or not rc or rc["granularity"] is None:
        return {"recompute": given or "none"}
    if rc["granularity"] == "full":
        return {"recompute": "full", "recompute_layers": rc["num_layers"] if rc["method"] == "block" else None}
    modules = rc["modules"]
    if modules is not None and not modules:
        return {"recompute": "none"}
    return {"recompute": "selective", "recompute_modules": tuple(modules or ("core_attn",))}


def row_loss_impl(run: dict[str, Any], spec) -> str:
    """The Megatron loss a row ran: 'te' where its recipe_memory.loss is te-ce (cross_entropy_fusion_impl
    'te', cited at the row's tag), 'native' where it names another loss, else the model provider's
    default (core.time.megatron_ops.loss_impl). The step and the memory check read the same field."""
    return cross_entropy_impl(spec, (run.get("recipe_memory") or {}).get("loss"))


def moe_launch(moe_comm: dict[str, Any]) -> str:
    """StepSettings.moe_launch of a Megatron-Bridge MoE row: 'graph' where its recipe captures the
    whole step (moe_comm.cuda_graph 'full_iteration'), 'static' where its split sizes are fixed
    (moe_comm.static_splits, cited per row: the 25.09 perf script's apply_moe_token_drop(capacity_factor=1.0,
    pad_to_capacity=True), scripts/performance/run_script.py@v0.1.0rc4 L79-80/L109/L116: drop-and-pad,
    no host sync: core.time.moe_host), 'eager' for the other rows whose recipe
    was read (TE-scoped graphs of attn / moe_router / moe_preprocess leave the experts eager),
    'none' (not modelled) for rows without a recipe reading."""
    if not moe_comm:
        return "none"
    if moe_comm.get("cuda_graph") == "full_iteration":
        return "graph"
    return "static" if moe_comm.get("static_splits") else "eager"


def moe_router_graphs(moe_comm: dict[str, Any]) -> bool:
    """StepSettings.moe_router_graphs of a Megatron-Bridge MoE row: False where its recipe ran no CUDA graph of
    the router (moe_comm.cuda_graph 'none', read per row at its tag: cuda_graph_impl 'none', or a TE scope
    without 'moe_router'), else True (TE graphs of moe_router + moe_preprocess, the layout core.time.moe_host's
    constant was fitted on; absent = not read)."""
    graph = moe_comm.get("cuda_graph")
    return graph is None or graph == "full_iteration" or "moe_router" in graph


def cuda_graph_scope(moe_comm: dict[str, Any]) -> str:
    """A row's CUDA graphs as `plan --cuda-graph-scope` names them (schema.te_kernels.CUDA_GRAPH_SCOPES), from its
    moe_comm.cuda_graph: 'full-iteration', 'moe-router' where the router is graphed (moe_router_graphs), else
    'none'."""
    if moe_comm.get("cuda_graph") == "full_iteration":
        return "full-iteration"
    return "moe-router" if moe_router_graphs(moe_comm) else "none"


def flex_backend(moe_comm: dict[str, Any]) -> str:
    """StepSettings.flex_backend of a row: 'deepep' where its moe_comm.backend names DeepEP, else 'hybridep'."""
    return "deepep" if str(moe_comm.get("backend") or "").startswith("deepep") else "hybridep"


def predict_tokens_per_gpu_s(run: dict[str, Any], **step_overrides: Any) -> float:
    """Tokens per second per GPU the step model predicts at the run's layout (``step_overrides``:
    StepSettings fields to change, e.g. while fitting a constant)."""
    lay = run["layout"]
    return lay["global_batch"] * run["model"]["seq_len"] / predicted_step(run, **step_overrides).total / run["gpus"]


def predicted_step(run: dict[str, Any], gpu=None, **step_overrides: Any):
    """The step model's StepBreakdown (seconds by term) at the run's layout, as predict_tokens_per_gpu_s
    times it; ``gpu``: an Accelerator to time it on instead of the catalog's run["gpu"] (a what-if copy with
    other rates, scripts/blackwell_ultra_pairs.py step_split)."""
    spec = run_spec(run["model"])
    gpu = gpu or load_accelerator(run["gpu"])
    cluster = cluster_for(gpu)
    lay = nemo2_layout(run)  # the ZeRO stage the memory check reads (NeMo rows' distributed optimizer)
    torchtitan, ddp = run["family"].startswith("torchtitan"), megatron_ddp(run)
    moe_comm = run.get("moe_comm") or {}
    launch = moe_launch(moe_comm)
    recompute = recipe_recompute(run)
    settings = StepSettings(seq_len=run["model"]["seq_len"], **recompute,
                            dtype=PRECISION[run["precision"]],
                            selective=SELECTIVE.get(run["family"].split("-")[0], "core-attn"),
                            # op-sac's matmul order: the release's q/k/v (core.frameworks: wq, wk, wv before 3396a4b37)
                            op_sac_fused_qkv=torchtitan_fuses_qkv(run["framework"]) if torchtitan else None,
                            # NeMo / Megatron-Bridge run Transformer Engine's cuDNN fused attention
                            attention_efficiency=attention_efficiency(gpu, hopper_tuned=not torchtitan),
                            # torchtitan without torch.compile runs its eager modules (unfused norms,
                            # SwiGLU); with compile, or under TE, the fused kernels
                            implementation="torchtitan" if torchtitan and "compile" not in run["framework"] else
                            "megatron",
                            expert_tp=published_expert_tp(lay),  # the recipes' 1 (published_layout's too)
                            tp_comm_overlap=tp_comm_overlapped(run),
                            # TE's linears: the column-parallel backward's reduce-scatter beside wgrad, as
                            # `plan --framework megatron` takes it (core.frameworks: tp_overlap; torchtitan's 0)
                            tp_overlap=framework("torchtitan" if torchtitan else "megatron").tp_overlap_for(
                                recompute["recompute"]),
                            # the MoE dispatcher and the combined 1F1B all-to-all overlap of the
                            # release's recipe (the row's moe_comm, read from Megatron-Bridge at its tag)
                            ep_dispatcher="flex" if moe_comm.get("dispatcher") == "flex" else "alltoall",
                            ep_a2a_overlap=bool(moe_comm.get("a2a_overlap")),
                            # its attention node runs the shared experts from Megatron-Core 0.16 (26.02 on;
                            # core.comm.moe_overlap), its MLP node before
                            shared_experts_before_dispatch=bridge_release(run) >= (26, 2),
                            # the recipe's TE kernels as `plan --fp8-attention --moe-expert-kernels fused
                            # --cuda-graph-scope --flex-backend` takes them (schema.te_kernels): FP8 attention
                            # (mixed_precision.fp8_dot_product_attention, read at its tag), TE GroupedLinear's
                            # per-expert kernels unless Megatron-Core's fused grouped MLP (core.time.moe_layer),
                            # eager / static MoE launches unless the whole step is graphed (core.time.moe_host),
                            # the row's CUDA-graph scope (moe_comm.cuda_graph) and flex backend (moe_comm.backend)
                            **kernel_step_settings(bool(run.get("fp8_dot_product_attention")),
                                                   "fused" if moe_comm.get("fused_grouped_mlp") else "per-expert",
                                                   cuda_graph_scope(moe_comm), launch, flex_backend(moe_comm)),
                            eager_fallbacks=() if torchtitan else megatron_eager_fallbacks(run),
                            # torchtitan's own op list, eager or torch.compile per block (core.time.titan_ops)
                            titan_ops=from_framework_label(run["framework"], fused_qkv=torchtitan_fuses_qkv(
                                run["framework"]), repeats_kv=torchtitan_repeats_kv(run["framework"]))
                            if torchtitan else None,  # its q/k/v and GQA too
                            # NeMo / Megatron-Bridge: the vocab-parallel loss on the last stage, TE's
                            # Triton one where the row's recipe sets it (recipe_memory.loss te-ce, read at
                            # its tag: the perf scripts set cross_entropy_fusion_impl 'te' for every model),
                            # else the provider's (core.time.megatron_ops.loss_impl): the loss memory uses
                            megatron_loss=None if torchtitan else row_loss_impl(run, spec),
                            # the recipe's CPU activation offloading, first N layers (core.time.activation_offload)
                            offload_layers=run.get("cpu_offloading_num_layers") or 0,
                            fp8_recipe=FP8_RECIPE.get(run["precision"], "tensorwise"),
                            # torchtitan: FSDP2's per-block gathers; NeMo: Megatron's distributed optimizer
                            # with overlapped gradient reduce and parameter gather (core.comm.dp_overlap)
                            dp_schedule="fsdp2" if torchtitan else "megatron", dp_overlap=1.0,
                            # the gradient width memory holds: torchtitan's fp32 reduce, the row's grad_dtype
                            grad_comm_bytes=row_grad_comm_bytes(run),
                            # the distributed optimizer's gather: FP8-CS primary weights at their FP8 bytes,
                            # synchronous where the recipe turns its overlap off (param_gather)
                            param_gather=param_gather(run),
                            # NeMo 2 / Megatron-Bridge: 128 Mi-parameter gradient buckets at dp > 1 under the
                            # distributed optimizer (core.comm.dp_overlap.NEMO_BUCKET_PARAMS); others Megatron-Core's default
                            dp_bucket_params=NEMO_BUCKET_PARAMS if ddp else None,
                            # Megatron DDP's hook adds the embedding's dense gradient (core.time.megatron_grad_passes);
                            # GPT-OSS recipes from Bridge v0.3.0 (26.02) set calculate_per_token_loss (the same module)
                            embedding_grad_add=ddp,
                            per_token_loss=run["model"]["catalog"].startswith("gpt-oss") and bridge_release(run) >= (26, 2))
    settings = replace(settings, **step_overrides)
    micro_batches = max(1, lay["global_batch"] // (lay["micro_batch"] * lay["dp"]))
    return step_time(spec, cluster, settings, dp=lay["dp"], tp=lay["tp"], pp=lay["pp"], vpp=lay.get("vpp") or 1,
                     cp=lay.get("cp") or 1, ep=lay.get("ep") or 1, zero=lay.get("zero") or 0,
                     micro_batch=lay["micro_batch"], micro_batches=micro_batches, stage_layers=recipe_stage_layers(run))


def row_grad_comm_bytes(run: dict[str, Any]) -> float:
    """Bytes a gradient element moves in the row's data-parallel reduction, by the rule `plan` and the row's memory
    check read (core.memory.recipe_facts.reduced_grad_bytes): the framework's default recipe with the row's
    recipe_memory.grad_dtype (read at its tag; published_fits.recipe_memory_fields passes it as --grad-dtype).
    torchtitan: 4 (FSDP2's reduce_dtype fp32); Megatron rows: 2 where the recipe sets grad_reduce_in_fp32 False,
    else Megatron-Core's fp32 buffer, 4."""
    name = "torchtitan" if run["family"].startswith("torchtitan") else "megatron"
    given = (run.get("recipe_memory") or {}).get("grad_dtype")
    return reduced_grad_bytes(name, RECIPES[framework(name).recipe], STATE_DTYPE_BYTES.get(given))


def recipe_stage_layers(run: dict[str, Any]) -> tuple[int, int] | None:
    """(fullest, last) pipeline rank's decoder layers where the row's recipe fixes the split with a Megatron-Core
    layout string (the row's ``pp_layout``, cited at its tag; core.time.pipeline_schedule.layout_stage_layers),
    else None: the step model's own split (core.memory.model_states.stage_span), which equals the DeepSeek-V3
    recipes' (pp, vp) map (src/megatron/bridge/recipes/deepseek/deepseek_v3.py@v0.1.0rc4 L117-140, @v0.3.1
    set_deepseek_v3_pipeline_model_parallel_layout) and their "Et*4|(t*4|)*14tmL" presets at every pp they run."""
    layout = run.get("pp_layout")
    if not layout:
        return None
    return layout_stage_layers(layout, run["layout"]["pp"], run["layout"].get("vpp") or 1, run_spec(run["model"]).num_layers)


def published_throughput_cases() -> tuple[list[PublishedThroughputCase], list[tuple[str, str]]]:
    """(cases, excluded (id, reason))."""
    cases, excluded = [], []
    for run in published_throughput_rows():
        why = why_not(run)
        if why:
            excluded.append((run["id"], why))
            continue
        spec = run_spec(run["model"])
        cases.append(PublishedThroughputCase(run["id"], run["family"], PRECISION[run["precision"]],
                                             spec.moe is not None, float(run["measured"]["tokens_per_s_per_gpu"]),
                                             predict_tokens_per_gpu_s(run), run.get("validation_note", "")))
    return cases, excluded
