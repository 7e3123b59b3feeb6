"""Mender MB (wave 12, review R3 N1): calibrate's MFU check reads the peaks a log's MFU is known to divide by before
it blames --model.

nanoGPT's estimate_mfu divides by the A100's 312e12 on any GPU (karpathy/nanoGPT model.py:301). A table transcribed
from an 8-H100 GPT-2 run (seq 1,024, 96.2% 'MFU', 2.79 M tokens/s) reads, hand-worked, 0.962 x 989.4e12 x 8 /
2.79e6 = 2.729e9 FLOPs per token over the H100's dense bf16 peak, 3.17x gpt2's count; over 312e12, 0.962 x 312e12 x
8 / 2.79e6 = 8.606e8, inside it. It was refused '3.19x off ... so --model ...'; it now calibrates with one note line
naming the convention. A true mismatch (table.csv, an 8B run, read as pythia-70m) is still refused in one line, naming
the nanoGPT peak among the candidates: asserted once, in tests/test_hostile_w12.py (section (f)), which runs that
same command.
"""

from types import SimpleNamespace

from gpuplan.calibrate.model_match import check_log_trained_model

NANOGPT_TABLE = "step,tokens_per_s,mfu\n10,2790000,96.2%\n20,2790000,96.2%\n30,2790000,96.2%\n"
FLAGS = ("--gpu", "h100", "--gpus", "8", "--seq-len", "1024")


def test_a_nanogpt_mfu_over_the_a100_peak_calibrates_with_a_note(run_cli, tmp_path):
    path = tmp_path / "nanogpt.csv"
    path.write_text(NANOGPT_TABLE)
    code, out, err = run_cli("calibrate", str(path), "--model", "gpt2", *FLAGS)
    notes = [line for line in out.splitlines() if "nanoGPT's A100 bf16 peak" in line]
    assert code == 0 and len(notes) == 1 and "2.729e+09 -> 8.606e+08" in notes[0], (out, err)


def test_an_mfu_with_no_peak_to_take_it_against_is_not_called_absent():
    record = SimpleNamespace(tflops_per_device=None, mfu=0.4, tokens_per_s=64_000.0, tokens_per_s_per_device=None,
                             step_time_s=None)
    log = SimpleNamespace(records=(record, record), source="t.csv", format="table")
    note = check_log_trained_model(log, "llama-3-8b", 8192, 8, 64, peak=None)
    assert "its MFU is not checked: --gpu has no dense peak at --dtype" in note
    assert "no logged TFLOP/s or MFU" not in note
