"""A trial file's model name against the config it carries (wave 6c): a trial whose ``config.model``
names one catalog model while its ``config.hf_config`` builds another was calibrated and labelled with
the named model (calibrate/measurement.py's label; calibrate/predict.spec_of builds the spec from the
hf_config under that name), so the calibration said it measured a model it did not."""

from __future__ import annotations

from typing import Any

from gpuplan.adapters.quant_fields import listing
from gpuplan.errors import InputError

SHAPE_KEYS = ("model_type", "hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads",
              "vocab_size")
"""The config keys that say which model a config builds. num_hidden_layers is not among them: a trial may run
fewer layers than the model has (config.settings.layers); config.config_num_layers holds the model's count."""


def check_model_matches_config(config: dict, source: str) -> None:
    """``config.model`` (a catalog id or Hugging Face id) and ``config.hf_config`` describe the same model:
    each SHAPE_KEYS value the hf_config gives equals the catalog config's, and config.config_num_layers (when
    given) the catalog's layer count. A name outside the catalog (a config.json path, an unknown id) is
    not compared: calibrate never opens a path a file names."""
    from gpuplan.catalog import find_model_entry

    hf_config, name = config.get("hf_config"), config.get("model")
    entry = find_model_entry(name) if isinstance(name, str) and isinstance(hf_config, dict) else None
    if entry is None:
        return
    known = entry["config"]
    for key in SHAPE_KEYS:
        if key in hf_config and key in known and _differs(hf_config[key], known[key]):
            raise InputError("config.model", name, f"in {source}: config.hf_config.{key} is {hf_config[key]!r}, "
                             f"{entry['id']}'s is {known[key]!r}: the hf_config builds another model; name the "
                             "model it is (or the config.json path it came from)")
    layers = config.get("config_num_layers")
    if layers is not None and known.get("num_hidden_layers") is not None and layers != known["num_hidden_layers"]:
        raise InputError("config.model", name, f"in {source}: config.config_num_layers is {layers!r}, "
                         f"{entry['id']}'s is {known['num_hidden_layers']!r}: name the model the trial ran")


def _differs(given: Any, known: Any) -> bool:
    return (given.strip().lower() != known.strip().lower()) if isinstance(given, str) and isinstance(known, str) \
        else given != known


LOG_FLOPS_MARGIN = 0.05
"""Margin beyond the band of the frameworks' own FLOP formulas (logged_flops_band) for what none of them counts
alike: norms and biases (< 1%: Kaplan et al. 2020 Table 1, core/model/flops.py), Megatron's padded vocabulary (to
128 x tp rows: under 2% of the LM head on a 32k vocabulary), and 2% to spare. The printed rounding of the logged
TFLOP/s is added per log on top (printed_tflops_rounding)."""

PRINTED_TFLOPS_DECIMALS = {"torchtitan": 2, "megatron": 1}
"""Decimals each log format prints its TFLOP/s with: torchtitan f"tflops: {tflops:,.2f}"
(torchtitan/components/metrics.py@b5bcd76 L534); Megatron f"throughput per GPU (TFLOP/s/GPU): {throughput:.1f}"
(megatron/training/training.py@core_r0.6.0 L775). A table's are read from the number itself."""


def _after_warmup(records: list) -> list:
    """The records after the first (warm-up); the one record where there is only one."""
    return records[1:] if len(records) > 1 else records


def _checked_records(log) -> list:
    """The records the model check reads: those after the first (warm-up) that print a TFLOP/s above zero. A
    printed 0 (torchtitan's 0.00 under 0.005 TFLOP/s) is +-100% rounding and states no FLOP count."""
    return [r for r in _after_warmup(list(log.records)) if r.tflops_per_device]


def _per_token(records, achieved, label: str, lead: tuple[str, ...], gpus: int, batch: int, seq_len: int) -> tuple:
    """(values, how, flags, records read): FLOPs per token from each record's ``achieved(r)`` FLOP/s per GPU
    (``label`` in ``how``) over its rate: tokens per second per GPU, tokens per second on ``gpus``, or a step of
    ``batch`` x ``seq_len`` tokens on ``gpus``; a record with no rate is skipped. ``flags``: ``lead`` plus those the
    last record's rate depends on (--gpus, --global-batch). logged_flops_per_token and logged_mfu_flops_per_token."""
    values, how, flags, read = [], "", (), []
    for r in records:
        if r.tokens_per_s_per_device:
            values.append(achieved(r) / r.tokens_per_s_per_device)
            how, flags = f"{label} / tokens per second per GPU", lead
        elif r.tokens_per_s:
            values.append(achieved(r) * gpus / r.tokens_per_s)
            how, flags = f"{label} x GPUs / tokens per second", lead + ("--gpus",)
        elif r.step_time_s:
            values.append(achieved(r) * r.step_time_s * gpus / (batch * seq_len))
            how = f"{label} x step s x {gpus:,} GPUs / ({batch:,} x {seq_len:,} tokens)"
            flags = lead + ("--gpus", "--global-batch")
        else:
            continue
        read.append(r)
    return values, how, flags, read


MFU_PEAK_CONVENTIONS = 2.0
"""How far the peak a logged MFU divides by may be from the dense peak of the run's dtype that gpuplan multiplies
it by: a log may take the 2:4-sparse peak (NVIDIA's H100 datasheet prints 1,979 TFLOP/s bf16 'with sparsity'
beside the dense 989) or the next dtype's (fp8's dense peak is 2x bf16's, same datasheet). So a logged MFU states
the FLOPs per token only to within this factor either way: the check on it is that much wider."""


NANOGPT_MFU_PEAK = 312e12
"""FLOP/s nanoGPT's estimate_mfu divides by on any GPU: 'flops_promised = 312e12 # A100 GPU bfloat16 peak flops is
312 TFLOPS' (karpathy/nanoGPT model.py:301, and the llm.c / nanoGPT forks that copy it). An 8-H100 nanoGPT table reads
3.17x the dense bf16 peak's FLOPs (989 / 312)."""


def mfu_peak_conventions(accelerator, dtype: str) -> tuple[tuple[str, float], ...]:
    """The named peaks (FLOP/s) other than ``accelerator``'s dense ``dtype`` peak that a logged MFU is known to divide
    by, past MFU_PEAK_CONVENTIONS' 2x either way: nanoGPT's A100 bf16 peak (NANOGPT_MFU_PEAK) on any GPU, and, in a
    run below 16 bits, the part's bf16 dense peak, which torchtitan divides by whatever the dtype
    (torchtitan/tools/utils.py get_peak_flops: 'hardcoded BF16 type peak flops'; torchtitan/utils.py@4b3f2e41 L119
    before the move), so an fp8 run's MFU is 2x the fp8 peak's and its slack inside the 2x was the 5% margin only."""
    named = [("nanoGPT's A100 bf16 peak (estimate_mfu, 312 TFLOP/s on any GPU)", NANOGPT_MFU_PEAK)]
    if dtype not in ("bf16", "fp16", "fp32", "tf32") and accelerator.has_dtype("bf16"):
        named.append((f"the bf16 dense peak (torchtitan's MFU in a {dtype} run, "
                      f"{accelerator.peak('bf16') / 1e12:,.0f} TFLOP/s)", accelerator.peak("bf16")))
    return tuple(named)


def _mfu_records(log) -> list:
    """The records after the first (warm-up) that print an MFU above zero, in a log that prints no TFLOP/s (a
    TFLOP/s states the FLOPs without a peak; a printed 0.00 is rounding, _checked_records)."""
    records = list(log.records)
    return [] if any(r.tflops_per_device is not None for r in records) else \
        [r for r in _after_warmup(records) if r.mfu]


def logged_mfu_flops_per_token(log, gpus: int, batch: int, seq_len: int, peak: float) -> tuple | None:
    """(FLOPs per token, how, flags, printed rounding) a log's MFU implies at the dense ``peak`` (FLOP/s) of the
    run's dtype, median over _mfu_records: MFU x peak stands for the TFLOP/s it does not print (then as
    logged_flops_per_token). The rounding is half a unit in the MFU's last printed digit over the value. None where
    no record prints an MFU with a rate."""
    import statistics

    values, how, flags, read = _per_token(_mfu_records(log), lambda r: r.mfu * peak, "MFU x dense peak", ("--gpu",),
                                          gpus, batch, seq_len)
    rounding = max((_half_unit(r.mfu, "") / r.mfu for r in read), default=0.0)
    return (statistics.median(values), how, flags, rounding) if values else None


def _half_unit(value: float, log_format: str) -> float:
    """Half a unit in the last printed digit of a logged TFLOP/s (TFLOP/s): the format's decimals
    (PRINTED_TFLOPS_DECIMALS) or, where the number carries more, its own; a table's from its shortest repr (a
    printed '0.50' reads as 0.5, so the half unit is never under the printed one)."""
    from decimal import Decimal

    exponent = Decimal(repr(float(value))).as_tuple().exponent
    exponent = exponent if isinstance(exponent, int) else 0
    decimals = PRINTED_TFLOPS_DECIMALS.get(log_format)
    return 0.5 * 10.0 ** (min(exponent, -decimals) if decimals is not None else exponent)


def printed_tflops_rounding(log) -> float:
    """The largest relative printed rounding among the checked records (_checked_records): half a unit in the
    last printed digit over the printed value (dimensionless; torchtitan's 0.52 -> 0.005 / 0.52 = 0.96%, Megatron's
    239.8 -> 0.05 / 239.8 = 0.02%, torchtitan's 0.05 -> 10%). 0 where no record is checked."""
    return max((_half_unit(r.tflops_per_device, log.format) / r.tflops_per_device for r in _checked_records(log)),
               default=0.0)


def logged_flops_per_token(log, gpus: int, batch: int, seq_len: int) -> tuple[float, str, tuple[str, ...]] | None:
    """Training FLOPs per token the log's own TFLOP/s imply, median over the records after the first (warm-up),
    how, and the flags besides --seq-len that the figure depends on (the candidates for a mismatch): torchtitan's tflops = num_flops_per_token x tps / 1e12 (torchtitan/components/metrics.py@b5bcd76
    L489), so tflops / tps; Megatron's 'throughput per GPU' = num_floating_point_operations(batch) / (step s x 1e12 x
    world size) (megatron/training/training.py@core_r0.6.0 L758-775), so TFLOP/s x step x GPUs / (batch x seq_len).
    Records printing a TFLOP/s of 0 are skipped (_checked_records). None where no record states one above 0."""
    import statistics

    values, how, flags, _ = _per_token(_checked_records(log), lambda r: r.tflops_per_device * 1e12, "TFLOP/s", (),
                                       gpus, batch, seq_len)
    return (statistics.median(values), how, flags) if values else None


def logged_flops_band(spec, seq_len: int, recompute: str = "none") -> tuple[float, float]:
    """(least, most) training FLOPs per token the frameworks' own formulas count for ``spec``: least = causal
    attention (Megatron's num_floating_point_operations from core_r0.12.0, training.py L311 'seq_length /
    hidden_size / 2'; none of core_r0.8.0-0.11.0 halves) without the LM head (torchtitan's 6 x (params - embedding
    params) left a tied head out; torchtitan/models/utils.py@b5bcd76 L444-456 keeps it and records why); most =
    full attention (Megatron core_r0.6.0 training.py L65-90 'seq_length / hidden_size'; torchtitan 'do not account
    for sparsity in causal attention', utils.py@b5bcd76 L446) with the LM head and any recomputation (a table's
    TFLOP/s may count it). Neither cited formula limits a sliding-window layer to its window (Megatron's
    'seq_length / hidden_size' and torchtitan's 12 x l x h x q x t take the whole sequence at every layer), so most
    counts every layer at full attention over seq_len (the spec with sliding_window=None); least keeps gpuplan's
    window-limited causal count, the fewest FLOPs any convention counts. core.model.flops.training_flops_per_token
    counts both conventions."""
    from dataclasses import replace

    from gpuplan.core.model.flops import training_flops_per_token

    causal = training_flops_per_token(spec, seq_len, "causal")
    full = training_flops_per_token(replace(spec, sliding_window=None), seq_len, "full", recompute=recompute)
    return causal.model - 3.0 * causal.lm_head_forward, max(full.model, full.hardware)


def check_log_trained_model(log, model: str, seq_len: int, gpus: int, batch: int, recompute: str = "none",
                            peak: float | None = None, conventions: tuple[tuple[str, float], ...] = ()) -> str:
    """InputError naming ``model`` where the log's own FLOPs per token (logged_flops_per_token) are outside the
    named model's band (logged_flops_band), widened by LOG_FLOPS_MARGIN plus the log's printed rounding
    (printed_tflops_rounding: half a unit in the last printed TFLOP/s digit over the value, the largest over the
    records read). The refusal names every flag the logged figure depends on as a candidate (--model and --seq-len
    always; --gpus where the rate is not per GPU; --global-batch on the step-time path): a wrong --gpus or batch
    for the right model is off by the same kind of factor (review w11 r4 S1). Wave 11: the Mixtral 8x7B Megatron
    log read as `santacoder` printed a 13.562x compute factor, exit 0. A log that prints no TFLOP/s but an MFU is
    checked by MFU x ``peak`` (the dense peak of the run's dtype, FLOP/s; logged_mfu_flops_per_token), the band
    MFU_PEAK_CONVENTIONS wider (wave 12: a table of tokens/s and a 38% MFU read as pythia-70m fit a compute factor
    of 129, exit 0). An MFU outside that band is read over each of ``conventions`` (mfu_peak_conventions: named
    peaks a log's MFU is known to divide by); one that fits is accepted with a note line naming it, and a refusal
    names 'the peak the log's MFU divides by' among the candidates (review w12 r3 N1). Returns "" when checked, else
    the one line that says what could not be checked or how the MFU was read."""
    from gpuplan.adapters.resolve import resolve_model

    logged = logged_flops_per_token(log, gpus, batch, seq_len)
    spread, rounding = 1.0, printed_tflops_rounding(log)
    if logged is None and peak and (by_mfu := logged_mfu_flops_per_token(log, gpus, batch, seq_len, peak)):
        logged, spread, rounding = by_mfu[:3], MFU_PEAK_CONVENTIONS, by_mfu[3]
    only = (f"--model {model} is checked only as far as 6 FLOPs per active parameter per token at its logged rate "
            "stay within the GPU's peak")  # calibrate.log_checks.check_step_flops
    if logged is None and not peak and _mfu_records(log):
        return f"{log.source}: its MFU is not checked: --gpu has no dense peak at --dtype to take it against, so {only}"
    if logged is None:
        return (f"{log.source}: no logged TFLOP/s or MFU states its FLOPs per token, so {only} (a smaller model than "
                "the one trained would pass)")
    flops, how, flags = logged
    least, most = logged_flops_band(resolve_model(model), seq_len, recompute)
    margin = LOG_FLOPS_MARGIN + rounding
    if least * (1 - margin) / spread <= flops <= most * (1 + margin) * spread:
        return ""
    by_mfu = spread != 1
    for name, other in conventions if by_mfu else ():
        if least * (1 - margin) <= flops * other / peak <= most * (1 + margin):
            return (f"{log.source}: its MFU fits {model} taken over {name}, not the dense {peak / 1e12:,.0f} "
                    f"TFLOP/s of --gpu at --dtype ({flops:.4g} -> {flops * other / peak:.4g} FLOPs per token); read so")
    ratio = flops / most if flops > most else flops / least
    given = listing(("--model", "--seq-len") + flags)
    why = "ran at other flags, or its MFU divides by another peak" if by_mfu else "or ran at other flags"
    wider = f", and {spread:g}x either way for the peak a logged MFU divides by" if by_mfu else ""
    wider += "".join(f"; nor over {name}" for name, _ in conventions) if by_mfu else ""
    raise InputError("model", model, f"{log.source} logs {flops:.4g} training FLOPs per token ({how}); {model} at "
                     f"{seq_len:,} tokens counts {least:.4g} to {most:.4g} (the frameworks' formulas, "
                     f"+-{margin:.1%} with the printed rounding{wider}), {ratio:.3g}x off: the log's FLOPs per token "
                     f"do not match what was given, so {given} is wrong (the log trained another model, {why}); "
                     "give the values the log ran")
