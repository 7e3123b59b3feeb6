"""Published per-GPU memory of real GPU training runs (catalog/reference/published_memory.yaml)
against gpuplan: each row with a catalog model and a complete layout is estimated with its
framework's profile and compared with what the source reports, reserved against gpuplan's
reserved peak (allocated x (1 + fragmentation); torchtitan's FSDP2 rows add its side-stream pools,
core/memory/fsdp_streams.py), allocated against allocated. No constant was
chosen from these rows (they are scored only; the allocator's constant comes from
allocator_ratios.yaml). Units: bytes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from gpuplan.core.expert_layout import expert_layout_fields
from gpuplan.core.memory import training as M
from gpuplan.core.memory.device_memory import fragmentation
from gpuplan.core.frameworks import deepspeed_bf16_engine, framework, torchtitan_fuses_qkv
from gpuplan.core.parallel import ParallelLayout

GiB = 2**30
# torchtitan wrapped the token embedding into the root FSDP unit (fully_shard(model) after the blocks:
# parallelisms/parallelize_llama.py @9dec370:339, models/llama3/parallelize_llama.py @e7c0cae:367) until PR #1094
# (83e6941, 2025-07-28) gave it a unit of its own; FSDP2 keeps the root unsharded from forward into backward
# (_fsdp_state.py _lazy_init: the root's post_forward_mesh_info = None). Rows whose framework_version is dated
# before this ran with that root.
EMBEDDING_OWN_UNIT_SINCE = "2025-07-28"
# torchtitan compiles its loss function when --training.compile is set from PR #1033 (bbb1b61, 2025-04-02;
# components/loss.py @e7c0cae:27-29); before, train.py kept `loss_fn = torch.compile(loss_fn)` commented out
# (@9dec370:137-138, @eddce12:137-138).
LOSS_COMPILED_SINCE = "2025-04-02"
MODEL_ALIASES = {"llama-7b": "llama-2-7b"}  # LLaMA-1 7B: the same shape as Llama-2-7B at s 4096
RECOMPUTE = {"op-sac": "selective", "selective": "selective", "full": "full", "none": "none"}


@dataclass(frozen=True)
class PublishedCase:
    id: str
    framework: str
    kind: str
    """What the source reports: reserved, allocated or unknown (compared as reserved)."""
    measured: float
    estimated: float | None
    """None where the row cannot be estimated (``note`` says why)."""
    note: str

    @property
    def error(self) -> float | None:
        return None if self.estimated is None else (self.estimated - self.measured) / self.measured


def published_rows() -> list[dict[str, Any]]:
    from gpuplan.catalog import reference_yaml

    return reference_yaml("published_memory.yaml")["runs"]


def _why_not(row: dict[str, Any], models) -> str:
    model = MODEL_ALIASES.get(row["model"], row["model"])
    if model not in models:
        return f"model {row['model']} not in the catalog"
    lay = row["layout"]
    if any(lay.get(k) is None for k in ("dp", "tp", "pp", "cp")) or row.get("seq_len") is None \
            or row.get("micro_batch") is None or row.get("memory_gib") is None:
        return "layout, sequence, micro-batch or figure not stated"
    if "q_proj,v_proj" in (row.get("note") or ""):
        return "LoRA on q and v only: gpuplan puts adapters on every linear layer"
    if "offload" in row["id"]:
        return "parameter/activation offload to the CPU: not an input"
    if RECOMPUTE.get(row.get("recompute")) is None:
        return f"recompute {row.get('recompute')!r} not an input"
    if (lay.get("vpp") or 1) > 1 or (lay.get("pp") or 1) > 1 and not lay.get("microbatches"):
        return "pipeline schedule details not stated"
    return ""


def _estimate(row: dict[str, Any], spec) -> tuple[float, str]:
    lay, fw = row["layout"], row["framework"]
    profile = framework(fw)
    recompute = RECOMPUTE[row["recompute"]]
    if recompute == "selective" and profile.selective == "none":
        recompute = "full"
    finetune = row.get("finetune") or "full"
    recipe = "bf16" if row.get("precision") == "bf16-pure" else profile.recipe
    mb = row["micro_batch"]
    layout = ParallelLayout(dp=lay["dp"], tp=lay["tp"], pp=lay["pp"], cp=lay["cp"], zero=lay.get("zero") or 0,
                            micro_batch=mb, global_batch=mb * lay["dp"] * (lay.get("microbatches") or 1),
                            **expert_layout_fields(fw))  # the framework's expert TP (core.expert_layout)
    bf16 = deepspeed_bf16_engine(fw, row.get("precision"), recipe)  # an fp16 NeoX / Pythia row: FP16_Optimizer
    settings = M.MemorySettings(seq_len=row["seq_len"], recipe=recipe, framework=fw, deepspeed_bf16=bf16,
                                implementation=profile.implementation, recompute=recompute,
                                finetune=finetune if finetune in ("full", "lora", "qlora") else "full",
                                lora_rank=row.get("lora_rank") or 16,
                                # the torchtitan rows (Dec 2024 - 2025) predate ChunkedLossWrapper:
                                # cross_entropy(pred.float()) keeps the fp32 log-softmax, compiled with the
                                # model from PR #1033 on (LOSS_COMPILED_SINCE)
                                loss=_torchtitan_loss(row) if fw == "torchtitan" else None,
                                # op-sac's saved matmul outputs: the release's q/k/v (wq, wk, wv before 3396a4b37)
                                op_sac_fused_qkv=torchtitan_fuses_qkv(row["framework_version"]) if fw == "torchtitan"
                                else None,  # the row's fp8_allgather: core.memory.float8_gather
                                fsdp_float8_all_gather=row.get("fp8_allgather") is True and fw == "torchtitan")
    allocated = M.peak_allocated(spec, layout, settings)
    notes = []
    if str(row.get("precision", "")).startswith("fp8"):
        notes.append("fp8 linears estimated as bf16 (torchao Float8Linear keeps the bf16 input)")
    if row.get("compile"):
        notes.append("torch.compile not modelled (its fusions save less)" if settings.loss != "compiled-ce" else
                     "compiled loss modelled (bf16 logits kept); the compiled blocks not (their fusions save less)")
    if row["kind"] == "allocated":
        return float(allocated), "; ".join(notes)
    frag = fragmentation(profile.expandable_segments)
    if fw == "torchtitan" and lay.get("zero") == 3:  # FSDP2: its side-stream pools (core/memory/fsdp_streams.py)
        return fsdp2_reserved(spec, layout, settings, frag, root_holds_embedding(row)), "; ".join(notes)
    return float(allocated) * (1 + frag), "; ".join(notes)


def _code_date(row: dict[str, Any]) -> str | None:
    """The first date (YYYY-MM-DD) in the row's framework_version: when its framework's code was taken."""
    date = re.search(r"\d{4}-\d{2}-\d{2}", row.get("framework_version") or "")
    return date.group(0) if date else None


def root_holds_embedding(row: dict[str, Any]) -> bool:
    """Whether the row's torchtitan wrapped the embedding into the root FSDP unit (EMBEDDING_OWN_UNIT_SINCE):
    its code date is earlier; no date: today's units."""
    date = _code_date(row)
    return bool(date) and date < EMBEDDING_OWN_UNIT_SINCE


def _torchtitan_loss(row: dict[str, Any]) -> str:
    """'compiled-ce' for a compiled row whose code compiles the loss too (LOSS_COMPILED_SINCE), else 'fp32-ce'."""
    date = _code_date(row)
    return "compiled-ce" if row.get("compile") and date and date >= LOSS_COMPILED_SINCE else "fp32-ce"


def fsdp2_reserved(spec, layout: ParallelLayout, settings: M.MemorySettings, frag: float,
                   embedding_in_root: bool = False) -> float:
    """Reserved peak of an FSDP2 run, bytes, worst of the first and last pipeline stage: the sharded
    gradients in the reduce-scatter stream's pool and the largest unit's all-gather buffer in the
    all-gather stream's pool beyond the compute stream's peak (core.memory.fsdp_streams). The units are
    torchtitan's today (profile embedding_own_fsdp_unit: the embedding, norm + LM head, each layer) or,
    ``embedding_in_root``, its earlier ones (embedding + norm + LM head as the root, kept unsharded into
    backward: its bf16 embedding joins the start-of-backward working set). With the eager fp32 loss
    (``settings.loss`` 'fp32-ce') the compute pool also holds the bf16 logits' freed block at the start of
    backward (fsdp_streams.eager_loss_hole_bytes)."""
    from gpuplan.core.memory.fsdp_streams import eager_loss_hole_of, stage_pool_bytes
    from gpuplan.core.precision import RECIPES

    compute_bytes = RECIPES[settings.recipe].compute_bytes
    # the eager cross_entropy(pred.float()) + del pred of the rows' train.py leaves the bf16 logits' block free
    # below the loss gradients (core.memory.fsdp_streams.eager_loss_hole_bytes); pp 1 only
    hole = float(eager_loss_hole_of(spec, layout, settings, compute_bytes))
    worst = 0.0
    for stage in {0, layout.pp - 1}:
        m = M.stage_memory_parts(spec, layout, settings, stage)
        pools = stage_pool_bytes(spec, layout, m, stage, compute_bytes, embedding_in_root, loss_hole=hole)
        worst = max(worst, float(pools) * (1 + frag))
    return worst


def published_cases() -> list[PublishedCase]:
    from gpuplan.adapters.hf_config import model_spec_from_hf_config
    from gpuplan.catalog import model_entries

    models = model_entries()
    out = []
    for row in published_rows():
        measured = (row.get("memory_gib") or 0) * GiB
        why = _why_not(row, models)
        if why:
            out.append(PublishedCase(row["id"], row["framework"], row["kind"], measured, None, why))
            continue
        name = MODEL_ALIASES.get(row["model"], row["model"])
        spec = model_spec_from_hf_config(models[name]["config"], name=name)
        estimated, note = _estimate(row, spec)
        out.append(PublishedCase(row["id"], row["framework"], row["kind"], measured, estimated, note))
    return out
