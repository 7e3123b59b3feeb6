"""Serving estimate: the Python API behind ``gpuplan infer``.

``estimate_inference(InferenceInputs(...))`` returns a Report: weights by format, the KV cache
per token and per sequence, runtime memory and the KV budget per GPU; how many sequences fit at
a context and how long a context fits at a batch; TTFT, time per output token, throughput vs
batch and cost per million tokens (roofline with efficiency factors); the GPU memory the
article's rule asks for; and the catalog configurations (GPU type x TP) that serve the load,
smallest and cheapest first. Formulas: core/serving/ (memory.py, roofline.py, kv_cache.py).
"""

from __future__ import annotations

from gpuplan.core.serving import engines as E
from gpuplan.core.serving import outside_layers as OL
from gpuplan.core.serving import memory as M
from gpuplan.core.serving import roofline as R
from gpuplan.core.serving import weights as W
from gpuplan.core.serving import kv_cache as K
from gpuplan.core.units import NO_PRICE_TEXT, format_bytes, format_usd, plural
from gpuplan.jobs.inference.alternatives import instead_section, search_section, search_table
from gpuplan.jobs.inference.assumptions import assumptions
from gpuplan.jobs.inference.memory_report import (engine_log_section, gb_text, memory_section, slots_fill_it,
                                                   weights_added)
from gpuplan.jobs.inference.resolve import Plan, resolve_plan
from gpuplan.jobs.inference.schema import InferenceInputs
from gpuplan.jobs.inference.serving import Serving, evaluate, price_for, search_configurations
from gpuplan.jobs.inference.sizing_text import launch_said_once
from gpuplan.jobs.inference import step_lines as SL
from gpuplan.report.model import Line, Report, Section, Table
from gpuplan.schema.base import job_inputs


def estimate_inference(inputs: InferenceInputs) -> Report:
    """Serving memory, capacity, speed and cost; raises InputError on impossible requests."""
    inputs = job_inputs(inputs, InferenceInputs)
    plan = resolve_plan(inputs)
    serving = evaluate(plan, plan.gpu, inputs.tp_degree, inputs.pp_degree, inputs.batch)
    rows = search_configurations(plan, inputs.batch) if inputs.search else []
    report = build_report(inputs, plan, serving, rows)
    if inputs.rps is None:
        return report
    from dataclasses import replace

    from gpuplan.core.serving.load import LoadTarget
    from gpuplan.jobs.inference import sizing

    target = LoadTarget(inputs.ttft_p99 or float("inf"), inputs.tpot or float("inf"), inputs.rps)
    steps = sizing.replica_steps_by_gpu(plan)  # timed once for the colocated and the disaggregated search
    configs = sizing.size_for_target(plan, target, inputs.price, timed=steps, cheapest_per_type=True)
    asked = plan.gpu.id if "gpu" in inputs.given else None
    sections = [sizing.sizing_section(plan, target, configs, asked)]
    options = sizing.disaggregated_by_gpu(plan, target, inputs.price, timed=steps) if inputs.disaggregate else {}
    if not configs and not options:  # no configuration meets it: one line naming the target (inputs_target)
        from gpuplan.jobs.inference.inputs_target import check_target_met

        check_target_met(inputs, plan, target, steps)
    if inputs.disaggregate:
        sections.insert(0, sizing.disaggregated_section(plan, target, options, configs, asked))
    title = f"Sizing {plan.spec.name} for {inputs.rps:g} requests/s"
    from gpuplan.jobs.inference.sizing_md1 import md1_told  # M/D/1 beside a TTFT-bound answer (docs/inference.md §5b)
    from gpuplan.jobs.inference.sizing_text import sizing_table

    headline = tuple(line.key for section in sections for line in section.lines)  # not the M/D/1 line
    md1_lines, md1_notes = md1_told(plan, target, sizing.chosen_config(configs, asked))
    sections[-1] = replace(sections[-1], lines=(*sections[-1].lines, *md1_lines))  # the colocated sizing's
    return replace(report, title=title, sections=launch_said_once((*sections, *report.sections)),
                   notes=(*report.notes, *md1_notes), tables=(sizing_table(configs), *report.tables), headline=headline,
                   summary_table="Configurations meeting the target (cheapest TP per GPU type)")


# ----------------------------------------------------------------------------- report
GB = 1e9


def _gb(value: float) -> str:
    return f"{value / GB:,.2f} GB ({format_bytes(value)})"


def _range_line(key: str, label: str, steps, formula: str) -> Line:
    expected, slow, fast = (s.total for s in steps)
    text = f"{expected * 1e3:,.1f} ms"  # the fast / slow ends are the line's range (printed beside it)
    return Line(key, label, expected, "s", text, formula, low=fast, high=slow)


def build_report(inputs: InferenceInputs, plan: Plan, serving: Serving, rows: list) -> Report:
    spec, gpu, fmt = plan.spec, plan.gpu, plan.setup.fmt
    n = serving.gpus
    fits = serving.max_sequences >= inputs.batch
    sections = [_weights_section(plan, serving), _kv_section(plan, serving, inputs.batch),
                memory_section(plan, serving.memory, inputs.batch, serving.layout.bytes_per_sequence(plan.context), fits),
                _capacity_section(plan, serving, inputs.batch),
                engine_log_section(plan, serving.memory, serving.kv_tokens, serving.tp, serving.pp),
                _article_section(plan, inputs.batch),
                _speed_section(plan, serving, inputs) if fits else instead_section(plan, serving, inputs)]
    # no speed or cost for a setup that does not hold the load: the curve stops at what fits
    tables = [_curve_table(plan, serving, inputs)] if serving.max_sequences >= 1 else []
    if inputs.search:
        tables.append(search_table(plan, rows, inputs))
        sections.append(search_section(rows, inputs))
    report_inputs = (
        Line("model", "model", spec.name),
        Line("gpu", "accelerator", gpu.id, text=f"{gpu.name} ({format_bytes(gpu.memory_bytes)})"),
        Line("layout", "layout", f"tp {serving.tp} x pp {serving.pp}",
             text=f"tp {serving.tp} x pp {serving.pp} = {n} GPUs"),
        Line("context", "context per sequence", plan.context, "tokens",
             f"{plan.context:,} tokens ({plan.prompt:,} prompt + {plan.output:,} output)"),
        Line("batch", "concurrent sequences", inputs.batch, "sequences"),
        Line("quantization", "weight format", fmt.name, text=f"{fmt.name} ({plan.fmt_origin})"),
        Line("kv_dtype", "KV-cache dtype", plan.kv_dtype),
    )
    title = f"Serving {spec.name} on {n} x {gpu.name}"
    return Report("infer", title, report_inputs, assumptions(plan, inputs, serving), launch_said_once(sections),
                  _notes(plan, serving, inputs), tuple(tables), headline=INFER_HEADLINE,
                  key_assumptions=("quantization", "bandwidth_efficiency", "gpu_memory_utilization"))


# The answer-first view of `gpuplan infer`: memory and capacity, the article's GPU-size check,
# latency, throughput and cost, and the configurations that serve the load.
INFER_HEADLINE = ("weights_per_gpu", "kv_bytes_per_token", "kv_budget", "fits", "max_sequences", "max_context",
                  "recommended_gpu_memory_gb", "ttft", "tpot", "tokens_per_s", "cost_per_million_tokens",
                  "instead_gpus", "instead_batch", "instead_context", "smallest_config", "cheapest_config")


def _weights_section(plan: Plan, serving: Serving) -> Section:
    fmt, groups = plan.setup.fmt, plan.groups
    total = W.weight_bytes_total(groups, fmt)
    params = groups.dense_linear + groups.routed + groups.embedding + groups.lm_head + groups.norms + groups.router
    return Section(f"Weights ({fmt.name})", (
        Line("params", "parameters", params, "params", f"{params / 1e9:,.2f}B"),
        Line("bits_per_weight", "bits per quantized weight", fmt.bits_per_weight, "bits",
             f"{fmt.bits_per_weight:.4g}", fmt.source),
        Line("weights_total", "weights, whole model", total, "bytes", _gb(total),
             "layer weights x bits/8 + embeddings, LM head, norms in 16-bit" if fmt.keep_16bit
             else "parameters x bytes"),
        Line("weights_per_gpu", "weights per GPU", serving.memory.weights, "bytes", _gb(serving.memory.weights),
             f"layers / (tp {serving.tp}) on ceil(L/pp) layers + embedding / LM head / tp"
             + weights_added(serving.memory)),
    ))


def _kv_section(plan: Plan, serving: Serving, batch: int) -> Section:
    spec, layout = plan.spec, serving.layout
    whole = K.kv_layout(spec, plan.setup.kv_bytes, 1, 1, 1).bytes_per_token
    per_seq = layout.bytes_per_sequence(plan.context)
    attn = spec.attention
    shape = (f"MLA: ({attn.kv_lora_rank} + {attn.qk_rope_head_dim}) x {spec.num_layers} layers x "
             f"{plan.setup.kv_bytes:g} B" if attn.is_mla else
             f"2 x {spec.num_layers} layers x {attn.num_kv_heads} KV heads x {attn.head_dim} x "
             f"{plan.setup.kv_bytes:g} B")
    lines = [
        Line("kv_bytes_per_token", f"KV cache per token ({attn.kind.upper()}, whole model)", whole, "bytes",
             f"{whole / 1024:,.1f} KiB", shape),
        Line("kv_bytes_per_token_gpu", "KV cache per token per GPU", layout.bytes_per_token, "bytes",
             f"{layout.bytes_per_token / 1024:,.1f} KiB", f"tp {serving.tp}, pp {serving.pp}"),
        Line("kv_bytes_per_sequence", f"KV cache per sequence at {plan.context:,} tokens, per GPU", per_seq,
             "bytes", _gb(per_seq), f"rounded up to blocks of {layout.block_size} tokens"),
        Line("kv_bytes_batch", f"KV cache for {plural(batch, 'sequence')}, per GPU", batch * per_seq, "bytes",
             _gb(batch * per_seq)),
    ]
    if layout.window:
        lines.append(Line("sliding_window", "sliding-window layers keep", layout.window, "tokens",
                          f"{layout.window:,} tokens ({spec.num_sliding_layers} of {spec.num_layers} layers)"))
    return Section("KV cache", tuple(lines))


def _capacity_section(plan: Plan, serving: Serving, batch: int) -> Section:
    ctx = serving.max_context
    ctx_text = "unbounded (every layer slides)" if ctx == float("inf") else f"{ctx:,.0f} tokens"
    if ctx != float("inf") and ctx > plan.spec.max_position_embeddings:
        ctx_text += f" (memory only; the model's maximum is {plan.spec.max_position_embeddings:,})"
    return Section(f"Capacity on {plural(serving.gpus, 'GPU')}", (
        Line("max_sequences", f"concurrent sequences at {plan.context:,} tokens", serving.max_sequences,
             "sequences", f"{serving.max_sequences:,}", "floor(KV budget / KV per sequence)"),
        Line("max_context", f"longest context for {plural(batch, 'sequence')}", None if ctx == float("inf") else ctx,
             "tokens", ctx_text,
             "KV budget / batch, inverted through the block-rounded cache size"),
        Line("kv_tokens", "KV-cache capacity", serving.kv_tokens, "tokens", f"{serving.kv_tokens:,} tokens",
             "whole blocks x block size (vLLM's 'GPU KV cache size')"),
    ))


def memory_classes(dtype: str, engine: str = E.DEFAULT_ENGINE) -> list[tuple[float, float]]:
    """(marketed GB, device bytes of its smallest part) of the catalog accelerators that compute in ``dtype`` and run
    ``engine`` (TensorRT-LLM: NVIDIA only; no TPU: tpu_serving), one a class, smallest first: a class holds a need
    when its smallest part does ('>= 24 GB' held on a 24,564 MiB RTX 4090 and not on a 23,028 MiB A10)."""
    from gpuplan.catalog import hardware_entries
    from gpuplan.jobs.inference.tpu_serving import engine_modelled_on
    smallest: dict[float, float] = {}
    for e in hardware_entries().values():
        if (e.get("peak_tflops") or {}).get(dtype) and engine_modelled_on(engine, str(e.get("vendor") or "")):
            gb, size = float(e["memory_gb"]), float(e.get("memory_bytes") or e["memory_gb"] * GB)
            smallest[gb] = min(size, smallest.get(gb, size))
    return sorted(smallest.items())


def _article_section(plan: Plan, batch: int) -> Section:
    """The article's check on one GPU: weights + KV cache (+ runtime) -> the memory to recommend."""
    one = plan.setup
    memory = M.serving_memory(plan.spec, plan.groups, 0.0, one, 1, 1)
    kv = batch * K.kv_layout(plan.spec, one.kv_bytes, 1, 1, one.block_size).bytes_per_sequence(plan.context)
    # a proposer's cache grows with the target's, token for token, from the same pool (M.draft_kv_share; review R1 M2:
    # eagle at batch 48 x 4K recommended 48 GB where an L40S held 47): every rule below needs both caches
    kv_all = kv / (1 - M.draft_kv_share(plan.spec, one.speculation, one.kv_bytes, 1, 1))
    runtime = one.runtime
    classes = memory_classes(one.fmt.compute_dtype, runtime.engine)  # a class holds it when its smallest part does
    if runtime.engine == "vllm":
        need = (memory.weights + kv_all + memory.activations + memory.fixed) / runtime.utilization()
        need += runtime.driver_reserved
        fitting = [gb for gb, size in classes if size >= need]
        formula = "(weights + KV + activations + runtime) / utilization + driver reserve"
    else:
        need, fitting, formula = _own_rule_need(plan, memory, kv, kv_all, classes)
    rec = fitting[0] if fitting else None
    return Section("GPU memory to serve it on one GPU (the article's check)", (
        Line("weights_plus_kv", "weights + KV cache", memory.weights + kv_all, "bytes",
             f"{memory.weights / GB:,.1f} GB weights + {kv_all / GB:,.2f} GB KV cache"
             + (f" (the proposer's {(kv_all - kv) / GB:,.2f} GB in it)" if kv_all > kv else "")),
        Line("gpu_memory_needed", "device memory needed", need, "bytes", _gb(need),
             formula),
        Line("recommended_gpu_memory_gb", "recommended GPU memory", rec, "GB",
             f">= {rec:g} GB" if rec else "more than any single catalog GPU: use tensor parallelism",
             "smallest catalog memory size whose every part holds it"),
    ))


def _own_rule_need(plan: Plan, memory: M.Memory, kv: float, kv_all: float, classes: list[tuple[float, float]]
                   ) -> tuple[float, list[float], str]:
    """The article's check under SGLang's or TensorRT-LLM's own rule (core.serving.memory), not vLLM's
    gpu_memory_utilization, which it took for every engine: (device bytes needed, the memory classes (GB) whose
    split leaves ``kv`` bytes of KV on one GPU, the formula). TensorRT-LLM: KV = f x (visible - weights - activations
    - runtime), so weights + activations + runtime + KV / f + the driver reserve. SGLang: KV = fraction x (visible -
    context - communicators) - weights, its default fraction read at each memory size, so (weights + KV) / fraction
    + runtime + the driver reserve, at the fraction of the size recommended (the largest when none holds it).
    `infer qwen2.5-14b --engine sglang --batch 8 --context 8192` recommended 48 GB, where an L40S holds 6 of the 8
    (helper MS s24). ``kv``: the target's KV of the load, which a class's kv_budget (the target's share) must hold;
    ``kv_all``: with the proposer's cache, what the device must hold. ``memory``: the caller's serving_memory at no
    device size (_article_section's), the one read where no memory class computes the dtype."""
    one = plan.setup
    fits = [(gb, M.serving_memory(plan.spec, plan.groups, size, one, 1, 1)) for gb, size in classes]
    fitting = [gb for gb, m in fits if m.kv_budget >= kv]
    reserve = one.runtime.driver_reserved
    if one.runtime.engine == "trtllm":
        m = fits[0][1] if fits else memory
        need = m.weights + m.activations + m.fixed + kv_all / m.fraction + reserve
        return need, fitting, "weights + activations + runtime + KV / free_gpu_memory_fraction + driver reserve"
    at = next(m for gb, m in fits if gb == fitting[0]) if fitting else (fits[-1][1] if fits else memory)
    need = (at.weights + kv_all) / at.fraction + at.fixed + reserve
    return need, fitting, (f"(weights + KV) / mem_fraction_static ({at.fraction:.3f} at that size) + CUDA context + "
                           "communicators + driver reserve")


def _speed_section(plan: Plan, serving: Serving, inputs: InferenceInputs) -> Section:
    tpot, ttft, batch = serving.tpot[0], serving.ttft, inputs.batch
    rate = batch / tpot.total
    price, source = price_for(plan.gpu.id, inputs.price)
    cost = R.cost_per_million_tokens(price, serving.gpus, rate) if price is not None else None
    comm = tpot.comm_s
    lines = [
        _range_line("ttft", f"time to first token ({plan.prompt:,}-token prompt"  # what shortens it, named
                    + (f", {plan.setup.prefix_hit:.0%} of it cached" if plan.setup.prefix_hit else "") + ")", ttft,
                    "GEMMs max(FLOPs / (tp x peak x eff), weights / (bandwidth x eff)) + exposed share of the "
                    "shorter + flash attention + elementwise + small-kernel floor + host + all-reduces; "
                    + SL.bound_label(ttft[0])),
        _range_line("tpot", f"time per output token (batch {batch}, {plan.decode_context:,.0f} cached tokens"
                    + (f", {plan.setup.speculation.method} k = {plan.setup.speculation.tokens}"
                       if plan.setup.speculation is not None else "") + ")",
                    serving.tpot, "GEMMs max(weights / (bandwidth x eff), FLOPs / (peak x eff)) + exposed share "
                    "+ batch x KV read + elementwise + small-kernel floor + host + all-reduces; "
                    + SL.bound_label(tpot)),
        Line("ttft_parts", "time to first token (by part)", ttft[0].verify_s, "s", SL.parts(ttft[0]),
             "kernels in sequence (core/serving/roofline.py step_time; host: the server hold, the scheduler and an "
             "eager forward's issue past its GPU work)"),
        *SL.prefill_issue_lines(plan, ttft[0]), *SL.request_path_lines(plan),
        Line("tpot_parts", "time per output token (by part)", tpot.verify_s, "s", SL.parts(tpot),
             "kernels in sequence (core/serving/roofline.py step_time)"),
        SL.kernel_floor_line(plan, serving.tp, serving.pp, batch, tpot),
        Line("tokens_per_s_sequence", "output tokens/s per sequence", 1 / tpot.total, "tokens/s",
             f"{1 / tpot.total:,.1f}", low=1 / serving.tpot[1].total, high=1 / serving.tpot[2].total),
        Line("tokens_per_s", "output tokens/s, " + ("1 sequence" if batch == 1 else f"all {plural(batch, 'sequence')}"), rate, "tokens/s", f"{rate:,.0f}",
             low=batch / serving.tpot[1].total, high=batch / serving.tpot[2].total),
        Line("allreduce_per_token", "TP all-reduce time per output token", comm, "s",
             f"{comm * 1e3:,.2f} ms" if serving.gpus > 1 else "none (1 GPU)",
             f"{R.forward_allreduces(plan.spec, plan.setup.runtime.release)} all-reduces of batch x hidden x 2 B over "
             f"{(plan.gpu.scale_up_bandwidth or 0) / GB:,.0f} GB/s (the release's kernel or NCCL by size)"
             + OL.comm_note(plan.setup.runtime.release, serving.tp) if serving.gpus > 1 else ""),
        *SL.speculation_lines(plan, tpot),
        Line("request_latency", f"latency of one request ({plan.prompt:,} in, {plan.output:,} out)",
             ttft[0].total + (plan.output - 1) * tpot.total, "s",
             f"{ttft[0].total + (plan.output - 1) * tpot.total:,.2f} s", "TTFT + (output - 1) x TPOT"),
    ]
    if cost is None:
        lines.append(Line("cost_per_million_tokens", "cost per million output tokens", None, "USD",
                          NO_PRICE_TEXT, source))  # one spelling with plan / budget / sizing (w16 R3 N6)
    else:
        lines.append(Line("cost_per_million_tokens", "cost per million output tokens", cost, "USD",
                          f"{format_usd(cost, 3)} (at {format_usd(price, 2)}/GPU-hour x {serving.gpus})", source))
    return Section("Speed (roofline; range = efficiency range)", tuple(lines))


def _curve_table(plan: Plan, serving: Serving, inputs: InferenceInputs) -> Table:
    gpu, price = plan.gpu, price_for(plan.gpu.id, inputs.price)[0]
    kv_seq = serving.layout.bytes_per_sequence(plan.decode_context)
    on_gpu = R.gpu_keywords(gpu, plan.setup)
    rows = []
    for b in R.batch_sizes(max(serving.max_sequences, 1)):
        step = R.decode_step(plan.spec, plan.groups, plan.setup, kv_seq, tp=serving.tp, pp=serving.pp, batch=b,
                             context=plan.decode_context, **on_gpu)
        rate = b / step.total
        cost = f"{R.cost_per_million_tokens(price, serving.gpus, rate):,.3f}" if price is not None else "n/a"
        rows.append((b, f"{step.total * 1e3:,.2f}", f"{rate:,.0f}", f"{rate / serving.gpus:,.0f}", step.bound, cost))
    note = "" if serving.max_sequences >= 1 else " (nothing fits: shown for batch 1)"
    return Table(f"throughput vs batch at {plan.decode_context:,.0f} cached tokens{note}",
                 ("batch", "TPOT ms", "tokens/s", "tokens/s per GPU", "bound", "USD per 1M tokens"), tuple(rows))


def _notes(plan: Plan, serving: Serving, inputs: InferenceInputs) -> tuple[str, ...]:
    notes = list(plan.notes) + list(plan.spec.notes)
    if inputs.rps is None and serving.memory.kv_budget <= 0:  # with --rps the sizing is the answer, not 1 GPU
        m = serving.memory  # hostile wave 23: 4,096 slots of rank 512 were told only the first three remedies
        slots = f", or fewer or lower-rank LoRA slots (--max-loras, --max-lora-rank: {gb_text(m.lora_slots)} GB a GPU)"
        notes.append("no memory left for the KV cache on this layout: use more GPUs (tp), a smaller format "
                     "(int4, fp8) or a larger GPU" + (slots if slots_fill_it(m) else ""))  # where the slots fill it
    elif inputs.rps is None and serving.max_sequences < inputs.batch:
        notes.append(f"only {plural(serving.max_sequences, 'sequence')} of {plan.context:,} tokens fit, not {inputs.batch}: "
                     "the engine would queue or preempt the rest")
    if serving.pp > 1:
        notes.append("pipeline parallel: per-token latency crosses every stage; throughput can be up to pp x higher "
                     "when pp batches are in flight (not modelled)")
    if plan.spec.moe is not None:
        notes.append("MoE decode reads only the experts the batch routes to: 1 - (1 - k/E)^batch of them "
                     "(uniform routing assumed)")
    notes.append("speeds are a roofline with efficiency factors, not a measurement; calibrate with "
                 "--bandwidth-efficiency / --compute-efficiency from one measured run")
    return tuple(notes)
