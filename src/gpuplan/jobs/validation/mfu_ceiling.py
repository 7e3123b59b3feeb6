"""The best MFU anyone has published, by hardware class, model kind and precision: a plan
predicted faster than that (beyond the prediction band) says so in its output.

MFU here is gpuplan's own definition (core.time.step.model_flops_per_token over the dense peak of
the run's precision), recomputed for every published run with tokens/s/GPU
(catalog/reference/published_throughput.yaml) and every llm-foundry / IBM run with an MFU
(catalog/reference/throughput_runs.yaml, converted through tokens/s/GPU). The table ships
generated (DATA below); a solved MFU past it is refused (jobs/training/timing.py).
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
    gpu: str = ""
    """The catalog accelerator the run used."""
    source: str = ""
    """The row's citation (the paper, table or file it was read from)."""


DATA = "best_published_mfu.json"
"""catalog/reference/best_published_mfu.json: the table below, generated from the two YAML files
by ``python -m gpuplan.jobs.validation.mfu_ceiling`` (tests/test_newcomer.py regenerates it and
compares), so an answer reads a 2 KB JSON file (~1 ms) instead of parsing 1.1 MB of YAML in pure
Python (~1.4 s: the whole of `gpuplan plan`'s start-up beyond the search)."""
SOURCES = ("catalog/reference/published_throughput.yaml", "catalog/reference/throughput_runs.yaml")


def compute_best_published_mfu() -> dict[tuple[str, bool, str], PublishedMfu]:
    """(hardware class, MoE, 'bf16'|'fp8'|'fp4') -> the highest published MFU (gpuplan's
    definition), computed from the reference YAML (slow: parses both files)."""
    from gpuplan.catalog import load_accelerator
    from gpuplan.core.time.step import model_flops_per_token
    from gpuplan.jobs.validation.published_throughput import PRECISION, published_throughput_rows
    from gpuplan.jobs.validation.throughput import run_spec, throughput_reference

    best: dict[tuple[str, bool, str], PublishedMfu] = {}

    def add(run, dtype, tokens_per_gpu_s):
        model = run["model"]
        spec = run_spec(model)
        gpu = load_accelerator(run["gpu"])
        mfu = tokens_per_gpu_s * model_flops_per_token(spec, model["seq_len"]) / gpu.peak(dtype)
        key = (hardware_class(gpu.id), spec.moe is not None, dtype)
        if key not in best or mfu > best[key].mfu:
            best[key] = PublishedMfu(run["id"], mfu, gpu.id, str(run.get("source", "")))

    for run in published_throughput_rows():
        dtype = PRECISION.get(run.get("precision"))
        tps = run["measured"].get("tokens_per_s_per_gpu")
        model = run["model"]
        if dtype and tps and (model.get("catalog") or model.get("vocab")):
            add(run, dtype, tps)
    for run in throughput_reference()["runs"]:
        tps = run["measured"].get("tokens_per_s_per_gpu")
        if tps:
            add(run, "fp8" if run.get("precision") == "fp8" else "bf16", tps)
    return best


def table_json(best: dict[tuple[str, bool, str], PublishedMfu]) -> str:
    """The shipped file's text for ``best`` (sorted, rounded to 12 digits: stable across runs)."""
    import json

    rows = [{"hardware": k[0], "moe": k[1], "dtype": k[2], "mfu": round(v.mfu, 12), "run": v.run, "gpu": v.gpu,
             "source": v.source} for k, v in sorted(best.items())]
    head = {"generated_by": "python -m gpuplan.jobs.validation.mfu_ceiling", "from": list(SOURCES),
            "definition": "tokens/s/GPU x core.time.step.model_flops_per_token / dense peak of the run's precision",
            "best": rows}
    return json.dumps(head, indent=1, ensure_ascii=False) + "\n"


@lru_cache(maxsize=1)
def best_published_mfu() -> dict[tuple[str, bool, str], PublishedMfu]:
    """(hardware class, MoE, 'bf16'|'fp8'|'fp4') -> the highest published MFU, read from the
    generated JSON (DATA)."""
    import json

    from gpuplan.catalog.paths import CATALOG  # by path: importlib.resources' first call imports zipfile & co (~5 ms)

    data = json.loads((CATALOG / "reference" / DATA).read_text("utf-8"))
    return {(r["hardware"], bool(r["moe"]), r["dtype"]): PublishedMfu(r["run"], float(r["mfu"]), r["gpu"], r["source"])
            for r in data["best"]}


def ceiling(gpu_id: str, moe: bool, dtype: str) -> PublishedMfu | None:
    """The best published MFU of the class of ``gpu_id`` (None when nothing is published). With no
    BF16 run of the class, an FP8 run's throughput bounds BF16 from above (its MFU is of the FP8
    peak; in BF16-peak terms it is that x fp8 / bf16 peak)."""
    table = best_published_mfu()
    best = table.get((hardware_class(gpu_id), moe, dtype))
    if best is None and dtype == "bf16" and (hardware_class(gpu_id), moe, "fp8") in table:
        from gpuplan.catalog import load_accelerator

        gpu = load_accelerator(gpu_id)
        fp8 = table[(hardware_class(gpu_id), moe, "fp8")]
        best = PublishedMfu(fp8.run + " (FP8, in BF16-peak terms)", fp8.mfu * gpu.peak("fp8") / gpu.peak("bf16"),
                            fp8.gpu, fp8.source)
    return best


def ceiling_note(gpu_id: str, moe: bool, dtype: str, mfu: float, band: float) -> str | None:
    """A warning when ``mfu`` beats the best published MFU of its class by more than ``band``."""
    best = ceiling(gpu_id, moe, dtype)
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

    above = ceiling_note(gpu_id, spec.moe is not None, dtype, mfu, band)
    return tuple(n for n in (above, track_record_note(spec, band, above_ceiling=above is not None)) if n)


if __name__ == "__main__":  # regenerate the shipped table from the reference YAML
    from importlib import resources

    target = resources.files("gpuplan.catalog") / "reference" / DATA
    text = table_json(compute_best_published_mfu())
    with open(str(target), "w", encoding="utf-8") as out:
        out.write(text)
    print(f"wrote {target} ({len(text):,} bytes)")
