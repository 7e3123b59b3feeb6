"""The Report for a trial measurement (what `gpuplan profile` prints)."""

from __future__ import annotations

from gpuplan.core.units import format_bytes
from gpuplan.report.model import Assumption, Line, Report, Section


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.1%}"


def _measured(res: dict, s: dict) -> Section:
    mem, step = res["memory"], res["step_time_s"]
    spread = f" +- {step['stdev']:.3g}" if step.get("stdev") is not None else ""
    reserved = mem.get("peak_reserved_bytes")
    measured = Section("Measured", (
        Line("step_time_s", "step time (median)", step["median"], "s", f"{step['median']:.4g} s{spread}",
             f"{s['steps']} timed steps after {s['warmup']} warm-up steps"),
        Line("tokens_per_s", "throughput", res["tokens_per_s"], "tokens/s", f"{res['tokens_per_s']:,.0f} tokens/s",
             f"{res['tokens_per_step']:,} tokens per step"),
        Line("achieved_tflops", "achieved TFLOP/s per device", res["achieved_tflops_per_device"], "TFLOP/s",
             f"{res['achieved_tflops_per_device']:.4g}", "model FLOPs / step time / devices"),
        Line("mfu", "MFU", res["mfu"], "fraction", _pct(res["mfu"]), res["mfu_note"]),
        Line("hfu", "HFU", res["hfu"], "fraction", _pct(res["hfu"]), "hardware FLOPs (with recompute)"),
        Line("peak_allocated", "peak memory, allocated", mem["peak_allocated_bytes"], "bytes",
             format_bytes(mem["peak_allocated_bytes"]), mem.get("summary", mem["method"])),
        Line("peak_reserved", "peak memory, reserved", reserved, "bytes",
             "n/a (CPU)" if reserved is None else format_bytes(reserved)),
        Line("loss", "loss first -> last", res["loss"]["last"], "",
             f"{res['loss']['first']:.4g} -> {res['loss']['last']:.4g}", "synthetic tokens: a sanity check only"),
    ))
    return measured


def _estimated(est: dict) -> Section:
    mem_err = est.get("memory_error")
    step_err = est.get("step_error")
    estimate = Section("gpuplan's estimate for the same run", (
        Line("est_memory", "allocated peak, estimated", est["memory_peak_allocated_bytes"], "bytes",
             format_bytes(est["memory_peak_allocated_bytes"]) + ("" if mem_err is None else f" ({mem_err:+.2%})"),
             f"gpuplan.core.memory.training, recipe '{est['memory_recipe']}'"),
        Line("est_step_time", "step time, estimated", est.get("step_time_s"), "s",
             "n/a" if est.get("step_time_s") is None else f"{est['step_time_s']:.4g} s ({step_err:+.1%})",
             est.get("step_note") or f"gpuplan.core.time.step on {est.get('step_device')}"
             + (" (CPU stand-in: measured GEMM and copy rates)" if est.get("step_device") == "cpu" else "")),
    ))
    return estimate


def _precision_text(precision: str, env: dict) -> str:
    """The precision that ran and, where gpuplan chose fp32 for it or a stated bf16 is emulated, why (one line;
    environment.precision_choice, gpuplan.profile.cpu_precision)."""
    choice = env.get("precision_choice") or {}
    reason = choice.get("reason") or ""
    why = choice.get("warning") or (reason if reason.startswith("bf16 is emulated") else "")
    return f"{precision} ({why})" if why else precision


def trial_report(data: dict, written_to: str | None) -> Report:
    env, cfg, res = data["environment"], data["config"], data["results"]
    s = cfg["settings"]
    measured, estimate = _measured(res, s), _estimated(res["estimate"])
    summary = cfg["summary"]
    precision = _precision_text(s["precision"], env)  # the line's text and, where it says why, the first note
    inputs = (
        Line("model", "model", cfg["model"], text=f"{cfg['model']} ({summary['num_hidden_layers']} of "
             f"{cfg['config_num_layers']} layers, {summary['num_params']:,} parameters)"),
        Line("shape", "micro-batch x sequence", s["micro_batch"], text=f"{s['micro_batch']} x {s['seq_len']}"),
        Line("precision", "precision", s["precision"], text=precision),
        Line("recompute", "recompute", s["recompute"]),
        Line("optimizer", "optimizer", s["optimizer"]),
        Line("device", "device", env["device_name"],
             text=f"{env['world_size']} x {env['device_name']} ({env['device_type']}"
                  + (f", {env['catalog_gpu']}" if env.get("catalog_gpu") else "") + f"), {s['parallelism']}"),
        Line("versions", "versions", env["torch"], text=f"torch {env['torch']}, transformers {env['transformers']}, "
                                                         f"python {env['python']}"),
    )
    assumptions = (
        Assumption("flops", "FLOPs per token", f"{res['flops']['model_flops_per_token']:.4g}",
                   res["flops"]["definition"], ""),
        Assumption("peak", "dense peak",
                   "n/a" if env["peak_flops"] is None else f"{env['peak_flops'] / 1e12:.4g} TFLOP/s",
                   env["peak_source"], "--peak-tflops", env["peak_source"] == "--peak-tflops"),
    )
    notes = ([f"precision {precision}"] if precision != s["precision"] else []) + [
             f"measurement written to {written_to}" if written_to else "measurement not written (--out)",
             "several GPUs or nodes: torchrun --nproc-per-node N -m gpuplan profile MODEL ... (FSDP2; "
             "--parallelism ddp)", "next: gpuplan calibrate FILE... --out calibration.json"]
    return Report("profile", f"Trial run: {cfg['model']}", inputs, assumptions, (measured, estimate), tuple(notes),
                  headline=("step_time_s", "tokens_per_s", "achieved_tflops", "mfu", "peak_allocated", "peak_reserved",
                            "est_memory", "est_step_time"))
