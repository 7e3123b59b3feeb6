"""The serving sizing's step times of one replica (jobs/inference/sizing.py): one prompt's prefill and the decode
step as a function of the batch, each batch timed once and kept across answers (core.serving.step_memo), and the
NCCL all-reduces their steps ask for, evaluated in one vectorised pass. Units: seconds, sequences, bytes."""

from __future__ import annotations

from collections.abc import Mapping

from gpuplan.core.hardware import Accelerator
from gpuplan.core.serving import kernels as KR
from gpuplan.core.serving import kv_cache as K
from gpuplan.core.serving import roofline as R
from gpuplan.core.serving import step_memo as SM


def step_times(plan, gpu: Accelerator, tp: int, max_batch: int = 0):
    """(prefill seconds of one prompt, decode-step seconds as a function of the batch) of ``plan`` (resolve.Plan) at
    ``tp`` on ``gpu``. The NCCL all-reduces of the decode steps at batches 1..``max_batch`` are evaluated in one
    vectorised pass the first time a decode step needs one kernels does not hold; each step hands kernels its own
    before it is timed (hand_allreduces), so no step evaluates one alone (~0.5 ms each). The prefill's, where kernels
    does not hold them, in a pass of their own here (until session 23 they joined the decode steps' pass, then made
    here): the sizing times the decode steps of fewer (GPU type, TP) than it times prefills (sizing.size_for_target's
    cheapest_per_type), and a pass over a few messages is ~0.5 ms against ~1.3 ms over a cap of 1,024."""
    spec, setup = plan.spec, plan.setup
    layout = K.kv_layout(spec, setup.kv_bytes, tp, 1, setup.block_size)
    kv_seq = layout.bytes_per_sequence(plan.decode_context)
    # the rate search asks for the same integer batches again and again, and another answer on the same replica
    # (another rate or target) for the same steps: remembered by every input of the step (core.serving.step_memo)
    remembered = SM.decode_table((spec, plan.groups, setup, kv_seq, plan.decode_context, tp, gpu))
    fabric = KR.collective_fabric(gpu, setup.runtime.p2p) if tp > 1 else None  # what tp_allreduce_seconds asks about
    if remembered.primed_to < max_batch:  # the seconds evaluated when first needed (_evaluate)
        SM.drop_allreduces(remembered)
        remembered.primed_to = max_batch
    prefills = R.prefill_allreduce_messages(spec, setup, gpu, plan.prompt) if fabric is not None else ()
    missing = list(dict.fromkeys(m for m in prefills if not KR.nccl_all_reduce_known(m, tp, fabric)))
    for message, seconds in zip(missing, KR.nccl_all_reduce_values(missing, tp, fabric) if missing else ()):
        KR.remember_nccl_all_reduce(message, tp, fabric, seconds)
    table = remembered.steps
    common = dict(tp=tp, pp=1, **R.gpu_keywords(gpu, setup))
    prefill = R.prefill_step(spec, plan.groups, setup, prompt=plan.prompt, **common).total

    def decode(batch: int) -> float:
        found = table.get(batch)
        if found is None:
            if fabric is not None and batch <= remembered.primed_to:
                hand_allreduces(remembered, spec, setup, tp, fabric, batch)
            found = table[batch] = R.decode_step(spec, plan.groups, setup, kv_seq, batch=batch,
                                                 context=plan.decode_context, **common).total
        return found

    return prefill, decode


def hand_allreduces(remembered: SM.DecodeTable, spec, setup, tp: int, fabric: Accelerator, batch: int) -> None:
    """Before the decode step at ``batch`` is timed: each of its NCCL all-reduce messages
    (roofline.decode_allreduce_messages, worked out again here: not kept) kernels does not hold, handed over from the
    table's one pass (_evaluate).
    Before, the sizing put those of every batch 1..cap in kernels' table up front (~72,000 keys an answer, most never
    read: ~0.2 s of hashing the part into keys)."""
    for message in R.decode_allreduce_messages(spec, setup, (batch,))[0]:
        if not KR.nccl_all_reduce_known(message, tp, fabric):
            if remembered.allreduces is None:
                _evaluate(remembered, spec, setup, tp, fabric)
            KR.remember_nccl_all_reduce(message, tp, fabric, remembered.allreduces[message])


def _evaluate(remembered: SM.DecodeTable, spec, setup, tp: int, fabric: Accelerator) -> None:
    """One vectorised pass (kernels.nccl_all_reduce_values: the same floats as a scalar evaluation, bit for bit) over
    the messages of the decode steps at batches 1..primed_to, kept as ``remembered.allreduces`` (message bytes ->
    seconds), bounded over every table (step_memo.ALLREDUCES_LIMIT)."""
    messages = list(dict.fromkeys(
        m for step in R.decode_allreduce_messages(spec, setup, range(1, remembered.primed_to + 1)) for m in step))
    SM.keep_allreduces(remembered, dict(zip(messages, KR.nccl_all_reduce_values(messages, tp, fabric))))


class ReplicaSteps(Mapping):
    """The step times of one GPU type's replicas by TP: ``caps`` (TP -> the sequences a replica schedules, >= 1: the
    TPs that run) in order, each TP's (prefill seconds, decode step(batch), cap) (step_times) timed when first read
    and kept. The colocated sizing reads only the TPs it does not skip (sizing.size_for_target's cheapest_per_type:
    one that cannot take fewer GPUs than a smaller TP kept times no prefill); iterating items() times every TP."""

    def __init__(self, plan, gpu: Accelerator, caps: dict[int, int]) -> None:
        self.plan, self.gpu, self.caps, self.timed = plan, gpu, caps, {}

    def __getitem__(self, tp: int) -> tuple:
        found = self.timed.get(tp)
        if found is None:
            cap = self.caps[tp]  # KeyError for a TP that does not run
            found = self.timed[tp] = (*step_times(self.plan, self.gpu, tp, cap), cap)
        return found

    def __iter__(self):
        return iter(self.caps)

    def __len__(self) -> int:
        return len(self.caps)
