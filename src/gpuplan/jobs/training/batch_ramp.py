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


def ramp_notes(ramp, plan) -> tuple[str, ...]:
    """Where a phase's batch is not a whole number of micro-batches per data-parallel rank: what it runs at."""
    if ramp is None or not ramp.rounded:
        return ()
    per = plan.layout.dp * plan.layout.micro_batch
    shown = ", ".join(f"{asked:,.6g} -> {run:,}" for asked, run in ramp.rounded)
    return (f"batch ramp: a phase's batch runs as a whole number of micro-batches per data-parallel rank "
            f"(dp {plan.layout.dp} x micro-batch {plan.layout.micro_batch} = {per:,} sequences), the nearest: "
            f"{shown} sequences; Megatron-Core asserts the ramp's batch divides into micro_batch x dp "
            f"(megatron/core/num_microbatches_calculator.py@core_v0.18.0 L381-388)",)
