"""One memory function: for 400 layouts the planner chose as fitting (50 a case; 2,000 until the ninth session, 800 until
the tenth, each cut to keep CI under 10 minutes), across models, GPUs, GPU
counts and sequence lengths, `gpuplan memory` of that layout reports the planner's figure
(within 0.1%; in fact the same number) and says it fits."""

import numpy as np
import pytest

from gpuplan.jobs.memory.estimate import estimate_memory
from gpuplan.jobs.memory.schema import MemoryInputs
from gpuplan.jobs.plan.schema import PlanInputs
from gpuplan.jobs.plan.search import evaluator_for, max_tp
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
SAMPLES = 400


def _rows():
    rng = np.random.default_rng(0)
    per_case = -(-SAMPLES // len(CASES))
    for model, gpu, counts, seq_len, recipe, impl in CASES:
        inputs = PlanInputs(model=model, gpu=gpu, gpus=",".join(map(str, counts)), seq_len=seq_len, recipe=recipe,
                            implementation=impl)
        ev = evaluator_for(inputs)
        table = search_layouts(ev, counts, inputs.target_batch(seq_len), max_tp(ev), exhaustive=True)
        fits = np.flatnonzero(table["fits"])
        assert len(fits), model
        for i in rng.choice(fits, size=per_case, replace=len(fits) < per_case):
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
