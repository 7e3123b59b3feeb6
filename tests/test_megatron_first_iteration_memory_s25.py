"""A Megatron memory line printed after the first iteration is that iteration's peak (session 25, helper ML).

Megatron-LM prints "[Rank N] (after N iterations) memory (MB) | allocated | max allocated ..." once, at the first logged
iteration (training.py@ba773259 training_log: ``report_memory_flag`` cleared after it; since 9927a85e also the line
after iteration 2): with --log-interval 1, after iteration 1. torch.cuda.max_memory_allocated() is then the peak of
iteration 1, whose forward and backward ran before the optimizer's first step created Adam's moments (apex / TE
FusedAdam and torch.optim fill state[p] inside step(); distrib_optimizer.py@ba773259 init_state_fn runs only when a
distributed checkpoint is loaded). So the line measures max(backward start - the moments, the optimizer step), not the
steady-state peak. tests/fixtures/logs/megatron_mixtral.log (NVIDIA/Megatron-LM#756, Mixtral 8x7B on 16 H100, the run's
own tp 2 / ep 8 / dp 8, ZeRO-1 distributed optimizer, 2,048 tokens) logs 52.98 GiB; calibrate refused it with
'activation_memory: got '0.0141'' before, fitting the steady-state 61.19 GiB backward peak to it.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from gpuplan.adapters.training_logs import parse_log_text
from gpuplan.calibrate import predict as P
from gpuplan.calibrate.fit import fit_calibration
from gpuplan.calibrate.measurement import Measurement
from gpuplan.calibrate.sources import LogContext, load_measurement
from gpuplan.errors import InputError

LOG = Path(__file__).parent / "fixtures" / "logs" / "megatron_mixtral.log"
RUN = LogContext(model="mixtral-8x7b", gpu="h100", gpus=16, tp=2, ep=8, zero=1, seq_len=2048)
FLAGS = ("--model", "mixtral-8x7b", "--gpu", "h100", "--gpus", "16", "--tp", "2", "--ep", "8", "--zero", "1",
         "--seq-len", "2048")
GiB = 2**30

# Mixtral 8x7B (hidden 4096, 32 layers, 8 experts of 3 x 4096 x 14336, 32 query / 8 KV heads of 128, vocab 32,000,
# untied head) at tp 2, ep 8 (expert TP = tp: Megatron-Core's default), dp 8, ZeRO-1 (the distributed optimizer):
EXPERT = 32 * 8 * 3 * 4096 * 14336 // 16  # one expert a GPU, halved by expert TP: 2,818,572,288
DENSE = (32 * ((2 * 4096 * 4096 + 2 * 4096 * 1024) // 2 + 4096 * 8 + 2 * 4096)  # attention / tp, router, 2 norms
         + 2 * 32000 * 4096 // 2 + 4096)  # embedding and head / tp, final norm: 803,475,456
# the moments: fp32 exp_avg + exp_avg_sq, 8 B a parameter; the dense ones sharded over dp 8, the experts over their
# expert-data-parallel group of 16 / (ep 8 x etp 2) = 1 GPU: (2,818,572,288 + 803,475,456 / 8) x 8 B = 21.748 GiB
MOMENTS = (EXPERT + DENSE // 8) * 8
# the model states after the step: bf16 weights 2 B + fp32 gradient buffer 4 B a held parameter, fp32 master 4 B +
# moments 8 B a sharded one: 6 x 3,622,047,744 + 12 x 2,919,006,720 = 56,760,367,104 B = 52.862 GiB
STATES = 6 * (EXPERT + DENSE) + 12 * (EXPERT + DENSE // 8)


def test_the_memory_line_s_iteration_is_read():
    m = load_measurement(LOG, RUN)
    assert m.memory_after_iteration == 1
    line = "[Rank {}] (after {} iterations) memory (MB) | allocated: 1 | max allocated: {} | reserved: 9 | max reserved: 9\n"
    steps = "".join(f" iteration {i}/ 100 | elapsed time per iteration (ms): 420.0 |\n" for i in (1, 2, 3))
    # the worst rank's line is the one read; equal peaks: the later line (torch's max is cumulative, since the start)
    log = parse_log_text(line.format(0, 1, 5) + line.format(1, 2, 5) + line.format(2, 1, 4) + steps, "m.log")
    assert log.meta["memory_after_iteration"] == 2
    log = parse_log_text(line.format(0, 1, 6) + line.format(1, 2, 5) + steps, "m.log")
    assert log.meta["memory_after_iteration"] == 1


def test_the_first_iteration_peak_by_hand():
    case = P.case_of(load_measurement(LOG, RUN))
    steady, first = P.memory_parts(case), P.memory_parts(case, first_iteration=True)
    assert first.moments == pytest.approx(MOMENTS, rel=1e-9) and MOMENTS / GiB == pytest.approx(21.748, abs=1e-3)
    assert first.states == pytest.approx(STATES, rel=1e-9) and STATES / GiB == pytest.approx(52.862, abs=1e-3)
    # iteration 1's backward holds no moments: 60.94 - 21.75 = 39.19 GiB, below the step's 52.86 GiB (the states:
    # Megatron's megatron recipe has no step buffers here), so the line's predicted peak is the step's. 60.94 GiB:
    # train's memory builder, which calibrate reads since session 26 (Megatron's vocab-parallel cross-entropy, the
    # framework's loss; 61.19 GiB with the log format's generic loss before)
    assert first.backward_start == pytest.approx(steady.backward_start - MOMENTS, rel=1e-9)
    assert first.backward_start / GiB == pytest.approx(39.19, abs=0.01) and not first.at_backward()
    assert first.peak() == pytest.approx(STATES, rel=1e-9) and steady.peak() / GiB == pytest.approx(60.94, abs=0.01)
    # the log's 54,250.986 MB is 0.22% above it (the steady-state prediction is 15.5% above the log)
    assert 54250.98583984375 * 2**20 / first.peak() - 1 == pytest.approx(0.0022, abs=2e-4)


def test_the_run_s_own_layout_calibrates_time_and_leaves_memory(run_cli):
    code, out, err = run_cli("calibrate", str(LOG), *FLAGS)
    assert code == 0, err  # was 2: "activation_memory: got '0.0141'"
    assert "memory not calibrated: its memory line is after 1 iteration" in out
    assert "(21.75 GiB a GPU)" in out and "(52.86 GiB, measured 52.98" in out
    code, out, err = run_cli("calibrate", str(LOG), *FLAGS, "--json")
    results = json.loads(out)["results"]
    # the time factor is the one the log fits with its memory left out (tests/test_mixtral_log_layout_s25.py: 2.04)
    alone = fit_calibration([replace(load_measurement(LOG, RUN), peak_memory_bytes=None)]).compute_time.value
    assert results["cal_compute_time"] == pytest.approx(alone, rel=1e-9) and alone == pytest.approx(2.04, abs=0.01)
    assert results["cal_activation_memory"] == 1.0
    cal = fit_calibration([load_measurement(LOG, RUN)])
    assert not cal.activation_memory.applied and not cal.memory_overhead.applied
    assert cal.measurements[0].used_for == ("time",)
    assert cal.measurements[0].memory_default_bytes == pytest.approx(STATES, rel=1e-9)


def test_a_later_line_keeps_the_steady_state_peak(run_cli, tmp_path):
    # the same line after iteration 2 (Megatron-LM since 9927a85e, or --log-interval 2): the moments exist, the steady
    # peak is predicted, which fits activation_memory 0.0145 (outside 0.1-10; 0.0141 before session 26's memory
    # builder): memory is dropped with a note naming it,
    # the time fit stands (it refused the whole calibration before)
    text = LOG.read_text().replace("(after 1 iterations)", "(after 2 iterations)", 1)
    path = tmp_path / "after2.log"
    path.write_text(text)
    m = load_measurement(path, RUN)
    assert m.memory_after_iteration == 2
    cal = fit_calibration([m])
    assert P.memory_parts(P.case_of(m)).moments is None and not cal.activation_memory.applied
    assert any(n.startswith(f"memory not calibrated: {path} fit activation_memory 0.0145, outside the 0.1-10")
               for n in cal.notes)
    assert cal.compute_time.value == pytest.approx(2.04, abs=0.01)
    code, out, err = run_cli("calibrate", str(path), *FLAGS)
    assert code == 0 and "fit activation_memory 0.0145" in out, err


def test_a_memory_only_fit_out_of_range_is_still_refused():
    # with no time fitted there is nothing to keep: the refusal stands (calibrate.fit._within_bounds)
    m = Measurement(source="m.csv", kind="table", model="llama-3.2-1b", seq_len=4096, world_size=1, gpu="h100-sxm")
    parts = P.memory_parts(P.case_of(m))
    high = parts.backward_start + 11 * parts.activations  # activation factor 12
    with pytest.raises(InputError) as caught:
        fit_calibration([replace(m, peak_memory_bytes=high, memory_kind="allocated")])
    assert caught.value.field == "activation_memory"
    step = P.step_parts(P.case_of(m), world_size=1).total
    cal = fit_calibration([replace(m, peak_memory_bytes=high, memory_kind="allocated", step_time_s=step)])
    assert not cal.activation_memory.applied and cal.compute_time.value == pytest.approx(1.0, rel=1e-6)
    assert any("fit activation_memory 12, outside the 0.1-10" in n for n in cal.notes)


def test_another_peak_still_fits_memory_beside_a_hidden_one():
    # a steady-state peak of the same run (a table: no iteration read) at 1.5x the predicted activations fits
    # activation_memory 1.5 on its own; the log's first-iteration peak is left out of the memory fit, said in a note
    log = load_measurement(LOG, RUN)
    steady = P.memory_parts(P.case_of(log))
    table = replace(log, source="t.csv", kind="table", step_time_s=None, memory_after_iteration=None,
                    peak_memory_bytes=steady.backward_start + 0.5 * steady.activations)
    cal = fit_calibration([log, table])
    assert cal.activation_memory.value == pytest.approx(1.5, rel=1e-9) and cal.activation_memory.sources == ("t.csv",)
    assert any(n.startswith(f"{LOG}: its peak not used for memory: its memory line is after 1 iteration")
               for n in cal.notes)
    assert [f.used_for for f in cal.measurements] == [("time",), ("memory",)]
