"""The framework profiles against the frameworks' own code: each run of
catalog/reference/framework_measurements.yaml (torchtitan, Megatron-Core, PEFT training steps on a
CPU under fake tensors, scripts/measure_frameworks.py) described as gpuplan inputs, estimated with
the matching profile (--framework torchtitan | megatron | hf) and compared on the allocated peak.

How a measured configuration maps onto gpuplan's inputs is written out in ``framework_inputs``;
where the measured program is not what the framework runs on a GPU (torchtitan's PP-stage
emulation, Megatron's TE-free local layer), the mapping follows the measured program and says so.
Units: bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from gpuplan.core.memory import training as M
from gpuplan.core.frameworks import framework, pp_unsharded_stage_bytes
from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.parallel import ParallelLayout

PROFILE_OF = {"torchtitan": "torchtitan", "megatron": "megatron", "peft": "hf"}


@dataclass(frozen=True)
class FrameworkCase:
    """One measured framework run and gpuplan's estimate of it (bytes, allocated, rank 0)."""

    id: str
    framework: str
    profile: str
    config: dict[str, Any]
    measured: float
    estimated: float
    modelled: bool
    """False where gpuplan has no input for what the run changes (its error is reported, not scored)."""
    note: str

    @property
    def error(self) -> float:
        return (self.estimated - self.measured) / self.measured


def framework_reference() -> dict[str, Any]:
    from gpuplan.catalog import reference_yaml

    return reference_yaml("framework_measurements.yaml")


def framework_inputs(spec: ModelSpec, config: dict[str, Any]) -> tuple[ModelSpec, ParallelLayout, M.MemorySettings,
                                                                        str]:
    """(spec, layout, settings, note) that describe one measured run to gpuplan."""
    fw = config["framework"]
    profile = PROFILE_OF[fw]
    dp, tp, pp, mb = config["dp"], config["tp"], config["pp"], config["micro_batch"]
    microbatches = config.get("microbatches", 1)
    note = ""
    ce = {"peft": "hf-ce", "megatron": "vocab-parallel-ce", "torchtitan": "fp32-ce"}[fw]
    loss = {"ce": ce, "chunked": "chunked"}[config.get("loss", "ce")]
    settings = M.MemorySettings(seq_len=config["seq_len"], recipe=framework(profile).recipe, framework=profile,
                                implementation=framework(profile).implementation,
                                recompute=config["recompute"], optimizer_impl=config["optimizer_impl"], loss=loss,
                                device="cpu")  # the runs are CPU fake-tensor runs
    if fw == "torchtitan":
        zero = 3 if dp > 1 else 0
        if pp > 1:  # one stage's FSDP state, micro-batches one after another (see _pp_stage_emulation)
            spec = replace(spec, num_layers=spec.num_layers // pp)
            note = "PP-stage emulation: the stage's layers with embedding and head, one micro-batch alive"
        layout = ParallelLayout(dp=dp, tp=tp, zero=zero, micro_batch=mb)
    elif fw == "megatron":
        zero = 1 if config.get("distributed_optimizer", True) and dp > 1 else 0
        layout = ParallelLayout(dp=dp, tp=tp, pp=pp, zero=zero, micro_batch=mb, sequence_parallel=False,
                                global_batch=mb * dp * microbatches)
        # the runs build Megatron's TE-free local layer (no Transformer Engine on a CPU)
        settings = replace(settings, implementation="megatron-local")
        if config.get("attention") == "local":
            settings = replace(settings, attention_kernel="eager")
    else:  # PEFT / HF full fine-tune on one GPU
        layout = ParallelLayout(micro_batch=mb)
        finetune = "full" if config.get("lora_rank", 16) == 0 else "lora"
        recipe = "amp" if config.get("autocast") else "bf16"
        settings = replace(settings, finetune=finetune, lora_rank=config.get("lora_rank", 16) or 16, recipe=recipe)
    return spec, layout, settings, note


def _modelled(config: dict[str, Any]) -> tuple[bool, str]:
    """Whether gpuplan has an input for everything the run changes."""
    if config.get("float8", "none") != "none":  # torchao Float8Linear saves the bf16 input and
        # re-casts in backward: the same allocated peak as bf16 (measured equal, 38.38 GiB x 4)
        return True, "Float8 linears estimated as bf16 (torchao keeps the high-precision input)"
    if config.get("reshard", "default") != "default":
        return False, "fsdp_reshard_after_forward override: not an input"
    if config.get("lora_targets", "all-linear") != "all-linear":
        return False, "LoRA on q,v only: gpuplan puts adapters on every linear layer"
    return True, ""


def estimate_case(spec: ModelSpec, config: dict[str, Any]) -> float:
    """gpuplan's allocated peak (bytes) for one measured configuration."""
    spec, layout, settings, _ = framework_inputs(spec, config)
    peak = M.stage_memory(spec, layout, settings, 0).allocated  # the runs measure rank 0: the first stage
    if config["framework"] == "torchtitan" and config["pp"] > 1:  # the stage keeps unsharded params + fp32 grads
        params = M.stage_params(spec, layout, 0).total
        emulated = replace(layout, pp=config["pp"])
        unsharded, grads = pp_unsharded_stage_bytes(framework("torchtitan"), emulated, params,
                                                    M.RECIPES[settings.recipe].compute_bytes)
        peak = peak + float(unsharded) + float(grads)
    return float(peak)


def framework_cases() -> list[FrameworkCase]:
    """Every packaged framework run, estimated."""
    from gpuplan.adapters.hf_config import model_spec_from_hf_config
    from gpuplan.catalog import model_entries

    cases = []
    for run in framework_reference()["runs"]:
        config = run["config"]
        spec = model_spec_from_hf_config(model_entries()[config["model"]]["config"], name=config["model"])
        modelled, why = _modelled(config)
        note = framework_inputs(spec, config)[3]
        cases.append(FrameworkCase(run["id"], config["framework"], PROFILE_OF[config["framework"]], config,
                                   float(run["full_depth"]["peak_bytes"]), estimate_case(spec, config), modelled,
                                   "; ".join(x for x in (why, note) if x)))
    return cases
