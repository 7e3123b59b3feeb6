"""One step of the chosen layout by op class: the lines `plan --explain` puts in its answer and
`plan --full` / `train --full` list (core/time for the eager stack, core/step's fused model
otherwise). Units: seconds per optimizer step on the critical path."""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpuplan.report.model import Line, Report, Section

TITLE = "One step by op class (seconds on the critical path)"


@dataclass(frozen=True)
class PacedStage:
    """The pipeline stage whose micro-batch paces the step, as core.time.step.step_time picks it: the
    first (fullest) stage, or the last (the LM head, its loss and any MTP modules) where that one is
    slower; without a pipeline, the only stage (every layer, the head, MTP modules on it)."""

    layers: int
    """Decoder layers on the stage (core.time.stages.rank_layers)."""
    head: bool
    """The LM head and its loss live here."""
    mtp: int
    """MTP modules on the stage (core.model.mtp), each a block and one more loss."""
    times: object
    """Its core.time.step.MicroBatchTimes (seconds per micro-batch)."""
    name: str
    """'only', 'first' or 'last'."""


def paced_stage(ev, plan, settings) -> PacedStage:
    """The stage step_time's compute and bubble follow: the slower of its first and last stage's
    micro-batch (core/time/step.py step_time: t_mb = max(first, last), stage_span's split, no recipe split
    in the plan search). The class lines describe it so that they add up to the step, and its ``layers`` are
    the ones step_time's once-a-step terms take (core.time.stages: rank_layers' split, last_stage_paces'
    rule, the one paced_stage_layers applies): torchtitan's float8 all-gather change, Megatron's FP8
    weight casts."""
    from gpuplan.core.time.stages import last_stage_paces, rank_layers
    from gpuplan.core.time.step import microbatch_compute_time

    lay, spec = plan.layout, ev.spec
    mtp, pp = spec.mtp_layers, lay.pp

    def times(layers, head, modules, embedding=0):
        return microbatch_compute_time(spec, ev.cluster, settings, lay.tp, lay.cp, lay.micro_batch, layers, head,
                                       lay.ep, modules, vpp=lay.vpp, embedding=embedding)

    first = int(rank_layers(spec, pp, 0))
    t_first = times(first, pp == 1, mtp * (pp == 1), lay.zero < 3)  # the embedding's gradient add, as step_time
    if pp == 1:
        return PacedStage(first, True, mtp, t_first, "only")
    last = int(rank_layers(spec, pp, pp - 1))
    t_last = times(last, True, mtp)
    if last_stage_paces(float(t_first.total), float(t_last.total)):
        return PacedStage(last, True, mtp, t_last, "last")
    return PacedStage(first, False, 0, t_first, "first")


def stage_tag(stage: PacedStage, pp: int) -> str:
    """The words a breakdown under a pipeline adds: which stage its compute lines describe."""
    if stage.name == "only":
        return ""
    what = f"{stage.layers} layers" + (" + LM head and loss" if stage.head else "") + \
        (f" + {stage.mtp} MTP module{'s' * (stage.mtp > 1)}" if stage.mtp else "")
    return f"; the {stage.name} of {pp} stages ({what}) paces the step"


STAGE_FORMULA = ("; under a pipeline the compute lines are the stage that paces the step (core/time/step.py "
                 "step_time: the slower of the first and the last), the communication the first stage's")
"""The formula words the stage_tag's label leaves out (the label kept short: `plan --explain` lines ran 269 columns)."""


def _line(key: str, label: str, seconds: float, step: float, formula: str) -> Line:
    return Line(key, label, seconds, "s", f"{seconds:.4g} s ({seconds / step:.0%})", formula)


def _eager_lines(ev, plan, settings) -> list[Line]:
    from gpuplan.core.time.eager_step import microbatch
    from gpuplan.core.time.eager_path import eager_run

    lay, spec = plan.layout, ev.spec
    run = eager_run(spec, ev.cluster, settings)
    k = lay.micro_batches_per_step
    stage = paced_stage(ev, plan, settings)
    fwd, bwd = microbatch(spec, run, lay.micro_batch * settings.seq_len, stage.layers, 1.0 if stage.head else 0.0)
    step = plan.step_seconds
    host = k * (fwd.host_beyond_gpu + bwd.host_beyond_gpu)
    return [
        _line("class_gemm", "matmuls (layers, LM head, adapters; forward + backward)" + stage_tag(stage, lay.pp),
              k * (fwd.gemm + bwd.gemm), step,
              "core/time/linears.py: 2mkn / (peak x MAMF x d/(d+512)), memory floor for skinny GEMMs"),
        _line("class_attention", "attention (eager: its score matmuls are in the matmuls line, its softmax and masks "
              "in the memory-bound line)" if run.attention_kernel == "eager" else
              f"attention ({run.attention_kernel} kernel)", k * (fwd.attention + bwd.attention), step,
              "core/time/attention.py: SDPA's kernel by head dim and length (cuDNN / FA2); eager attention is "
              "core/time/eager_step.py's score matmuls and the op profile's softmax"),
        _line("class_memory", "memory-bound kernels (norms, RoPE, activations, casts, loss)", k * (fwd.memory + bwd.memory),
              step, "core/time/memory_kernels.py over the op profile's bytes and kernels (transformers' code)"),
        _line("class_host", "host issue time beyond the GPU's", host, step,
              f"core/time/host.py: forward {fwd.host * 1e3:.3g} ms host vs {fwd.gpu * 1e3:.3g} ms GPU per micro-batch"),
        _line("class_optimizer", f"optimizer step ({settings.optimizer_impl} AdamW)", float(plan.step.optimizer), step,
              "core/time/optimizer.py: element accesses x parameters at HBM speed, or its host time"),
    ]


def _fused_lines(plan, stage: PacedStage) -> list[Line]:
    lay, mb = plan.layout, stage.times
    k, step = lay.micro_batches_per_step, plan.step_seconds
    return [
        _line("class_gemm", "matmuls + element-wise (fused kernels)" + stage_tag(stage, lay.pp),
              k * (float(mb.total) - float(mb.attention)), step,
              "core/time/step.py: MAMF x d/(d+512); element-wise 6 x saved bytes at HBM (fitted, docs/step.md)"),
        _line("class_attention", "attention kernels", k * float(mb.attention), step,
              "core/time/attention_core.py: causal FLOPs at the part's attention efficiency"),
        _line("class_optimizer", "optimizer step", float(plan.step.optimizer), step, "~32 B per parameter at HBM speed"),
    ]


def _class_lines(prefix: str, seconds_by_class: dict, plan, stage: PacedStage, source: str, tag: str = "",
                 losses=None) -> list[Line]:
    """One line per memory-bound op class: a layer's seconds per micro-batch x the paced stage's layers (its
    MTP modules' blocks too) x the micro-batches; the loss ``losses`` times (default: once where the stage
    holds the LM head, none elsewhere)."""
    from gpuplan.core.time.memory_kernels import (
        HBM_STREAM_EFFICIENCY,
        KERNEL_FIXED_SECONDS,
    )

    lay = plan.layout
    losses = int(stage.head) if losses is None else losses
    return [_line(f"class_{prefix}_{name}", f"{name} kernels{tag}",
                  lay.micro_batches_per_step * seconds * (losses if name == "loss" else stage.layers + stage.mtp),
                  plan.step_seconds,
                  f"{source} at {HBM_STREAM_EFFICIENCY:.0%} of HBM + {KERNEL_FIXED_SECONDS * 1e6:.2f} us per kernel")
            for name, seconds in seconds_by_class.items() if name != "loss" or losses]


def _titan_lines(ev, plan, settings) -> list[Line]:
    """torchtitan: its memory-bound kernels class by class (core/time/titan_ops.py), the rest of the
    fused model's micro-batch (matmuls, FP8 casts, the recomputed forward) and its attention."""
    from gpuplan.core.time import titan_ops as TT

    stage = paced_stage(ev, plan, settings)
    lines = _fused_lines(plan, stage)
    lay, spec, ops = plan.layout, ev.spec, settings.titan_ops
    k, step = lay.micro_batches_per_step, plan.step_seconds
    tokens = lay.micro_batch * settings.seq_len / lay.cp
    mode = "torch.compile per block" if ops.compiled else f"eager, {ops.norm} RMSNorm"
    classes = _class_lines("titan", TT.class_seconds(spec, ops, tokens, ev.cluster.gpu.memory_bandwidth, lay.tp), plan,
                           stage, f"core/time/titan_ops.py ({mode}): bytes per token from torchtitan's code")
    rest = lines[0].value - sum(ln.value for ln in classes)
    from gpuplan.core.time import titan_float8 as TF  # the step's own sum: copies and the float8 all-gather's change

    copies = TF.step_copy_seconds(spec, ev.cluster, settings, tp=lay.tp, pp=lay.pp,
                                  shard=lay.shard_group or lay.dp * lay.cp, zero=lay.zero, micro_batches=k,
                                  cp=lay.cp, stage_layers=stage.layers)  # the paced stage's, as step_time's
    if copies > 0:  # on the compute stream beside the micro-batches (core.time.step.step_time)
        what = "copy-out + gradient copy-in" + (" + fp32 accumulation" if lay.pp > 1 else "") + (
            "; float8 all-gather: 1 + 1 B copy-out, no Float8Linear weight cast" if TF.gathers_float8(settings) else "")
        classes.append(_line("class_titan_fsdp_copies", f"fsdp_copies (FSDP2 {what})", copies, step,
                             "core/time/titan_ops.py: 4 B per parameter each all-gather (split_with_sizes_copy), "
                             "6 B each reduce-scatter (chunk_cat bf16 -> fp32), torch _fsdp_collectives.py"
                             + ("; under the pipeline the gradients kept in fp32 across micro-batches, 10 B per "
                                "parameter each (_fsdp_param.py accumulate_unsharded_grad_if_needed)" if lay.pp > 1 else "")))
    lines[0] = _line("class_gemm", "matmuls, FP8 casts, recomputed forward and host" + stage_tag(stage, lay.pp), rest, step,
                     "core/time/step.py: MAMF x d/(d+512); op-level SAC repeats the forward's element-wise third")
    return lines[:1] + classes + lines[1:]


def _megatron_lines(ev, plan, settings) -> list[Line]:
    """Megatron-Core + TE: its memory-bound kernels class by class (core/time/megatron_ops.py). With
    StepSettings.megatron_ops the step charges them (opt-in); otherwise the answer keeps the fitted
    element-wise term and the op list is shown inside it (explain only; docs/step.md says why)."""
    from gpuplan.core.time import megatron_ops as MO
    from gpuplan.core.time import megatron_ops_step as MS

    active = MO.active(ev.spec, settings)
    charged = active is not None
    ops = active or MO.default_ops(ev.spec)
    stage = paced_stage(ev, plan, settings)
    lines = _fused_lines(plan, stage)
    lay, spec, gpu = plan.layout, ev.spec, ev.cluster.gpu
    step, tag = plan.step_seconds, stage_tag(stage, lay.pp)
    recipe, non_tn = MO.cast_recipe(settings.dtype, settings.fp8_recipe, ops), MO.non_tn_fp8(gpu)
    seconds = MO.class_seconds(spec, ops, recipe, non_tn, lay.micro_batch * settings.seq_len / lay.cp,
                               gpu.memory_bandwidth, lay.tp, lay.cp)
    classes = _class_lines("megatron", seconds, plan, stage, "core/time/megatron_ops.py: bytes per token from "
                           "Megatron-Core + TE's code", "" if charged else ", op list inside the fitted term",
                           losses=int(stage.head) + stage.mtp)  # one loss per MTP module too (megatron_ops_step)
    if not charged and settings.megatron_loss:  # the loss is charged beside the fitted term (step.py)
        classes = [_line(ln.key, "loss kernels, charged beside the fitted term", ln.value, step,
                         "core/time/megatron_ops.py loss_seconds: StepSettings.megatron_loss")
                   if ln.key == "class_megatron_loss" else ln for ln in classes]
    rest = lines[0].value - sum(ln.value for ln in classes)
    if not charged and rest < 0:  # the op list outgrows the fitted term it is said to sit inside (few tokens a
        # micro-batch: 7.84 us a kernel, memory_kernels.KERNEL_FIXED_SECONDS): no split, never a negative matmul line
        listed = sum(ln.value for ln in classes if ln.key != "class_megatron_loss" or not settings.megatron_loss)
        classes = [ln for ln in classes if ln.key == "class_megatron_loss" and settings.megatron_loss]
        rest = lines[0].value - sum(ln.value for ln in classes)
        return [_line("class_gemm", f"matmuls + the fitted element-wise term (Megatron's op list, {listed:.4g} s, "
                      f"would exceed it at this micro-batch: not split){tag}", rest, step,
                      "core/time/step.py: MAMF x d/(d+512); element-wise 6 x saved bytes at HBM (fitted, docs/step.md)")
                ] + classes + lines[1:]
    if charged:
        casts = MS.step_extra_seconds(spec, settings, gpu, tp=lay.tp, stage_layers=stage.layers, local_params=1.0,
                                      shards=1)[0]  # step_time casts the paced stage's weights
        if casts > 0:  # once a step, beside the micro-batches (core.time.step.step_time)
            classes.append(_line("class_megatron_weight_casts", "FP8 weight casts (once a step: TE's weight cache)", casts,
                                 step, "core/time/megatron_ops_step.py: one quantisation per weight, is_first_microbatch"))
    label = "matmuls, recomputed forward and host" if charged else \
        "matmuls + the fitted element-wise term beyond Megatron's op list (the answer's model)"
    lines[0] = _line("class_gemm", label + tag, rest, step, "core/time/step.py: MAMF x d/(d+512); docs/step.md, Megatron")
    if charged:
        lines[-1] = _line("class_optimizer", "optimizer step (distributed optimizer, fused Adam)", lines[-1].value, step,
                          "core/time/megatron_ops_step.py: 38 B per shard parameter + 4 B per local one zeroed")
    return lines[:1] + classes + lines[1:]


def _llmc_lines(ev, plan, settings) -> list[Line]:
    """llm.c: its memory-bound kernels class by class (core/time/llmc_ops.py), the matmuls and attention beside."""
    from gpuplan.core.time import llmc_ops as LO

    stage = paced_stage(ev, plan, settings)
    lines = _fused_lines(plan, stage)
    lay, spec, step = plan.layout, ev.spec, plan.step_seconds
    seconds = LO.class_seconds(spec, settings.recompute, lay.micro_batch * settings.seq_len, ev.cluster.gpu.memory_bandwidth)
    classes = _class_lines("llmc", seconds, plan, stage, "core/time/llmc_ops.py: bytes per token "
                           "from llm.c's kernels (loss: fused classifier, encoder, final LayerNorm)")
    rest = lines[0].value - sum(ln.value for ln in classes)
    lines[0] = _line("class_gemm", "matmuls (cuBLASLt, bias in the epilogue) and exposed host" + stage_tag(stage, lay.pp),
                     rest, step,
                     "core/time/step.py: MAMF x d/(d+512); host: core/time/llmc_ops.py exposed_host_seconds")
    return lines[:1] + classes + lines[1:]


def step_class_lines(ev, plan, framework: str = "") -> tuple[Line, ...]:
    """The chosen layout's step by op class, plus its exposed communication and bubble (``ev``: the
    plan search's evaluator, jobs.plan.search.evaluator_for; ``framework``: the job's --framework)."""
    from gpuplan.core.time.megatron_ops import covers

    settings = ev.step_settings(plan.recompute)
    megatron = covers(ev.spec) and settings.titan_ops is None and (settings.megatron_ops is not None
                                                                   or framework == "megatron")
    lines = _eager_lines(ev, plan, settings) if settings.eager_ops is not None else \
        _titan_lines(ev, plan, settings) if settings.titan_ops is not None else \
        _llmc_lines(ev, plan, settings) if settings.implementation == "llmc" else \
        _megatron_lines(ev, plan, settings) if megatron else _fused_lines(plan, paced_stage(ev, plan, settings))
    step = plan.step_seconds
    if plan.layout.pp > 1 and lines[0].key == "class_gemm":
        lines[0] = replace(lines[0], formula=lines[0].formula + STAGE_FORMULA)
    lines += _moe_lines(plan.step, step) + _accumulation_lines(ev, plan, settings)
    for key, label, value in (("class_comm", "exposed communication", float(plan.step.exposed_comm)),
                              ("class_bubble", "pipeline bubble", float(plan.step.bubble))):
        if value > 0:
            lines.append(_line(key, label, value, step, "core/comm/step_comm.py, core/time/pipeline_schedule.py"))
    return tuple(lines)


def _accumulation_lines(ev, plan, settings) -> list[Line]:
    """DeepSpeed's BF16_Optimizer gradient accumulation pass, once per micro-batch over the larger stage's
    parameters, as core.time.step.step_time charges it beside the micro-batches (core/time/optimizer.py)."""
    from gpuplan.core.time.optimizer import accumulation_pass_seconds
    from gpuplan.core.time.trained_params import trained_params_per_gpu

    lay, spec = plan.layout, ev.spec
    trained = trained_params_per_gpu(spec, settings, lay.tp, lay.pp, lay.ep)  # step_time's, the same helper
    seconds = lay.micro_batches_per_step * float(accumulation_pass_seconds(
        spec, settings, trained, ev.cluster.gpu.memory_bandwidth * settings.hbm_efficiency, lay.tp, lay.pp, lay.ep,
        lay.zero, spec.mtp_layers))
    if seconds <= 0:
        return []
    return [_line("class_grad_accumulation", "gradient accumulation pass (DeepSpeed BF16_Optimizer, each micro-batch)",
                  seconds, plan.step_seconds, "core/time/optimizer.py accumulation_pass_seconds: bytes per local "
                  "parameter at HBM speed (deepspeed bf16_optimizer.py@edaa722)")]


def _moe_lines(breakdown, step: float) -> list[Line]:
    """A Megatron-Core MoE layer's terms the op classes above leave out (charged in step_time, beside
    the micro-batches): the per-expert kernels' fixed GPU time and the dispatcher sync's host time."""
    from gpuplan.core.time import moe_layer as ML
    from gpuplan.core.time.memory_kernels import KERNEL_FIXED_SECONDS

    out = []
    for key, label, value, source in (
            ("class_moe_expert_kernels", "MoE per-expert kernels (TE GroupedLinear) and alltoall sorts",
             float(breakdown.moe_expert_kernels), f"core/time/moe_layer.py: per local expert and layer "
             f"{sum(ML.QUANTIZE_CALLS_PER_EXPERT)} quantisations (their kernels by FP8 recipe) + "
             f"{sum(ML.GEMMS_PER_EXPERT)} cuBLAS GEMMs at {KERNEL_FIXED_SECONDS * 1e6:.2f} us each (GEMMs over "
             f"{ML.GEMM_STREAMS} streams); alltoall: {sum(ML.SORT_COPIES)} copies of k x h per token"),
            ("class_moe_host", "MoE dispatcher sync: host time exposed", float(breakdown.moe_host),
             "core/time/moe_host.py: launches after the token-count sync beyond the GPU work behind it")):
        if value > 0:
            out.append(_line(key, label, value, step, source))
    return out


def with_step_classes(report: Report, inputs, plan, in_answer: bool = False) -> Report:
    """``report`` with the op-class section (and, ``in_answer``, its lines in the answer), and the
    eager op profile's note (a family timed with Llama's profile, a setting not profiled)."""
    from gpuplan.jobs.plan.search import evaluator_for

    ev = evaluator_for(inputs)
    lines = step_class_lines(ev, plan, inputs.framework)
    headline = tuple(report.headline) + tuple(ln.key for ln in lines) if in_answer else report.headline
    ops = ev.step.eager_ops
    notes = tuple(report.notes) + ((f"step model: {ops.note}",) if ops is not None and ops.note else ())
    return replace(report, sections=tuple(report.sections) + (Section(TITLE, lines),), headline=headline, notes=notes)
