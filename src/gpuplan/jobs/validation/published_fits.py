"""Does gpuplan's fit rule accept the layouts published runs trained with? Each scored row of
published_throughput.yaml is evaluated as `gpuplan plan` would evaluate it (its model, GPU, dtype and
FP8 recipe, framework, global batch, the recompute its recipe ran) and the reserved + runtime memory
compared with the fit budget (core.memory.device_memory: capacity x (1 - margin)). A run that trained is
a layout that fits on its GPU: every refusal is the memory model's miss (or an input it has no field
for). Each Megatron-Bridge row is evaluated with what its benchmark recipe ran, read at the row's
Bridge tag (recipe_memory_fields): its recompute modules / layers, its CPU activation offloading, the
bf16 gradient buffer, DeepSeek-V3's bf16 Adam moments and the launcher's expandable segments.
Reported by family in docs/accuracy.md.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from statistics import median
from typing import Any

from gpuplan.jobs.validation.published_throughput import (  # the step reads the same layout and weights
    bridge_release, nemo2_layout, recipe_low_precision_weights)


@dataclass(frozen=True)
class FitCheck:
    id: str
    family: str
    over: float
    """gpuplan's reserved + runtime bytes (+ the fit rule's excess, planner.plan.Plan) / the fit budget - 1 (> 0: refused)."""


def fit_checks() -> list[FitCheck]:
    """The fit rule's verdict on every published layout with a catalog model."""
    from gpuplan.jobs.validation.published_throughput import published_throughput_rows, why_not

    out = []
    for run in published_throughput_rows():
        if why_not(run) or not run["model"].get("catalog"):
            continue
        plan = row_plan(run)
        torchtitan = run["family"].startswith("torchtitan")
        family = run["family"].split("-")[0] + ("-" + run["gpu"] if not torchtitan else "")
        # the rule plan applies: reserved + runtime + what the framework's published memory gap keeps free
        out.append(FitCheck(run["id"], family, (plan.total_bytes + plan.fit_excess_bytes) / plan.budget_bytes - 1))
    return out


def row_plan(run: dict[str, Any]):
    """A published row's layout evaluated as `gpuplan plan` evaluates it (planner.plan.Plan: its memory
    breakdown by category, runtime bytes, reserve and budget): the row's model, GPU, dtype and FP8 recipe,
    framework, global batch, the recompute its recipe ran and its recipe's memory facts."""
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.search import evaluator_for
    from gpuplan.jobs.validation.published_throughput import (PRECISION, published_expert_tp, published_layout,
                                                              recipe_recompute)
    from gpuplan.jobs.validation.throughput import run_spec
    from gpuplan.planner.plan import evaluate_layout

    lay, torchtitan = run["layout"], run["family"].startswith("torchtitan")
    fields = dict(model=run["model"]["catalog"], tokens=1e12, gpu=run["gpu"], gpus=run["gpus"],
                  seq_len=run["model"]["seq_len"], global_batch=lay["global_batch"],
                  dtype=PRECISION[run["precision"]], framework="torchtitan" if torchtitan else "megatron")
    if run["precision"] == "mxfp8":
        fields["fp8_recipe"] = "mxfp8"
    recompute = recipe_recompute(run)
    fields.update({k: v for k, v in recompute.items() if k != "recompute" and v is not None})
    fields.update(recipe_memory_fields(run))
    if run_spec(run["model"]).moe is not None:  # the recipes' expert TP (published_expert_tp), as the step reads it
        fields["etp"] = published_expert_tp(lay)
    evaluator = evaluator_for(PlanInputs(**fields))
    if (run.get("recipe_memory") or {}).get("moe_keeps_expert_output"):  # a core <= 0.12 container (cited per row)
        evaluator = replace(evaluator, memory=replace(evaluator.memory, moe_keeps_expert_output=True))
    return evaluate_layout(evaluator, published_layout(nemo2_layout(run)), recompute["recompute"],
                           lay["global_batch"], run["gpus"])


RECIPE_MEMORY_FIELDS = ("grad_dtype", "moment_dtype", "loss", "embedding_loss_slots", "allocator")
"""The row field recipe_memory's keys that are plan inputs of the same name (published_throughput.yaml's header:
each read at the row's tag and cited under derived.recipe_memory.<key>)."""


def recipe_memory_fields(run: dict[str, Any]) -> dict[str, Any]:
    """PlanInputs memory fields a Megatron-Bridge row's benchmark ran with (other rows: their recipe_memory's).

    - grad_dtype, moment_dtype, loss, embedding_loss_slots: the row's recipe_memory, read at its tag and cited
      per row (bf16 gradient buffer, bf16 Adam moments, TE's fused cross-entropy, the embedding / loss
      pipeline slots); NeMo 25.02 / 25.04 rows carry grad_dtype (their perf scripts' grad_reduce_in_fp32 False).
    - low_precision_weights: published_throughput.recipe_low_precision_weights (FP8-CS and MXFP8 presets'
      fp8_param_gather = True: 'primary'; NVFP4 'cached' until 26.04.01; NeMo 25.02 / 25.04 FP8 rows' fp8_params /
      fp8_param_gather: 'primary' but under Megatron FSDP), which the step's gather reads too.
    - ep_dispatcher flex: the row's moe_comm (dispatcher flex, read per row): HybridEP's buffers instead of
      NCCL all-to-all's (core.memory.device_memory.hybrid_ep_bytes), DeepEP's where its backend names DeepEP
      (flex_backend deepep: core.memory.deep_ep).
    - ep_a2a_overlap: the row's moe_comm.a2a_overlap (read per row): one layer's activations more.
    - offload_layers: the row's cpu_offloading_num_layers (read per row, cited in its derived map).
    - allocator expandable: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True in the launch (expandable_segments).
    """
    recipe = run.get("recipe_memory") or {}
    fields: dict[str, Any] = {k: recipe[k] for k in RECIPE_MEMORY_FIELDS if k in recipe}  # NeMo 2.0 rows: grad_dtype
    if weights := recipe_low_precision_weights(run):  # Bridge and NeMo 2 FP8 rows; the step's gather reads the same
        fields["low_precision_weights"] = weights
    rel = bridge_release(run)
    if not rel:
        return fields
    from gpuplan.jobs.validation.published_throughput import flex_backend
    moe_comm = run.get("moe_comm") or {}
    if moe_comm.get("dispatcher") == "flex":  # HybridEP's, or DeepEP's buffers (published_throughput.flex_backend)
        fields["ep_dispatcher"] = "flex"
        fields["flex_backend"] = flex_backend(moe_comm)  # stated either way: plan's default is DeepEP
    if moe_comm.get("a2a_overlap"):  # overlap_moe_expert_parallel_comm: the combined 1F1B's fused layer
        fields["ep_a2a_overlap"] = True
    if run.get("cpu_offloading_num_layers"):
        fields["offload_layers"] = run["cpu_offloading_num_layers"]
    if expandable_segments(run):
        fields["allocator"] = "expandable"
    return fields


def expandable_segments(run: dict[str, Any]) -> bool:
    """Whether a Megatron-Bridge row's launch set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.
    26.06 / 26.06.01: every slurm run (scripts/performance/utils/executors.py@v0.5.0 L48 PERF_ENV_VARS; dropped
    only for nccl_ub / Llama Megatron-FSDP presets, perf_plugins.py@v0.5.0 L313-318, none among these rows);
    26.08: each row's flat perf recipe's env_vars (e.g. perf_recipes/deepseek/gb200/deepseek_v3.py@v0.6.0 L168,
    qwen/gb200/qwen3_moe.py, gpt_oss/gb200/gpt_oss.py: all eight rows). Before, per model in the launcher:
    Llama 3.1 405B FP8 on GB200 (setup_experiment.py@v0.1.0rc4 L119-120, perf_plugins.py@v0.2.2 L252-254,
    @v0.3.0 L262-269), from 26.04 on GB200 / GB300 (perf_plugins.py@v0.4.0 L262-269), 26.04.01 also NVFP4 on
    GB200 (@v0.4.2 L265-272); DeepSeek-V3 BF16 on GB200 in 25.09 (setup_experiment.py@v0.1.0rc4 L121-123),
    on H100 in 26.02 / 26.02.01 (perf_plugins.py@v0.3.0 L270-276), + GB200 in 26.04 (@v0.4.0 L271-277),
    + B200 in 26.04.01 (@v0.4.2 L274-280)."""
    rel, model, gpu, precision = bridge_release(run), run["model"].get("catalog"), run["gpu"], run["precision"]
    if not rel:
        return False
    if rel >= (26, 6):
        return True
    fp8 = precision in ("fp8-tensorwise", "mxfp8")
    if model == "llama-3.1-405b":
        gpus = ("gb200", "gb300") if rel >= (26, 4) else ("gb200",)
        return gpu in gpus and (fp8 or (rel >= (26, 4, 1) and precision == "nvfp4" and gpu == "gb200"))
    if model == "deepseek-v3":
        if rel == (25, 9, 0):
            return gpu == "gb200" and precision == "bf16"
        gpus = {(26, 2, 0): ("h100-sxm",), (26, 2, 1): ("h100-sxm",), (26, 4, 0): ("h100-sxm", "gb200"),
                (26, 4, 1): ("h100-sxm", "gb200", "b200")}.get(rel, ())
        return gpu in gpus
    return False


def fit_table_rows(checks: list[FitCheck]) -> tuple[tuple[str, ...], ...]:
    """(GPU family, layouts, refused, median excess of the refused) per GPU, and all together."""
    by: dict[str, list[FitCheck]] = defaultdict(list)
    for c in checks:
        by[c.family.split("-", 1)[-1]].append(c)
    by["all"] = list(checks)
    rows = []
    for name, members in sorted(by.items(), key=lambda kv: (kv[0] == "all", kv[0])):
        refused = [c.over for c in members if c.over > 0]
        rows.append((name, str(len(members)), str(len(refused)), f"+{median(refused):.0%}" if refused else ""))
    return tuple(rows)
