"""memory's activations line says when the peak it reads holds none (session 24, from the README walk-through): the
article's 7B at micro-batch 1 peaks at the optimizer step, where the step's activations are already freed."""

from gpuplan.jobs.memory.estimate import estimate_memory
from gpuplan.jobs.memory.schema import MemoryInputs


def _activations(**kw):
    report = estimate_memory(MemoryInputs(params=7e9, recipe="article", gpu="a100", **kw))
    return report.line("peak_activations")


def test_activations_at_an_optimizer_step_peak_say_so():
    line = _activations()
    assert line.value == 0 and line.label == "activations held at the peak (optimizer step)"
    assert "freed" in line.formula


def test_activations_at_a_backward_peak_keep_their_plain_label():
    # micro-batch 2 moves the peak into the backward, where the activations are held (32.16 GiB here)
    line = _activations(micro_batch=2)
    assert line.value > 30 * 2**30 and line.label == "activations"
