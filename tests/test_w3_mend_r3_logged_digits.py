"""Every logged number read by `gpuplan calibrate` is refused the same way where it is not written in ASCII
digits (review w10 r3 S4: a28b391 refused a full-width digit only in memory; 'tps: １000' and 'loss: ８.5' read
as missing). adapters.training_logs._field / _logged: one line naming the field and the log, exit 2."""

import pytest

from gpuplan.adapters.training_logs import parse_hf_entries, parse_megatron, parse_torchtitan
from gpuplan.errors import InputError

TITAN = "step: 10  loss: {loss}  memory: 60.00GiB(75.00%)  tps: {tps}  tflops: 300.5  mfu: 31.0%"
MEGA = (" [2024-01-01] iteration       10/     100 | consumed samples: 640 | elapsed time per iteration (ms): {ms} |"
        " learning rate: 1.0E-04 | global batch size:    64 | lm loss: {loss} | throughput per GPU (TFLOP/s/GPU): 400.0 |")


@pytest.mark.parametrize("tps,loss,field,value", [("１000", "8.5", "tps", "１000"), ("1000", "８.5", "loss", "８.5")])
def test_torchtitan_full_width_digit_is_refused_by_name(tps, loss, field, value):
    with pytest.raises(InputError) as caught:
        parse_torchtitan(TITAN.format(tps=tps, loss=loss), "run.log")
    assert caught.value.field == field and caught.value.value == value and "in run.log" in str(caught.value)
    ascii_log = parse_torchtitan(TITAN.format(tps="1000", loss="8.5"), "run.log")
    assert ascii_log.records[0].tokens_per_s_per_device == 1000 and ascii_log.records[0].loss == 8.5


def test_megatron_full_width_digit_is_refused_by_name():
    with pytest.raises(InputError) as caught:
        parse_megatron(MEGA.format(ms="1200.0", loss="２.5"), "mega.log")
    assert caught.value.field == "lm loss" and "in mega.log" in str(caught.value)
    assert parse_megatron(MEGA.format(ms="1200.0", loss="2.5"), "mega.log").records[0].step_time_s == 1.2


def test_hf_trainer_loss_text_is_refused_by_name():
    final = {"train_runtime": 100.0, "train_steps_per_second": 1.0, "train_samples_per_second": 8.0, "step": 100}
    with pytest.raises(InputError) as caught:
        parse_hf_entries([{"loss": "３.2", "step": 50}, final], "trainer_state.json")
    assert caught.value.field == "loss" and "trainer_state.json" in str(caught.value)
    assert parse_hf_entries([{"loss": 3.2, "step": 50}, final], "t.json").records[0].loss == 3.2


def test_calibrate_cli_exits_2_with_one_line(tmp_path, capsys):
    from gpuplan.cli import main

    log = tmp_path / "run.log"
    log.write_text(TITAN.format(tps="１000", loss="8.5") + "\n", encoding="utf-8")
    code = main(["calibrate", str(log), "--model", "llama-3.1-8b", "--gpu", "h100", "--gpus", "8", "--seq-len", "4096", "--micro-batch", "1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "tps: got" in err[0] and "run.log" in err[0], err
