"""Trial runs: train a model briefly for real and record step time, throughput, MFU and memory.

    gpuplan profile llama-3.2-1b --layers 4 --seq-len 2048 --out trial.json        # one process
    torchrun --nproc-per-node 8 -m gpuplan profile llama-3.2-1b --out trial.json          # FSDP2

The model is built from a catalog name or a config.json with random weights (nothing is
downloaded); ``--layers`` keeps the width and cuts the depth. Synthetic tokens, N timed steps
after the warm-up steps, on CUDA when present else CPU. Definitions (also in the file):

* step time: wall seconds of forward + loss, backward, optimizer step, zero_grad, per step,
  CUDA-synchronised; in multi-process runs the slowest rank's time per step. Median reported.
* model FLOPs: gpuplan.core.time.step.model_flops_per_token (exact matmul FLOPs incl. LM head,
  attention without causal halving = the PaLM/Megatron MFU convention) x tokens; hardware FLOPs
  add the recomputed forward. MFU/HFU = achieved FLOP/s per device / dense peak of the device
  (hardware catalog, matched by torch.cuda.get_device_name; ``--peak-tflops`` overrides). CPU:
  no catalog peak, MFU null unless ``--peak-tflops`` is given.
* memory: CUDA torch.cuda.max_memory_allocated / max_memory_reserved over the timed steps; CPU
  one more (untimed) step under a MemTracker from torch.distributed._tools on the real tensors
  (allocated tensor bytes, the same accounting as gpuplan measure), largest over ranks.

The measurement file is written by rank 0 only, atomically: an error leaves no file.
"""

from __future__ import annotations

import os
import platform
import resource
import statistics
import time
from dataclasses import asdict
from pathlib import Path

from gpuplan.adapters.files import write_json_atomic
from gpuplan.core.units import format_percent_past
from gpuplan.errors import InputError
from gpuplan.profile.measurement_file import KIND, SCHEMA_VERSION
from gpuplan.profile.trial_plan import (
    TrialSettings,
    check_fits,
    config_with_layers,
    layer_count,
    model_config,
)

FLOPS_DEFINITION = ("gpuplan.core.time.step.model_flops_per_token: exact matmul FLOPs per token (LM head included, "
                    "input embedding a lookup) + attention scores/context without causal halving (PaLM/Megatron "
                    "MFU convention), x3 for forward+backward; hardware FLOPs add recomputation")


class PastDeadline(Exception):
    """A trial stopped between steps at its ``deadline`` (run_trial): nothing written. ``done`` of ``total`` steps
    (warm-up included) ran, the last in ``step_s`` seconds."""

    def __init__(self, done: int, total: int, step_s: float):
        super().__init__(f"{done} of {total} steps")
        self.done, self.total, self.step_s = done, total, step_s


def run_trial(settings: TrialSettings, out: str | Path | None = None, deadline: float | None = None) -> dict:
    """Run the trial in this process (alone, or as one rank of a torchrun job) and return the
    measurement dict; rank 0 writes it to ``out`` (atomically) when given. ``deadline`` (time.perf_counter
    seconds; a sweep's time budget, profile.sweep): PastDeadline once a step ends past it, on every rank alike."""
    settings.validate()
    check_parallelism(settings.parallelism)
    config, model_id = model_config(settings.model)
    full_layers = layer_count(config)
    if settings.layers is not None and settings.layers > full_layers:  # before torch: nothing built yet
        raise InputError("layers", settings.layers, f"at most the model's {full_layers} layers ({model_id}); "
                         "--layers builds fewer layers of the same width, not more")
    measured_config = config_with_layers(config, settings.layers)
    from gpuplan.profile import _trial_runtime as R

    torch, transformers = R.import_backends()
    rt = R.start(torch, settings.device)
    try:
        settings, choice = _precision(rt, settings)
        parallelism = "none" if rt.world_size == 1 else (
            "fsdp2" if settings.parallelism == "auto" else settings.parallelism)
        usable, usable_how = R.device_memory(rt)
        sharing = rt.local_world_size if rt.device_type == "cpu" else 1
        estimate = check_fits(settings, config, model_id, rt.world_size, parallelism, rt.device_type, usable, sharing)
        data = _measure(rt, transformers, settings, measured_config, parallelism, deadline)
        _check_given_peak(settings, data["results"], data["environment"]["peak_dtype"])  # before anything is written
        data["config"].update(model=model_id, model_source=settings.model, config_num_layers=full_layers,
                              hf_config=measured_config)
        data["environment"]["planned_memory"] = {"usable_bytes": usable, "how": usable_how,
                                                 "estimated_peak_bytes_per_rank": estimate}
        data["environment"]["precision_choice"] = asdict(choice)
        data["results"]["estimate"] = _estimate(data)
        if out is not None and rt.rank == 0:
            write_json_atomic(out, data)
        return data
    finally:
        rt.close()


def check_parallelism(parallelism: str) -> None:
    """--parallelism fsdp2 / ddp choose how several ranks share the model; one process (no torchrun: WORLD_SIZE unset
    or 1, _trial_runtime.launcher_ranks) trains it whole and recorded 'parallelism: none' whatever was asked, exit 0
    (wave 21). Refused before anything is built, as --sweep-budget without --sweep is."""
    from gpuplan.profile._trial_runtime import launcher_ranks

    if parallelism != "auto" and launcher_ranks(os.environ)[0] == 1:
        raise InputError("parallelism", parallelism, "shards over several ranks, and this is one process: run "
                         "torchrun --nproc-per-node N -m gpuplan profile ... (N > 1), or leave --parallelism out")


def _precision(rt, settings: TrialSettings):
    """The precision this device runs (unstated bf16 on a CPU without native bf16: fp32); warns on stderr
    where a stated bf16 is emulated."""
    import sys
    from dataclasses import replace

    from gpuplan.profile.cpu_precision import choose_precision, cpu_has_native_bf16

    native = cpu_has_native_bf16(rt.torch) if rt.device_type == "cpu" else None
    choice = choose_precision(settings.precision, settings.precision_stated, rt.device_type, native)
    if choice.warning and rt.rank == 0:
        print(f"warning: {choice.warning}", file=sys.stderr)
    return replace(settings, precision=choice.precision), choice


def _measure(rt, transformers, settings: TrialSettings, hf_config: dict, parallelism: str,
             deadline: float | None = None) -> dict:
    from gpuplan.profile import _trial_runtime as R

    torch = rt.torch
    param_dtype = torch.bfloat16 if settings.precision == "bf16" else torch.float32
    compute_dtype = torch.float32 if settings.precision == "fp32" else torch.bfloat16
    model, text_cfg = R.build_model(rt, transformers, hf_config, settings.attention, param_dtype,
                                    "full" if settings.recompute == "full" else "none", settings.seed)
    model = R.adapt(model, settings.lora_rank, settings.recompute, text_cfg.num_hidden_layers)
    num_params = sum(p.numel() for p in model.parameters())
    model = R.parallelize(rt, model, parallelism, settings.precision)
    optimizer = R.make_optimizer(torch, model, settings.optimizer, settings.optimizer_impl)
    generator = torch.Generator(device="cpu").manual_seed(settings.seed + rt.rank)
    input_ids = torch.randint(0, text_cfg.vocab_size, (settings.micro_batch, settings.seq_len),
                              generator=generator).to(rt.device)

    def cast():
        return R.autocast(rt, settings.precision, parallelism)

    times, losses = [], []
    for i in range(settings.warmup + settings.steps):
        if i == settings.warmup and rt.device_type == "cuda":
            torch.cuda.reset_peak_memory_stats(rt.device)
        rt.sync()
        t0 = time.perf_counter()
        losses.append(R.train_step(model, optimizer, input_ids, cast()))
        rt.sync()
        if i >= settings.warmup:
            times.append(time.perf_counter() - t0)
        total = settings.warmup + settings.steps  # past the deadline with steps left: stop (the last one ends it)
        if deadline is not None and i + 1 < total and R.reduce_max(rt, [float(time.perf_counter() > deadline)])[0]:
            raise PastDeadline(i + 1, total, time.perf_counter() - t0)  # every rank reads one maximum: all stop
    times = R.reduce_max(rt, times)
    memory = _memory(rt, model, optimizer, input_ids, cast, parallelism)
    bench = R.cpu_microbenchmarks(torch, compute_dtype) if rt.device_type == "cpu" else None
    env = _environment(rt, transformers, settings, parallelism, bench)
    return {
        "schema_version": SCHEMA_VERSION, "kind": KIND,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "environment": env,
        "config": {"summary": _summary(text_cfg, num_params),
                   "settings": {**asdict(settings), "parallelism": parallelism, "world_size": rt.world_size,
                                "loop": "out = model(input_ids, labels=input_ids, use_cache=False); "
                                        "out.loss.backward(); optimizer.step(); optimizer.zero_grad(set_to_none=True)",
                                "foreach": settings.optimizer_impl == "foreach"}},
        "results": _results(settings, hf_config, times, losses, memory, env, rt.world_size),
    }


def _memory(rt, model, optimizer, input_ids, cast, parallelism: str) -> dict:
    from gpuplan.profile import _trial_runtime as R

    torch = rt.torch
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
    if rt.device_type == "cuda":
        allocated = R.gather(rt, float(torch.cuda.max_memory_allocated(rt.device)))
        reserved = R.gather(rt, float(torch.cuda.max_memory_reserved(rt.device)))
        return {"method": "torch.cuda.max_memory_allocated / max_memory_reserved over the timed steps "
                          "(peak stats reset after the warm-up); largest rank",
                "summary": "torch.cuda.max_memory_allocated / max_memory_reserved",
                "peak_allocated_bytes": max(allocated), "peak_reserved_bytes": max(reserved),
                "per_rank_peak_allocated_bytes": allocated, "per_rank_peak_reserved_bytes": reserved,
                "process_max_rss_bytes": rss}
    tracked = R.tracked_step(rt, model, optimizer, input_ids, cast, parallelism)
    per_rank = R.gather(rt, float(tracked["peak_bytes"]))
    method = ("MemTracker (torch.distributed._tools, gpuplan.profile._trackers.FastMemTracker) on the real "
              "tensors of one more untimed steady-state step: allocated tensor bytes; largest rank")
    if parallelism == "ddp":
        method += "; DDP's gradient buckets, allocated when the model is wrapped, are not included"
    return {"method": method, "summary": "MemTracker on the real tensors (one extra untimed step)",
            "peak_allocated_bytes": max(per_rank), "peak_reserved_bytes": None,
            "per_rank_peak_allocated_bytes": per_rank, "peak_phase": tracked["peak_phase"],
            "at_peak_rank0": tracked["at_peak"], "process_max_rss_bytes": rss}


def _environment(rt, transformers, settings: TrialSettings, parallelism: str, bench: dict | None) -> dict:
    import gpuplan
    from gpuplan.profile.device_match import catalog_gpu_for

    torch = rt.torch
    dtype = "fp32" if settings.precision == "fp32" else "bf16"
    if rt.device_type == "cuda":
        props = torch.cuda.get_device_properties(rt.device)
        name, memory = torch.cuda.get_device_name(rt.device), float(props.total_memory)
        catalog = catalog_gpu_for(name, memory)
    else:
        name, memory, catalog = _cpu_name(), None, None
    peak, source = _peak(catalog, dtype, settings.peak_tflops, rt.device_type, name)
    return {"python": platform.python_version(), "torch": torch.__version__,
            "transformers": transformers.__version__, "gpuplan": getattr(gpuplan, "__version__", "unknown"),
            "platform": platform.platform(), "device_type": rt.device_type, "device_name": name,
            "device_count": torch.cuda.device_count() if rt.device_type == "cuda" else 1,
            "device_memory_bytes": memory, "world_size": rt.world_size, "backend": rt.backend,
            "parallelism": parallelism, "cpu_threads": torch.get_num_threads(), "catalog_gpu": catalog,
            "peak_flops": peak, "peak_dtype": dtype, "peak_source": source, "cpu_microbenchmarks": bench}


def _check_given_peak(settings: TrialSettings, results: dict, dtype: str) -> None:
    """A --peak-tflops below the model FLOP rate the run computed (MFU above 100%) is refused before the measurement
    is written: a device's dense peak bounds every rate it runs at (wave 19: `--peak-tflops 0.0001` on a CPU
    printed 'MFU 6903.5%' and wrote it into the measurement calibrate reads)."""
    if settings.peak_tflops is None or not (results.get("mfu") or 0.0) > 1.0:
        return
    achieved = results["achieved_tflops_per_device"]
    raise InputError("peak_tflops", settings.peak_tflops, f"is below the {achieved:.3g} TFLOP/s a device this run "
                     f"computed (model FLOPs: MFU {format_percent_past(results['mfu'])}); give the device's dense {dtype} peak, at "
                     f"least {achieved:.3g}, or leave it out")


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


def _peak(catalog: str | None, dtype: str, peak_tflops: float | None, device_type: str, name: str):
    if peak_tflops is not None:
        return peak_tflops * 1e12, "--peak-tflops"
    if catalog is not None:
        from gpuplan.adapters.resolve import resolve_gpu

        gpu = resolve_gpu(catalog)
        if gpu.has_dtype(dtype):
            return gpu.peak(dtype), f"hardware catalog {catalog} (dense {dtype})"
    if device_type == "cpu":
        return None, "CPU: no catalog peak; MFU/HFU null (give --peak-tflops for them)"
    return None, f"{name!r} is not in the hardware catalog; MFU/HFU null (give --peak-tflops)"


def _summary(text_cfg, num_params: int) -> dict:
    keys = ("model_type", "hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads",
            "num_hidden_layers", "vocab_size")
    return {**{k: getattr(text_cfg, k, None) for k in keys}, "num_params": num_params}


def _results(settings: TrialSettings, hf_config: dict, times: list[float], losses: list[float], memory: dict,
             env: dict, world: int) -> dict:
    from gpuplan.adapters.hf_config import model_spec_from_hf_config
    from gpuplan.core.model.flops import flops_6nd, training_flops_per_token
    from gpuplan.core.model.spec import params_for_6nd

    spec = model_spec_from_hf_config(hf_config, name=settings.model)
    per_token = training_flops_per_token(spec, settings.seq_len, "full", settings.recompute)
    median = statistics.median(times)
    tokens = settings.micro_batch * settings.seq_len * world  # data parallel over every rank
    achieved = per_token.model * tokens / median / world
    peak = env["peak_flops"]
    return {
        "step_time_s": {"median": median, "mean": statistics.fmean(times), "min": min(times), "max": max(times),
                        "stdev": statistics.stdev(times) if len(times) > 1 else None, "per_step": times},
        "tokens_per_step": tokens, "tokens_per_s": tokens / median, "tokens_per_s_per_device": tokens / median / world,
        "flops": {"definition": FLOPS_DEFINITION, "model_flops_per_token": per_token.model,
                  "hardware_flops_per_token": per_token.hardware,
                  "six_n_flops_per_token": flops_6nd(params_for_6nd(spec), 1.0)},
        "achieved_tflops_per_device": achieved / 1e12,
        "mfu": None if peak is None else achieved / peak,
        "hfu": None if peak is None else achieved * per_token.hardware / per_token.model / peak,
        "mfu_note": env["peak_source"],
        "loss": {"first": losses[0], "last": losses[-1]},
        "memory": memory,
    }


def _estimate(data: dict) -> dict:
    """gpuplan's own prediction for this run, and the error of each against the measurement."""
    from gpuplan.calibrate import predict as P
    from gpuplan.calibrate.measurement import measurement_from_trial

    m = measurement_from_trial(data, "(this trial)")
    case = P.case_of(m)
    memory = P.memory_parts(case).peak()
    out = {"memory_peak_allocated_bytes": memory, "memory_recipe": m.recipe,
           "memory_error": (memory - m.peak_memory_bytes) / m.peak_memory_bytes if m.peak_memory_bytes else None}
    if case.gpu is not None and not (m.device == "cpu" and m.world_size > 1):
        step = (P.eager_parts(case, world_size=m.world_size) if case.step.eager_ops is not None
                else P.step_parts(case, world_size=m.world_size)).total
        out.update(step_time_s=step, step_device=case.gpu.id, step_error=(step - m.step_time_s) / m.step_time_s)
    else:
        out.update(step_time_s=None, step_device=None, step_error=None,
                   step_note="not predicted: " + ("gloo communication between CPU ranks is not modelled"
                                                  if m.device == "cpu" else "the GPU is not in the hardware catalog"))
    return out
