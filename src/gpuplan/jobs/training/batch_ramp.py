"""--batch-ramp on the chosen layout, as `train`, `budget` and `plan` answer it: the ramp's timing
(planner.batch_ramp), its report line 'batch ramp: x1.050 (phases ...)' and the note where a phase's batch
is rounded to a whole number of micro-batches per data-parallel rank."""

from __future__ import annotations

from gpuplan.report.model import Line

RAMP_FORMULA = ("(sum of phase tokens x s/token at the phase batch + the rest x s/token at the steady batch) / "
                "(tokens x s/token at the steady batch), same layout (planner/batch_ramp.py)")


def ramp_on(inputs, plan, evaluator=None):
    """The RampTiming of ``inputs.batch_ramp`` on ``plan``'s layout; None without a ramp."""
    phases = inputs.ramp_phases() if hasattr(inputs, "ramp_phases") else []
    if not phases:
        return None
    from gpuplan.jobs.plan.search import evaluator_for
    from gpuplan.jobs.training.layout import with_budget_fields
    from gpuplan.planner.batch_ramp import ramp_timing

    ev = evaluator if evaluator is not None else evaluator_for(with_budget_fields(inputs))
    return ramp_timing(ev, plan, float(inputs.tokens), phases)


def ramp_line(ramp, inputs, plan) -> Line:
    """'batch ramp: x1.050 (469B:3072-15360, then 15,360 sequences; steady MFU 40.6%)': the MFU line above it is
    the run's average, the steady one / the factor."""
    phases = ", ".join(p.text() for p in inputs.batch_ramp)
    return Line("batch_ramp", "batch ramp", ramp.factor, "x",
                f"x{ramp.factor:.3f} ({phases}, then {plan.global_batch:,} sequences; steady MFU {plan.mfu:.1%})",
                RAMP_FORMULA)


def ramp_notes(ramp, plan, inputs=None) -> tuple[str, ...]:
    """Where a phase's batch is not a whole number of micro-batches per data-parallel rank: what it runs at; and
    where the framework's pipeline schedule does not run a phase's micro-batches on the layout (schedule_note)."""
    if ramp is None:
        return ()
    lay = plan.layout
    per = lay.dp * lay.micro_batch
    note = schedule_note(inputs, plan, ramp) if inputs is not None else ""
    out = [note] if note else []
    if ramp.rounded:
        shown = ", ".join(f"{asked:,.6g} -> {run:,}" for asked, run in ramp.rounded)
        out.insert(0, f"batch ramp: a phase's batch runs as a whole number of micro-batches per data-parallel rank "
                   f"(dp {lay.dp} x micro-batch {lay.micro_batch} = {per:,} sequences), the nearest: {shown} "
                   f"sequences; Megatron-Core asserts the ramp's batch divides into micro_batch x dp "
                   f"(megatron/core/num_microbatches_calculator.py@core_v0.18.0 L381-388)")
    return tuple(out)


def schedule_note(inputs, plan, ramp) -> str:
    """'' unless a phase leaves the layout fewer micro-batches a step than the framework's pipeline schedule runs
    (the search's own rules for the steady batch, planner.space: Megatron-Core's interleaved schedule needs at least
    pp, schedules.py@core_v0.18.0 L1068-1076, framework_rules.interleaved_runs; torch.distributed.pipelining's,
    framework_rules.torch_pipeline_runs). The phase is timed as the step model runs it; the ranking does not
    exclude such a layout (planner.batch_ramp)."""
    from gpuplan.jobs.plan.search import space_limits
    from gpuplan.jobs.training.layout import with_budget_fields
    from gpuplan.planner.framework_rules import interleaved_runs, rules_for, torch_pipeline_runs

    lay = plan.layout
    if lay.pp == 1:
        return ""
    limits = space_limits(with_budget_fields(inputs))
    needs_pp = lay.vpp > 1 and (limits.interleaved_needs_pp_micro_batches or limits.combined_1f1b)
    torch_pp = rules_for(limits.framework).torch_pipelining
    bad = [run for run in ramp.run
           if (needs_pp and not interleaved_runs(lay.pp, lay.vpp, run // (lay.dp * lay.micro_batch),
                                                 limits.combined_1f1b))
           or (torch_pp and not bool(torch_pipeline_runs(lay.pp, lay.vpp, run // (lay.dp * lay.micro_batch))))]
    if not bad:
        return ""
    per = lay.dp * lay.micro_batch
    return (f"batch ramp: the {', '.join(f'{b:,}' for b in bad)}-sequence phase runs {bad[0] // per} micro-batch(es) a "
            f"step on {plan.text()}, fewer than --framework {limits.framework}'s pipeline schedule runs on pp {lay.pp} "
            f"(Megatron-Core's interleaved schedule: at least pp, schedules.py@core_v0.18.0 L1068-1076; "
            f"planner.framework_rules); timed as the step model runs it, the ranking does not exclude the layout")
