"""The load target (--rps with --ttft-p99 / --tpot) that no configuration the sizing searches can meet: refused in one
line naming the target and the fastest a catalog GPU type reaches, as `plan` refuses a deadline no layout meets with
the fastest (jobs.plan.deadline). Before (hostile wave 15) `infer --rps 1 --ttft-p99 1ms --tpot 1ms` answered
'configuration: none meets the target' with exit status 0 at every door.

A replica meets a target at some rate exactly when it meets it at a trickle (core.serving.load.max_rate asks first at
1e-6 requests/s; more replicas carry any rate), so the fastest reachable TTFT p99 and TPOT are each replica's at that
trickle: the server's hold + one prefill, and one decode step of one sequence. Units: seconds."""

from __future__ import annotations

import math

from gpuplan.core.serving import request_path as RP
from gpuplan.core.serving.load import LoadTarget, replica_at
from gpuplan.errors import InputError, whole_or

TRICKLE = 1e-6
"""Requests per second of the idle replica: max_rate's first probe (core.serving.load)."""


NONE = "no configuration (a replica within one NVLink domain, any catalog GPU type)"
"""What the sizing searches (jobs.inference.sizing: serving.search_tps, one scale-up domain per replica: tp 16 across
GB200 / GB300 NVL72 trays, the host elsewhere; every catalog GPU that serves the plan)."""


def _ms(seconds: float) -> str:
    """Milliseconds to 3 significant figures, rounded up, in plain digits (no thousands comma, no exponent: the
    latency parser refuses '3,490ms', review w14 R2 M6): a floor given back as typed is met."""
    ms = seconds * 1e3
    decimals = 2 - math.floor(math.log10(ms)) if ms > 0 else 0
    text = f"{math.ceil(ms * 10.0 ** decimals - 1e-9) / 10.0 ** decimals:.{max(0, decimals)}f}"
    return (text.rstrip("0").rstrip(".") if "." in text else text) + " ms"


def idle_latencies(plan, steps: dict[str, dict]) -> list[tuple[float, float, str]]:
    """(TTFT p99, TPOT, 'gpu tp N') of each (GPU type, TP) the sizing timed (``steps``: sizing.replica_steps_by_gpu)
    at a trickle of requests: the fastest each replica answers."""
    hold = RP.server_hold_seconds(plan.setup.runtime, plan.prompt)
    found = []
    for gpu_id, by_tp in steps.items():
        for tp, (prefill, decode, cap) in by_tp.items():
            load = replica_at(TRICKLE, prefill, decode, plan.output, cap, hold)
            if load is not None:
                found.append((load.ttft_p99, load.tpot, f"{gpu_id} tp {tp}"))
    return found


def check_target_met(inputs, plan, target: LoadTarget, steps: dict[str, dict]) -> None:
    """InputError when no (GPU type, TP) within one NVLink domain meets ``target`` even at a trickle (the sizing found no
    configuration): naming ttft_p99 or tpot and the fastest reachable, or rps where no GPU type holds one sequence."""
    idle = idle_latencies(plan, steps)
    if not idle and inputs.max_num_seqs is not None:
        from gpuplan.jobs.inference.sizing import refused_gpus

        if refused := refused_gpus(plan):
            raise InputError("max_num_seqs", inputs.max_num_seqs, "vLLM refuses it on every GPU type that holds "
                             f"the model ({'; '.join(refused)}: default max_num_batched_tokens below it); give "
                             "--prefill-tokens at least as large, or a smaller --max-num-seqs")
    if not idle and plan.setup.lora is not None and _fits_without_slots(plan):  # review R3 S4: the slots' own input
        lora = plan.setup.lora
        raise InputError("max_loras", lora.max_loras, f"{lora.max_loras:,} LoRA slots of rank {lora.rank} "
                         f"({slot_gb(plan)} GB before tensor parallelism) leave no catalog GPU type room for one "
                         f"{plan.context:,}-token sequence of {plan.spec.name} ({plan.setup.fmt.name}) within one "
                         "NVLink domain, which its weights alone leave: fewer or lower-rank slots (--max-loras, "
                         "--max-lora-rank)")
    if not idle:
        raise InputError("rps", whole_or(inputs.rps), "sizes replicas within one NVLink domain, and no catalog GPU type "
                         f"holds {plan.spec.name} ({plan.setup.fmt.name}) with one {plan.context:,}-token sequence"
                         f"{_lora_words(plan)}a smaller format (--quantization) or a shorter --context / --prompt")
    ttft, tpot = target.ttft_p99, target.tpot
    fastest_ttft = min(idle)
    if fastest_ttft[0] > ttft * (1 + 1e-9):
        raise InputError("ttft_p99", inputs.ttft_p99, f"{NONE} reaches it: the fastest TTFT p99 of a {plan.prompt:,}-"
                         f"token prompt is {_ms(fastest_ttft[0])} ({fastest_ttft[2]}, idle); give at least that, a "
                         "shorter prompt or a smaller format")
    fastest_tpot = min(idle, key=lambda row: row[1])
    if fastest_tpot[1] > tpot * (1 + 1e-9):
        raise InputError("tpot", inputs.tpot, f"{NONE} reaches it: the fastest time per output token is "
                         f"{_ms(fastest_tpot[1])} ({fastest_tpot[2]}, one sequence); give at least that or a smaller "
                         "format")
    within = [row for row in idle if row[0] <= ttft * (1 + 1e-9)]
    best = min(within, key=lambda row: row[1])
    raise InputError("tpot", inputs.tpot, f"{NONE} reaches it together with ttft_p99 {_ms(ttft)}: the fastest time "
                     f"per output token within that TTFT is {_ms(best[1])} ({best[2]}); give at least that, or a "
                     "looser --ttft-p99")


def _lora_words(plan) -> str:
    """The rest of the no-replica refusal's first clause and the LoRA slots' own remedy where --enable-lora sized them
    (hostile wave 23: `--max-loras 4096 --max-lora-rank 512` on llama-3.1-8b, 11 TB of slots, was told only a smaller
    format or a shorter prompt, neither of which frees them); their size at tp 1 (core.serving.lora.slot_bytes_per_gpu,
    split over tp ranks)."""
    lora = plan.setup.lora
    if lora is None:
        return " on one such replica: "
    from gpuplan.core.serving.lora import slot_bytes_per_gpu

    return (f" and {lora.max_loras:,} LoRA slots of rank {lora.rank} ({slot_gb(plan)} GB before tensor parallelism) on "
            "one such replica: fewer or lower-rank slots (--max-loras, --max-lora-rank), ")


def slot_gb(plan) -> str:
    """The LoRA slots' GB at tp 1 (core.serving.lora.slot_bytes_per_gpu), as the refusals word it (gb_text:
    3 significant figures, whole GB from 10 on)."""
    from gpuplan.core.serving.lora import slot_bytes_per_gpu
    from gpuplan.jobs.inference.memory_report import gb_text

    return gb_text(slot_bytes_per_gpu(plan.spec, plan.setup.lora, 1))


def _fits_without_slots(plan) -> bool:
    """Whether some GPU type and TP the sizing searches holds one sequence of ``plan`` without its LoRA slots
    (serving.max_sequences_at, as sizing._tp_steps asks it): then the slots alone leave no replica."""
    from dataclasses import replace

    from gpuplan.jobs.inference.resolve import plan_on_gpu
    from gpuplan.jobs.inference.serving import max_sequences_at, search_tps, serving_gpus

    bare = replace(plan, setup=replace(plan.setup, lora=None))
    for gpu in serving_gpus(bare):
        on_gpu = plan_on_gpu(bare, gpu)
        for tp in search_tps(gpu):
            try:
                if max_sequences_at(on_gpu, gpu, tp) >= 1:
                    return True
            except InputError:  # tp does not divide the heads
                continue
    return False
