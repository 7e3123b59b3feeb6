"""One memory function: for 200 layouts the planner chose as fitting (25 a case; 2,000 until the ninth session, 800
until the tenth, 400 until the thirteenth, each cut to keep CI under 10 minutes), across models, GPUs, GPU
counts and sequence lengths, `gpuplan memory` of that layout reports the planner's figure
(within 0.1%; in fact the same number) and says it fits.

Since the thirteenth session the 25 of a case are not drawn blindly: first a greedy cover of every value each degree
takes among the case's fitting layouts (GPU count, TP, PP, VPP, CP, EP, ZeRO stage, micro-batch, recompute mode; 40
to 59 values a case, up to 24 micro-batches), then random fill. 50 random draws a case left 2 to 14 of those values
of a case unchecked (llama-2-7b: 45 of 59); the cover checks all of them with half the `gpuplan memory` runs
(~23 ms each on 2 cores: ~10 -> ~5 s)."""

import numpy as np
import pytest

from gpuplan.jobs.memory.estimate import estimate_memory
from gpuplan.jobs.memory.schema import MemoryInputs
from gpuplan.jobs.plan.schema import PlanInputs
from gpuplan.jobs.plan.search import evaluator_for, max_tp, space_limits
from gpuplan.planner.search import search_layouts
from gpuplan.planner.space import RECOMPUTE_MODES

CASES = [  # model, GPU, GPU counts, sequence length, recipe, implementation
    ("llama-3.1-8b", "h100", (8, 64), 4096, "mixed", "megatron"),
    ("llama-3.1-70b", "h100", (256, 1024), 8192, "megatron", "megatron"),
    ("llama-2-7b", "a100-sxm4-40gb", (16, 96), 4096, "bf16", "hf"),
    ("mixtral-8x7b", "h200-sxm", (64, 128), 4096, "mixed", "megatron"),
    ("qwen3-30b-a3b", "b200", (32,), 8192, "fsdp2", "torchtitan"),
    ("deepseek-v2-lite", "h100", (16, 48), 4096, "mixed", "megatron"),
    ("gemma-2-9b", "h100", (24,), 8192, "mixed", "hf"),
    ("llama-3.1-405b", "h100", (2048,), 8192, "megatron", "megatron"),
]
SAMPLES = 200
DEGREES = ("gpus", "tp", "pp", "vpp", "cp", "ep", "zero", "micro_batch", "recompute")


def _covering_sample(table, fits, size: int, rng) -> list[int]:
    """Indices into ``table`` (of the ``fits`` rows): a greedy cover of every value each of DEGREES takes among
    them (each pick the row holding most still-unseen values, ties at random), then random rows up to ``size``."""
    codes = [np.unique(np.asarray(table[k])[fits], return_inverse=True)[1] for k in DEGREES]
    unseen = [np.ones(c.max() + 1, dtype=bool) for c in codes]
    chosen: list[int] = []
    while any(u.any() for u in unseen):
        gain = sum(u[c].astype(np.int64) for u, c in zip(unseen, codes, strict=True))
        pick = int(rng.choice(np.flatnonzero(gain == gain.max())))
        chosen.append(pick)
        for u, c in zip(unseen, codes, strict=True):
            u[c[pick]] = False
    rest = np.setdiff1d(np.arange(len(fits)), chosen)
    chosen += rng.choice(rest, size=min(max(0, size - len(chosen)), len(rest)), replace=False).tolist()
    return [int(fits[i]) for i in chosen]


def _rows():
    rng = np.random.default_rng(0)
    per_case = -(-SAMPLES // len(CASES))
    for model, gpu, counts, seq_len, recipe, impl in CASES:
        inputs = PlanInputs(model=model, gpu=gpu, gpus=",".join(map(str, counts)), seq_len=seq_len, recipe=recipe,
                            implementation=impl)
        ev = evaluator_for(inputs)
        table = search_layouts(ev, counts, inputs.target_batch(seq_len), max_tp(ev), space_limits(inputs, True),
                               exhaustive=True)  # the framework's rules, as `plan` searches (jobs.plan.search)
        fits = np.flatnonzero(table["fits"])
        assert len(fits), model
        sample = _covering_sample(table, fits, per_case, rng)
        for k in DEGREES:  # every value a degree takes among the fitting layouts is checked
            assert set(np.asarray(table[k])[sample].tolist()) == set(np.asarray(table[k])[fits].tolist()), (model, k)
        for i in sample:
            yield inputs, {k: int(table[k][i]) for k in ("gpus", "tp", "pp", "vpp", "cp", "ep", "zero",
                                                            "micro_batch", "global_batch")}, \
                RECOMPUTE_MODES[int(table["recompute"][i])], float(table["total_bytes"][i])


def test_memory_of_the_chosen_layouts_equals_the_planners_figure():
    checked, worst = 0, 0.0
    for inputs, degrees, recompute, planner_bytes in _rows():
        report = estimate_memory(MemoryInputs(model=inputs.model, gpu=inputs.gpu, seq_len=inputs.seq_len,
                                              recipe=inputs.recipe, implementation=inputs.implementation,
                                              recompute=recompute, compare=inputs.gpu, **degrees))
        memory_bytes = report.value("peak_total")
        worst = max(worst, abs(memory_bytes / planner_bytes - 1))
        assert memory_bytes == pytest.approx(planner_bytes, rel=1e-3), degrees
        assert report.value("fits") is True, degrees
        checked += 1
    assert checked >= SAMPLES
    assert worst < 1e-9  # one function: the same arithmetic, not merely close
