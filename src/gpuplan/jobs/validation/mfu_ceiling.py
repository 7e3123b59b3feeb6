"""The best MFU anyone has published, by hardware class, model kind and precision: a plan
predicted faster than that (beyond the prediction band) says so in its output.

MFU here is gpuplan's own definition (core.step.model_flops_per_token over the dense peak of
the run's precision), recomputed for every published run with tokens/s/GPU
(catalog/reference/published_throughput.yaml) and every llm-foundry / IBM run with an MFU
(catalog/reference/throughput_runs.yaml, converted through tokens/s/GPU).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

HOPPER = ("h100", "h200", "h800", "h20")
BLACKWELL = ("b200", "b300", "gb200", "gb300")


def hardware_class(gpu_id: str) -> str:
    """'hopper', 'blackwell', 'ampere' or the id itself."""
    if gpu_id.startswith(HOPPER):
        return "hopper"
    if gpu_id.startswith(BLACKWELL):
        return "blackwell"
    if gpu_id.startswith(("a100", "a800")):
        return "ampere"
    return gpu_id


@dataclass(frozen=True)
class PublishedMfu:
    run: str
    mfu: float


@lru_cache(maxsize=1)
def best_published_mfu() -> dict[tuple[str, bool, str], PublishedMfu]:
    """(hardware class, MoE, 'bf16'|'fp8') -> the highest published MFU (gpuplan's definition)."""
    from gpuplan.catalog import load_accelerator
    from gpuplan.core.step import model_flops_per_token
    from gpuplan.jobs.validation.published_throughput import PRECISION, published_throughput_rows
    from gpuplan.jobs.validation.throughput import run_spec, throughput_reference

    best: dict[tuple[str, bool, str], PublishedMfu] = {}

    def add(run_id, gpu_id, model, dtype, tokens_per_gpu_s):
        spec = run_spec(model)
        gpu = load_accelerator(gpu_id)
        mfu = tokens_per_gpu_s * model_flops_per_token(spec, model["seq_len"]) / gpu.peak(dtype)
        key = (hardware_class(gpu.id), spec.moe is not None, dtype)
        if key not in best or mfu > best[key].mfu:
            best[key] = PublishedMfu(run_id, mfu)

    for run in published_throughput_rows():
        dtype = PRECISION.get(run.get("precision"))
        tps = run["measured"].get("tokens_per_s_per_gpu")
        model = run["model"]
        if dtype and tps and (model.get("catalog") or model.get("vocab")):
            add(run["id"], run["gpu"], model, dtype, tps)
    for run in throughput_reference()["runs"]:
        tps = run["measured"].get("tokens_per_s_per_gpu")
        if tps:
            add(run["id"], run["gpu"], run["model"], "fp8" if run.get("precision") == "fp8" else "bf16", tps)
    return best


def ceiling_note(gpu_id: str, moe: bool, dtype: str, mfu: float, band: float) -> str | None:
    """A warning when ``mfu`` beats the best published MFU of its class by more than ``band``."""
    table = best_published_mfu()
    best = table.get((hardware_class(gpu_id), moe, dtype))
    if best is None and dtype == "bf16" and (hardware_class(gpu_id), moe, "fp8") in table:
        # no BF16 run published: an FP8 run's throughput bounds BF16 from above (its MFU is of
        # the FP8 peak; in BF16-peak terms it is that x fp8/bf16 peak)
        from gpuplan.catalog import load_accelerator

        gpu = load_accelerator(gpu_id)
        fp8 = table[(hardware_class(gpu_id), moe, "fp8")]
        best = PublishedMfu(fp8.run + " (FP8, in BF16-peak terms)", fp8.mfu * gpu.peak("fp8") / gpu.peak("bf16"))
    if best is None or mfu <= best.mfu * (1 + band):
        return None
    kind = "MoE" if moe else "dense"
    return (f"predicted MFU {mfu:.1%} is above the best published {kind} {dtype} MFU on {hardware_class(gpu_id)} "
            f"({best.mfu:.1%}, {best.run}) by more than the ±{band:.0%} band: treat this plan's time as optimistic")


def predicted_mfu_notes(gpu_id: str, spec, dtype: str, mfu: float, band: float) -> tuple[str, ...]:
    """The caveats a predicted MFU carries (plan, train --mfu predicted): beyond the best published
    run of its class (ceiling_note), and the model's own published record outside the band
    (jobs/validation/track_record.py)."""
    from gpuplan.jobs.validation.track_record import track_record_note

    notes = (ceiling_note(gpu_id, spec.moe is not None, dtype, mfu, band), track_record_note(spec, band))
    return tuple(n for n in notes if n)
