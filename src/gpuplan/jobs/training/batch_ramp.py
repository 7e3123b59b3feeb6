"""--batch-ramp on the chosen layout, as `train`, `budget` and `plan` answer it: the ramp's timing
(planner.batch_ramp), its report line 'batch ramp: x1.050 (phases ...)' and the note where a phase's batch
is rounded to a whole number of micro-batches per data-parallel rank."""

from __future__ import annotations

from gpuplan.report.model import Line
from gpuplan.schema.batch_ramp_field import typed_text

RAMP_FORMULA = ("(sum of phase tokens x s/token at the phase batch + the rest x s/token at the steady batch) / "
                "(tokens x s/token at the steady batch), same layout (planner/batch_ramp.py)")


def ramp_on(inputs, plan, evaluator=None, factor=None):
    """The RampTiming of ``inputs.batch_ramp`` on ``plan``'s layout; None without a ramp. ``factor``: the one its
    search table's row holds, timed there (planner.batch_ramp._row_factor), so `plan` does not time it again."""
    phases = inputs.ramp_phases() if hasattr(inputs, "ramp_phases") else []
    if not phases:
        return None
    from gpuplan.jobs.plan.search import evaluator_for
    from gpuplan.jobs.training.layout import with_budget_fields
    from gpuplan.planner.batch_ramp import ramp_at, ramp_timing

    if factor is not None:
        return ramp_at(float(factor), plan, phases)
    ev = evaluator if evaluator is not None else evaluator_for(with_budget_fields(inputs))
    return ramp_timing(ev, plan, float(inputs.tokens), phases)


def ramp_input(inputs) -> tuple[Line, ...]:
    """The inputs' echo of --batch-ramp, as typed (review w16 R6 N10); () without one."""
    phases = getattr(inputs, "batch_ramp", None)
    if not phases:
        return ()
    text = typed_text(phases)
    return (Line("batch_ramp", "batch ramp", text, text=text),)


def ramp_line(ramp, inputs, plan) -> Line:
    """'batch ramp: x1.050 (469B:3072-15360, then 15,360 sequences; steady MFU 40.6%)': the MFU line above it is
    the run's average, the steady one / the factor."""
    phases = ", ".join(p.text() for p in inputs.batch_ramp)
    return Line("batch_ramp", "batch ramp", ramp.factor, "x",
                f"x{ramp.factor:.3f} ({phases}, then {plan.global_batch:,} sequences; steady MFU {plan.mfu:.1%})",
                RAMP_FORMULA)


def ramp_notes(ramp, plan, inputs=None) -> tuple[str, ...]:
    """Where a phase's batch is not a whole number of micro-batches per data-parallel rank: what it runs at. (A
    layout one of whose phases the framework's pipeline schedule refuses is not ranked at all:
    planner.batch_ramp.phase_refused.)"""
    if ramp is None or not ramp.rounded:
        return ()
    lay = plan.layout
    per = lay.dp * lay.micro_batch
    pairs = [f"{asked:,.6g} -> {run:,}" for asked, run in ramp.rounded]  # a linear phase: 256 steps, shown in short
    shown = ", ".join(pairs) if len(pairs) <= 6 else \
        f"{', '.join(pairs[:3])}, ..., {pairs[-1]} ({len(pairs)} steps rounded)"
    return (f"batch ramp: a phase's batch runs as a whole number of micro-batches per data-parallel rank "
            f"(dp {lay.dp} x micro-batch {lay.micro_batch} = {per:,} sequences), the nearest (this tool's choice): "
            f"{shown} sequences; Megatron-Core does not round a schedule's batch, it asserts the batch divides into "
            f"micro_batch x dp (megatron/core/num_microbatches_calculator.py@core_v0.18.0 L580-587) and refuses "
            f"--decrease-batch-size-if-needed beside a --step-batch-size-schedule (L264-268): state the rounded "
            f"batch in the schedule",)
