"""The report sections of the training budget (data loading, checkpoints, failures and goodput,
cost, contingency), their assumptions and notes. The numbers come from gpuplan.jobs.budget.model's
RunFacts / Scenario / Prices (which call the core formulas); this module only lays them out."""

from __future__ import annotations

from dataclasses import fields

from gpuplan.catalog.storage import storage_spec
from gpuplan.core.economics import checkpoint as C
from gpuplan.core.economics import cost as K
from gpuplan.core.economics import io as IO
from gpuplan.core.memory import training as M
from gpuplan.core.economics import reliability as R
from gpuplan.core.units import (NO_PRICE_TEXT, format_duration, format_gpu_time, format_usd, format_usd_per_gpu_hour,
                                plural, signed_percent)
from gpuplan.errors import InputError
from gpuplan.jobs.budget.evaluation import evaluation_assumption
from gpuplan.jobs.budget.model import DEFAULT_GLOBAL_BATCH_TOKENS, BudgetSettings, Prices, RunFacts, Scenario
from gpuplan.report.model import Assumption, Line, Section, Table

# ---- formatting -----------------------------------------------------------------------------

def _gb(n: float) -> str:
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if n >= 0.1 * scale:
            return f"{n / scale:,.2f} {unit}"
    return f"{n / 1e3:,.2f} KB"


def _rate(n: float) -> str:
    return f"{_gb(n)}/s"


def _usd(x: float | None) -> str:
    return NO_PRICE_TEXT if x is None else format_usd(x)


def _gpus(count: float) -> str:
    """'1 GPU', '1,024 GPUs'."""
    return plural(int(round(count)), "GPU")


def _pct(x: float) -> str:
    return f"{x:.1%}"


# ---- sections -------------------------------------------------------------------------------

def token_id_bytes(s: BudgetSettings, vocab_size: int) -> int:
    """Bytes per stored token id: --token-bytes when its ids hold the vocabulary (ids 0 .. vocab - 1
    need vocab <= 256^bytes: 1 B holds 256 ids, 2 B 65,536), else refused; not given, Megatron's rule."""
    if s.token_bytes is None:
        return IO.token_id_bytes(vocab_size)
    if vocab_size > 256 ** s.token_bytes:
        wide = [str(b) for b in (2, 4, 8) if 256 ** b >= vocab_size]
        choices = " or ".join(filter(None, (", ".join(wide[:-1]), wide[-1])))
        raise InputError("token_bytes", s.token_bytes, f"{s.token_bytes}-byte ids hold {256 ** s.token_bytes:,} token "
                         f"ids, the model has {vocab_size:,}: give {choices} (Megatron-LM indexed_dataset.py "
                         f"DType.optimal_dtype stores them in {IO.token_id_bytes(vocab_size)} bytes)")
    return s.token_bytes


def data_section(run: RunFacts, s: BudgetSettings) -> Section:
    id_bytes = token_id_bytes(s, run.spec.vocab_size)
    read_bytes = s.raw_bytes_per_token if s.tokenize_on_the_fly else id_bytes
    store = storage_spec(s.storage)
    read_node = s.storage_read or store.read_per_node()
    need = IO.data_loading(IO.required_tokens_per_s(run.global_batch_tokens, run.step_seconds), run.nodes, read_bytes,
                           read_node, s.tokenize_on_the_fly, s.tokens_per_s_per_core, s.cpu_cores_per_node)
    per_node = need.tokens_per_s_per_node
    cores = IO.cores_needed(per_node, s.tokens_per_s_per_core)
    step_src = "given" if run.step_given else f"global batch / (tokens / wall-clock) = {run.global_batch_tokens:,.0f} " \
        f"/ ({run.tokens:.3g} / {run.wall_seconds:,.0f} s)"
    lines = [
        Line("io_global_batch_tokens", "global batch", run.global_batch_tokens, "tokens", f"{run.global_batch_tokens:,.0f}"),
        Line("io_step_seconds", "step time", run.step_seconds, "s", f"{run.step_seconds:.3g} s", step_src),
        Line("io_tokens_per_s", "required input rate (whole job)", need.tokens_per_s, "tokens/s",
             f"{need.tokens_per_s:,.0f} tokens/s", "global batch / step time"),
        Line("io_nodes", "nodes", run.nodes, "nodes", f"{run.nodes:,}",
             f"{_gpus(run.gpus)} / {run.devices_per_node} per node"),
        Line("io_tokens_per_s_per_node", "input rate per node", per_node, "tokens/s", f"{per_node:,.0f} tokens/s"),
        Line("io_bytes_per_s_pretokenized", "read rate per node, pre-tokenised", per_node * id_bytes, "bytes/s",
             _rate(per_node * id_bytes), f"tokens/s x {id_bytes} B token id ({'uint16' if id_bytes == 2 else 'int32'}; "
             f"vocab {run.spec.vocab_size:,})"),
        Line("io_bytes_per_s_raw", "read rate per node, raw text", per_node * s.raw_bytes_per_token, "bytes/s",
             _rate(per_node * s.raw_bytes_per_token), f"tokens/s x {s.raw_bytes_per_token:g} B of text per token",
             per_node * IO.RAW_BYTES_PER_TOKEN_RANGE[0], per_node * IO.RAW_BYTES_PER_TOKEN_RANGE[1]),
        Line("io_cpu_cores_per_node", "CPU cores per node to tokenise on the fly", cores, "cores",
             f"{cores:.2g} of {s.cpu_cores_per_node}" + ("" if s.tokenize_on_the_fly else " (data is pre-tokenised)"),
             f"tokens/s per node / {s.tokens_per_s_per_core:.3g} tokens/s per core",
             per_node / IO.TOKENS_PER_S_PER_CORE_RANGE[1], per_node / IO.TOKENS_PER_S_PER_CORE_RANGE[0]),
        Line("io_storage_read_per_node", f"storage read per node ({store.kind})", read_node, "bytes/s", _rate(read_node),
             "given" if s.storage_read else "min(node link, shared bandwidth / node) - catalog/storage.toml"),
        Line("io_headroom", "input supply / need", need.headroom, "x", f"{need.headroom:,.0f}x",
             "min(storage / bytes per token, cores x tokens/s per core) / need"),
        Line("io_bound", "what bounds the step", need.bound_by, "", _verdict(need, run)),
    ]
    if need.bound_by != "gpu":
        slow = need.data_bound_step_seconds(run.global_batch_tokens, run.nodes)
        lines.append(Line("io_data_bound_step_seconds", "step time set by data loading", slow, "s", f"{slow:.3g} s",
                          "global batch / (supply per node x nodes)"))
    return Section("Data loading", tuple(lines))


def _verdict(need: IO.DataLoading, run: RunFacts) -> str:
    if need.bound_by == "gpu":
        return f"the GPUs: input supply is {need.headroom:,.0f}x the need"
    slow = need.data_bound_step_seconds(run.global_batch_tokens, run.nodes)
    return f"DATA LOADING ({need.bound_by}): step {slow:.3g} s instead of {run.step_seconds:.3g} s"


def checkpoint_section(run: RunFacts, s: BudgetSettings, sc: Scenario) -> Section:
    size, plan = sc.size, sc.on_demand
    bpp = size.bytes_per_param
    kind = s.checkpoint_storage or s.storage
    stall = plan.checkpoint_cost
    return Section("Checkpoints", (
        Line("ckpt_bytes_weights", "weights", size.weights, "bytes", _gb(size.weights),
             f"{size.weights / size.params:g} B/param x {size.params:.4g} params"),
        Line("ckpt_bytes_master", "fp32 master weights", size.master, "bytes", _gb(size.master),
             f"{size.master / size.params:g} B/param (recipe '{run.recipe}')"),
        Line("ckpt_bytes_optimizer", "optimizer states", size.optimizer, "bytes", _gb(size.optimizer),
             f"{size.optimizer / size.params:g} B/param ({s.optimizer})"),
        Line("ckpt_bytes_total", "checkpoint size", size.total, "bytes", _gb(size.total),
             f"{bpp:g} B/param: weights + master + optimizer (gradients are not saved)"),
        Line("ckpt_writers", "ranks writing a shard", size.writers, "ranks", f"{size.writers:,}",
             (f"DeepSpeed MiCS: the first shard group's {s.checkpoint_writer_group:,} data-parallel ranks x tp x pp "
              "(engine.py@edaa722 L1591-1596)" if s.checkpoint_writer_group else "every rank (ZeRO/FSDP shards states)")
             if run.zero >= 1 else "one replica: tp x pp ranks (DDP)"),
        Line("ckpt_shard_bytes", "shard per writing rank", size.shard, "bytes", _gb(size.shard), "size / writers"),
        Line("ckpt_write_bandwidth", f"write bandwidth ({kind})", sc.write_bandwidth, "bytes/s", _rate(sc.write_bandwidth),
             "min(writer nodes x node link, nodes x shared bandwidth / node)"),
        Line("ckpt_write_seconds", "write time", sc.write_seconds, "s", f"{sc.write_seconds:.3g} s", "size / bandwidth"),
        Line("ckpt_stall_sync_seconds", "GPU stall, synchronous save", sc.stall_sync, "s", f"{sc.stall_sync:.3g} s",
             "= write time"),
        Line("ckpt_stall_async_seconds", "GPU stall, asynchronous save", sc.stall_async, "s", f"{sc.stall_async:.3g} s",
             f"shard / {s.host_copy / 1e9:g} GB/s device-to-host copy"),
        Line("ckpt_stall_seconds", "stall per checkpoint used", stall, "s", f"{stall:.3g} s",
             "asynchronous" if s.async_checkpoint else "synchronous (--async-checkpoint to change)"),
        Line("ckpt_interval_seconds", "checkpoint interval", plan.interval, "s", format_duration(plan.interval),
             "Daly 2006 optimum (see failures)" if plan.optimal else
             "given" if plan.interval <= s.checkpoint_interval * 1.001 else
             f"given {format_duration(s.checkpoint_interval)}, held at the floor (one save per step or write)"),
        Line("ckpt_count", "checkpoints over the run", plan.checkpoints, "checkpoints", f"{plan.checkpoints:,.0f}",
             "failure-free time / interval"),
        Line("ckpt_written_bytes", "bytes written over the run", plan.checkpoints * size.total, "bytes",
             _gb(plan.checkpoints * size.total)),
        Line("ckpt_retention_bytes", f"space to keep the last {s.keep_checkpoints}", C.retention_bytes(
            size.total, s.keep_checkpoints), "bytes", _gb(C.retention_bytes(size.total, s.keep_checkpoints)),
             "kept x size (torchtitan keep_latest_k default 10)"),
    ))


def failure_section(run: RunFacts, sc: Scenario, ranges: dict[str, Scenario],
                     scaled: list[tuple[float, Scenario]]) -> Section:
    plan, lo, hi = sc.on_demand, ranges["low"].on_demand, ranges["high"].on_demand
    lost = K.billed_gpu_hours(run.gpus, plan.wall_seconds - plan.work_seconds)
    plan_gpus, evaluated = sc.gpus, " (training + in-loop evaluation)" if run.eval_seconds else ""  # the T_s it runs
    stuck = [(end, p) for end, p in (("fast", lo), ("slow", hi)) if not _completes(p)]

    def span(get, low: R.FailurePlan, high: R.FailurePlan) -> tuple[float | None, float | None]:
        return (None, None) if stuck else (get(low), get(high))  # an end that never finishes has no number
    wall_text = format_duration(plan.wall_seconds) + "".join(
        f"; at the range's {end} end ({3600 / p.mtbi / run.gpus:.3g} interruptions per GPU-hour, failure-free "
        f"{format_duration(p.work_seconds)}) the run does not complete" for end, p in stuck)
    young = R.young_interval(plan.checkpoint_cost, plan.mtbi)
    lines = [
        Line("fail_mtbi_seconds", "mean time between interruptions", plan.mtbi, "s", format_duration(plan.mtbi),
             f"1 / ({_gpus(run.gpus)} x {3600 / plan.mtbi / run.gpus:.3g} interruptions per GPU-hour)",
             hi.mtbi, lo.mtbi),
        Line("fail_interruptions", "interruptions expected", plan.interruptions, "interruptions",
             f"{plan.interruptions:,.1f} ({86400 / plan.mtbi:.2g} per day)", "expected wall-clock / MTBI",
             *span(lambda p: p.interruptions, lo, hi)),
        Line("fail_interval_young_seconds", "optimal interval, Young", young, "s", format_duration(young),
             f"sqrt(2 x {plan.checkpoint_cost:.3g} s stall x MTBI)"),
        Line("fail_interval_daly_seconds", "optimal interval, Daly", R.daly_interval(plan.checkpoint_cost, plan.mtbi),
             "s", format_duration(R.daly_interval(plan.checkpoint_cost, plan.mtbi)), "Young + higher-order terms - stall"),
        Line("fail_restart_seconds", "restart time per interruption", plan.restart, "s", format_duration(plan.restart),
             "detect + reschedule + reload (+ async write in flight)"),
        Line("fail_lost_work_seconds", "work lost per interruption", plan.lost_work, "s", format_duration(plan.lost_work),
             "(interval + stall) / 2"),
        Line("fail_checkpoint_overhead", "checkpoint stall share", plan.checkpoint_overhead, "fraction",
             _pct(plan.checkpoint_overhead), "stall / interval"),
        Line("fail_goodput", "goodput (effective training time)", plan.goodput, "fraction", _pct(plan.goodput),
             f"failure-free time{evaluated} / expected wall-clock (Daly 2006)", *span(lambda p: p.goodput, hi, lo)),
        Line("fail_wall_seconds", "expected wall-clock with failures", plan.wall_seconds, "s", wall_text,
             f"M e^(R/M) (e^((tau+delta)/M) - 1) T_s / tau; failure-free {format_duration(plan.work_seconds)}"
             + (f" (training {format_duration(plan.work_seconds - run.eval_seconds * run.gpus / plan_gpus)} + in-loop "
                f"evaluation {format_duration(run.eval_seconds * run.gpus / plan_gpus)})" if run.eval_seconds else ""),
             *span(lambda p: p.wall_seconds, lo, hi)),
        Line("fail_gpu_hours_lost", "GPU-hours lost to failures and checkpoints", lost, "GPU-hours", format_gpu_time(lost),
             "GPUs x (expected - failure-free wall-clock)"),
    ]
    for factor, other in scaled:
        if factor in (0.5, 2.0):
            p = other.on_demand
            lines.append(Line(f"fail_wall_seconds_{factor:g}x_gpus", f"wall-clock at {factor:g}x GPUs ({other.gpus:,.0f})",
                              p.wall_seconds, "s", f"{format_duration(p.wall_seconds)} (goodput {_pct(p.goodput)})",
                              f"failure-free {format_duration(p.work_seconds)}; MTBI {format_duration(p.mtbi)}"))
    return Section("Failures and goodput", tuple(lines))


def _completes(plan: R.FailurePlan) -> bool:
    """Whether ``plan``'s run finishes (R.expected_wall_seconds refuses it). The point is tested before
    (jobs.plan.completes); a range end that does not finish is printed so, not refused (wave 10 review M1: `train
    llama-3.1-8b --global-batch-tokens 2.26e10 --gpus 64 --failure-rate 0.01` was refused by its slow end)."""
    try:
        return plan.wall_seconds < float("inf")
    except InputError:
        return False


def cost_section(run: RunFacts, sc: Scenario, p: Prices, scaled: list[tuple[float, Scenario]]) -> Section:
    od, spot = sc.on_demand, sc.spot
    cost_od = None if p.on_demand is None else K.cost_usd(sc.billed_on_demand, p.on_demand)
    cost_spot = None if p.spot is None else K.cost_usd(sc.billed_spot, p.spot)
    lines = [
        Line("cost_price_on_demand", "on-demand price", p.on_demand, "USD/GPU-hour",
             "n/a" if p.on_demand is None else format_usd_per_gpu_hour(p.on_demand), p.on_demand_source,
             p.on_demand_low, p.on_demand_high),
        Line("cost_price_spot", "spot price", p.spot, "USD/GPU-hour", "n/a" if p.spot is None else format_usd_per_gpu_hour(p.spot),
             p.spot_source),
        Line("cost_gpu_hours_on_demand", "GPU-hours billed, on-demand", sc.billed_on_demand, "GPU-hours",
             format_gpu_time(sc.billed_on_demand), f"{_gpus(run.gpus)} x {format_duration(od.wall_seconds)} (failures included)"),
        Line("cost_on_demand_usd", "cost, on-demand", cost_od, "USD", _usd(cost_od), "GPU-hours x price",
             None if cost_od is None else sc.billed_on_demand * p.on_demand_low,
             None if cost_od is None else sc.billed_on_demand * p.on_demand_high),
    ]
    if p.reserved is not None:
        cost_res = K.cost_usd(sc.billed_on_demand, p.reserved)
        lines.append(Line("cost_reserved_usd", "cost, reserved/committed", cost_res, "USD", _usd(cost_res),
                          f"GPU-hours x {format_usd_per_gpu_hour(p.reserved)}: {p.reserved_source}"))
    lines += [
        Line("cost_spot_interruptions_per_day", "spot: interruptions per day", 86400 / spot.mtbi, "per day",
             f"{86400 / spot.mtbi:.3g}", "hardware failures + nodes x reclaims per node-month / 730 h"),
        Line("cost_spot_goodput", "spot: goodput", spot.goodput, "fraction", _pct(spot.goodput),
             "Daly 2006, re-optimised interval"),
        Line("cost_spot_wall_seconds", "spot: expected wall-clock", spot.wall_seconds, "s", format_duration(spot.wall_seconds)),
        Line("cost_spot_gpu_hours", "spot: GPU-hours billed", sc.billed_spot, "GPU-hours", format_gpu_time(sc.billed_spot)),
        Line("cost_spot_usd", "cost, spot", cost_spot, "USD", _usd(cost_spot), "spot GPU-hours x spot price"),
    ]
    if cost_od and cost_spot is not None:
        lines.append(Line("cost_spot_saving", "spot saving vs on-demand", 1 - cost_spot / cost_od, "fraction",
                          _pct(1 - cost_spot / cost_od), "after the extra restarts and lost work"))
    for factor, other in scaled:  # a 0.016% saving printed '(-0.0%)' (units.signed_percent)
        if factor in (0.25, 0.5) and p.on_demand is not None:
            usd = K.cost_usd(other.billed_on_demand, p.on_demand)
            lines.append(Line(f"cost_time_for_space_{factor:g}x", f"time for space: {_gpus(other.gpus)}", usd, "USD",
                              f"{_usd(usd)} in {format_duration(other.on_demand.wall_seconds)} ({signed_percent(usd / cost_od - 1)})",
                              "fewer GPUs for longer: fewer interruptions per day, higher goodput"))
    return Section("Cost (on-demand vs spot)", tuple(lines))


def contingency_section(run: RunFacts, s: BudgetSettings, sc: Scenario, p: Prices) -> Section:
    run_hours = K.billed_gpu_hours(run.gpus, run.wall_seconds + run.eval_seconds)  # in-loop evaluation: its own lines
    modelled = sc.billed_on_demand - run_hours
    def floored(expected_extra: float):  # the shares, never below the failure model's expected hours
        return K.with_expected_floor(K.contingency_lines(run.gpu_hours, s.contingency, expected_extra), run.gpu_hours,
                                     expected_extra)

    parts = floored(modelled)
    spot_parts = floored(sc.billed_spot - run_hours)  # the spot budget's floor: its own expected hours (reclaims in)
    money = (lambda h: "") if p.on_demand is None else (lambda h: ", " + _usd(h * p.on_demand))
    outside = "; outside the loop: in-loop evaluation is its own section's (--contingency-evaluation 0 if that is all)"
    floor = "the failure model's expected - failure-free GPU-hours, less the shares: never below the expected cost"
    lines = [Line(f"contingency_{c.name}", "up to the expected cost" if c.name == K.EXPECTED_FLOOR else c.name,
                  c.gpu_hours, "GPU-hours", f"{format_gpu_time(c.gpu_hours)} GPU-h ({_pct(c.share)}){money(c.gpu_hours)}",
                  floor if c.name == K.EXPECTED_FLOOR else
                  "failure model: expected - failure-free GPU-hours" if c.modelled else f"{c.share:.0%} of compute "
                  f"GPU-hours{outside if c.name == 'evaluation' and run.eval_seconds else ''}") for c in parts]
    total = K.contingency_total(parts)
    budget = run_hours + total
    spot_total = run_hours + K.contingency_total(spot_parts)
    lines += [
        Line("contingency_total", "contingency total", total, "GPU-hours",
             f"{format_gpu_time(total)} GPU-h ({_pct(total / run.gpu_hours)})",
             f"the article's flat {K.ARTICLE_CONTINGENCY:.0%} would be {format_gpu_time(run.gpu_hours * K.ARTICLE_CONTINGENCY)}"),
        Line("budget_gpu_hours", "GPU-hours budget", budget, "GPU-hours", format_gpu_time(budget),
             "run (failure-free" + (", in-loop evaluation included" if run.eval_seconds else "") + ") + contingency lines"),
        Line("budget_usd_on_demand", "budget, on-demand", None if p.on_demand is None else budget * p.on_demand, "USD",
             _usd(None if p.on_demand is None else budget * p.on_demand), "GPU-hours budget x on-demand price"),
        Line("budget_usd_spot", "budget, spot", None if p.spot is None else spot_total * p.spot, "USD",
             _usd(None if p.spot is None else spot_total * p.spot), "same lines with spot failures, x spot price"),
    ]
    return Section("Contingency budget", tuple(lines))


def _sig(days: float) -> float:
    """Days as the table keeps them: to 0.1 from 10 days on (a 1,234.5-day run keeps its digits),
    three significant figures below (a short run's 0.0417 days is not 0)."""
    return round(days, 1) if abs(days) >= 10 else float(f"{days:.3g}")


def scaling_table(run: RunFacts, scaled: list[tuple[float, Scenario]], p: Prices) -> Table:
    rows = []
    for _, sc in scaled:
        plan = sc.on_demand
        rows.append((int(sc.gpus), _sig(plan.work_seconds / 86400), round(plan.mtbi / 3600, 1),
                     round(plan.goodput, 3), _sig(plan.wall_seconds / 86400), round(sc.billed_on_demand),
                     None if p.on_demand is None else round(sc.billed_on_demand * p.on_demand),
                     None if p.spot is None else round(sc.billed_spot * p.spot)))
    return Table("Cluster size: wall-clock, failures and cost (time for space)",
                 ("gpus", "ideal days", "MTBI h", "goodput", "days", "GPU-hours", "on-demand USD", "spot USD"),
                 tuple(rows))


# ---- assumptions and notes ------------------------------------------------------------------

Row = tuple[str, str, object, str, str, tuple[str, ...]]  # key, label, value, source, flag, settings read


def budget_assumptions(settings: BudgetSettings | None = None, global_batch_tokens: float | None = None,
                       batch_asked: bool = False) -> tuple[Assumption, ...]:
    """Every default the budget sections use, with its source and the flag that changes it
    (user_set when any setting behind it differs from its default). ``global_batch_tokens``: the
    layout's batch (tokens); ``batch_asked``: the user gave --global-batch / --global-batch-tokens."""
    s = settings or BudgetSettings()
    user = changed_settings(s)
    llama2 = "Llama 2 (arXiv:2307.09288 Sec. 2.2): 4M tokens"
    batch = Assumption("budget_global_batch", "global batch",
                       f"{global_batch_tokens or DEFAULT_GLOBAL_BATCH_TOKENS:,.0f} tokens",
                       llama2 if not global_batch_tokens else "the layout's: the batch asked, rounded to a multiple "
                       "of dp" if batch_asked else f"the layout's: {llama2} by default, rounded to a multiple of dp",
                       "--global-batch / --seq-len", batch_asked)
    rows = _data_assumptions(s) + _failure_and_money_assumptions(s) + ([(  # only where MiCS sets it (R1 S4)
        "checkpoint_writers", "checkpoint writers",
        f"DeepSpeed MiCS: the first shard group, {s.checkpoint_writer_group:,} data-parallel ranks x tp x pp",
        "engine.py@edaa722 L1591-1596, zero/mics.py L390 (else every rank at ZeRO >= 1)",
        "--framework deepspeed --shard-group", ("checkpoint_writer_group",))] if s.checkpoint_writer_group else [])
    return (batch,) + tuple(Assumption(f"budget_{key}", label, value, source, flag, bool(user & set(names)))
                            for key, label, value, source, flag, names in rows) + (evaluation_assumption(s),)


def _data_assumptions(s: BudgetSettings) -> list[Row]:
    store, ckpt = storage_spec(s.storage), storage_spec(s.checkpoint_storage or s.storage)
    read = _rate(s.storage_read or store.read_per_node())
    # what the checkpoint model writes at (jobs/budget/model.py, core.economics.checkpoint.write_bandwidth): each
    # writing node at its link, all of them within the job's share of a shared system; a given rate, uncapped
    write = (f"{_rate(s.storage_write)} per writing node (given, uncapped)" if s.storage_write else
             f"{_rate(ckpt.node_write)} per writing node (its link)" + (
                 f", at most {_rate(ckpt.shared_per_node)} x the job's nodes (shared)" if ckpt.shared_per_node else ""))
    return [
        ("storage", "data storage", f"{store.name}: {read} read per node", "; ".join(store.sources),
         "--storage / --storage-read", ("storage", "storage_read")),
        ("checkpoint_storage", "checkpoint storage", f"{ckpt.name}: write {write}", "; ".join(ckpt.sources),
         "--checkpoint-storage / --storage-write", ("checkpoint_storage", "storage_write")),
        ("token_bytes", "token id bytes", s.token_bytes or "2 if vocab < 65,500 else 4",
         "Megatron-LM indexed_dataset.py DType.optimal_dtype", "--token-bytes", ("token_bytes",)),
        ("tokenize_on_the_fly", "tokenise on the fly", s.tokenize_on_the_fly, "default: pre-tokenised data",
         "--tokenize", ("tokenize_on_the_fly",)),
        ("raw_bytes_per_token", "raw text per token", f"{s.raw_bytes_per_token:g} B",
         "Llama 3 tokenizer: 3.94 characters/token on English (arXiv:2407.21783 Sec. 3.2)", "--bytes-per-token",
         ("raw_bytes_per_token",)),
        ("tokens_per_s_per_core", "tokenizer speed per core", f"{s.tokens_per_s_per_core:.3g} tokens/s",
         "HF tokenizers 4.2 MB/s single thread (huggingface/tokenizers#1584) / 4 B per token", "--tokens-per-core",
         ("tokens_per_s_per_core",)),
        ("cpu_cores_per_node", "CPU cores per node", s.cpu_cores_per_node,
         "DGX H100: 2 x 56-core Xeon (DGX SuperPOD reference architecture)", "--cpu-cores", ("cpu_cores_per_node",)),
        ("optimizer", "optimizer (checkpoint states)", s.optimizer, M.OPTIMIZERS[s.optimizer].source, "--optimizer",
         ("optimizer",)),
        ("keep_checkpoints", "checkpoints kept", s.keep_checkpoints, "torchtitan keep_latest_k default 10",
         "--keep-checkpoints", ("keep_checkpoints",)),
        ("async_checkpoint", "asynchronous checkpointing", s.async_checkpoint,
         "torch.distributed.checkpoint.async_save: stage to CPU, write in a thread", "--async-checkpoint",
         ("async_checkpoint",)),
        ("host_copy", "device-to-host copy per GPU", _rate(s.host_copy),
         "nvbandwidth: A100 25.1 GB/s (NVIDIA/nvbandwidth#42), H100 52.8 GB/s (#24)", "--host-copy", ("host_copy",)),
    ]


def _failure_and_money_assumptions(s: BudgetSettings) -> list[Row]:
    rate = s.failure_rate
    interval = "Daly optimum" if s.checkpoint_interval is None else format_duration(s.checkpoint_interval)
    shares = ", ".join(f"{n} {'modelled' if v is None else format(v, '.0%')}" for n, v in s.contingency)
    price = format_usd_per_gpu_hour(s.price) if s.price else s.provider or "median over providers"
    spot = (format_usd_per_gpu_hour(s.spot_price) if s.spot_price else _pct(s.spot_discount) if s.spot_discount is not None
            else "published spot prices / spot-on-demand pairs")
    return [
        ("checkpoint_interval", "checkpoint interval", interval, "Young 1974 / Daly 2006: sqrt(2 x stall x MTBI)",
         "--checkpoint-interval", ("checkpoint_interval",)),
        ("failure_rate", "interruptions per GPU-hour", f"{rate:.3g} (MTBI {1 / (rate * R.LLAMA3_GPUS):.2f} h at 16,384)",
         "Llama 3 405B: 419 unexpected interruptions in 54 days on 16,384 H100 (arXiv:2407.21783 Sec. 3.3.4, "
         "Table 5); range {}..{}: Meta RSC-2/RSC-1 (arXiv:2410.21680), scaled by a stated rate / the census rate "
         "(core.economics.reliability.failure_rate_range)".format(*(f"{r:.3g}".replace("e-0", "e-")
                                                                     for r in R.failure_rate_range(rate))),
         "--failure-rate",
         ("failure_rate",)),
        ("restart_seconds", "restart time", format_duration(s.restart_seconds),
         "MegaScale (arXiv:2402.15627): back to pre-crash progress within 15 minutes", "--restart",
         ("restart_seconds",)),
        ("price", "on-demand price basis", price, "catalog/prices/*.toml (dated rows per provider)",
         "--provider / --price", ("provider", "price")),
        ("spot", "spot price basis", spot, "catalog spot rows; else on-demand less the published discount; "
         "else the article's 60%", "--spot-price / --spot-discount", ("spot_price", "spot_discount")),
        ("spot_preemptions", "spot reclaims per node-month", f"{s.spot_preemptions:g}",
         "AWS Spot Instance Advisor: p5 (H100) 10-20%, p4d (A100) 5-10% (thundercompute.com, 2025-05 and 2026-02)",
         "--spot-preemption", ("spot_preemptions",)),
        ("contingency", "contingency shares", shares, "the article: 20% for restarts, tuning and failures; split "
         "evenly by gpuplan, evaluation added, failures from the model", "--contingency-restarts / "
         "--contingency-tuning / --contingency-failures / --contingency-evaluation", ("contingency",)),
    ]


def changed_settings(s: BudgetSettings) -> set[str]:
    """Names of the settings that differ from their defaults (shown as user-set)."""
    default = BudgetSettings()
    return {f.name for f in fields(BudgetSettings) if getattr(s, f.name) != getattr(default, f.name)}
