"""Training-log import (gpuplan.adapters.training_logs) on real excerpts in tests/fixtures/logs
(sources in its README). Every expected number is read off the fixture lines, with the
arithmetic shown; tolerances are float round-off unless stated."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuplan.adapters.training_logs import (
    GiB,
    MiB,
    parse_log_text,
    read_training_log,
    summarize,
)
from gpuplan.errors import InputError

LOGS = Path(__file__).parent / "fixtures" / "logs"


def test_torchtitan_rank_prefixed_lines():
    log = read_training_log(LOGS / "torchtitan_rank0.log")
    assert log.format == "torchtitan"
    assert [r.step for r in log.records] == [14, 15, 16, 17, 18]
    first = log.records[0]
    # "memory:  9.46GiB(64.99%)  tps: 7,282  tflops: 0.52  mfu: 0.17%"
    assert first.memory_bytes == pytest.approx(9.46 * 2**30)
    assert first.memory_kind == "reserved"  # torchtitan prints max_reserved_gib
    assert first.tokens_per_s_per_device == 7282
    assert first.tflops_per_device == pytest.approx(0.52)
    assert first.mfu == pytest.approx(0.0017)
    assert first.loss == pytest.approx(3.24405)
    s = summarize(log)
    # step 14 skipped (warm-up); median of tps 7,334 7,313 7,282 7,322 = (7,313 + 7,322) / 2
    assert s.skipped == 1 and s.records_used == 4
    assert s.tokens_per_s_per_device == pytest.approx(7317.5)
    assert s.step_time_s is None  # torchtitan logs no step time: derived later from tokens per step


def test_torchtitan_duplicate_lines_from_several_ranks_are_one_record():
    log = read_training_log(LOGS / "torchtitan_all_ranks.log")
    # three identical-step lines for step 4 (the first kept: tflops 314.71) and one for step 5
    assert [r.step for r in log.records] == [4, 5]
    assert log.records[0].tflops_per_device == pytest.approx(314.71)
    assert log.records[1].tokens_per_s_per_device == 10007
    assert log.records[1].mfu == pytest.approx(0.1393)


def test_torchtitan_ansi_colours_and_validation_lines():
    text = ("\x1b[31mstep:  2  \x1b[32mloss:  7.0000  \x1b[38;2;54;234;195mmemory: 12.00GiB(15.00%)  "
            "\x1b[34mtps: 1,000  \x1b[36mtflops: 10.00  \x1b[35mmfu: 1.00%\x1b[39m\n"
            "validate step:  2  loss:  7.5000  memory: 13.00GiB(16.00%)  tps: 900\n")
    log = parse_log_text(text, "colour.log")
    assert len(log.records) == 1  # the validation line is not a training step
    r = log.records[0]
    assert (r.step, r.tokens_per_s_per_device, r.memory_bytes) == (2, 1000, 12 * GiB)


def test_megatron_iteration_and_memory_lines():
    log = read_training_log(LOGS / "megatron_mixtral.log")
    assert log.format == "megatron"
    assert [r.step for r in log.records] == [2, 3, 43, 44, 45]
    assert log.records[0].step_time_s == pytest.approx(5.6301)  # 5630.1 ms
    assert log.records[0].tflops_per_device == pytest.approx(231.9)
    assert log.records[0].loss == pytest.approx(2.021530)
    assert log.meta["global_batch"] == 128
    # "[Rank 1] ... max allocated: 54250.98583984375 | ... | max reserved: 61480.0", MB = 2**20 bytes
    assert log.meta["memory_bytes"] == pytest.approx(54250.98583984375 * MiB)
    assert log.meta["memory_kind"] == "allocated"
    assert log.meta["memory_reserved_bytes"] == pytest.approx(61480.0 * MiB)
    s = summarize(log)
    # iteration 2 skipped; median of 5410.6, 5444.9, 5533.8, 5718.6 ms = (5444.9 + 5533.8) / 2
    assert s.step_time_s == pytest.approx(5.48935)
    assert s.memory_bytes == pytest.approx(54250.98583984375 * MiB)


def test_megatron_2020_format_without_rank_or_throughput():
    log = read_training_log(LOGS / "megatron_2020.log")
    assert [r.step for r in log.records] == [5, 10, 15]
    assert all(r.tflops_per_device is None for r in log.records)
    assert log.meta["memory_bytes"] == pytest.approx(12606.06201171875 * MiB)
    assert summarize(log).step_time_s == pytest.approx((1.9939 + 1.9781) / 2)


def test_megatron_memory_is_the_worst_rank():
    text = ("[Rank 0] (after 10 iterations) memory (MB) | allocated: 1.0 | max allocated: 100.0 | reserved: 2.0 | "
            "max reserved: 200.0\n[Rank 8] (after 10 iterations) memory (MB) | allocated: 1.0 | max allocated: 300.0 | "
            "reserved: 2.0 | max reserved: 400.0\n"
            " iteration       10/     100 | elapsed time per iteration (ms): 1000.0 | global batch size:    64 |\n")
    log = parse_log_text(text, "ranks.log")
    assert log.meta["memory_bytes"] == 300.0 * MiB
    assert log.meta["memory_reserved_bytes"] == 400.0 * MiB


def test_hf_trainer_state_subtracts_evaluation_time():
    log = read_training_log(LOGS / "hf_trainer_state.json")
    assert log.format == "hf-trainer"
    # train_runtime 21062.2956 s covers evaluation too: minus eval_runtime 94.0983 + 93.5443 (the two
    # evaluations kept in the excerpt), over global step 2907
    assert log.meta["eval_seconds"] == pytest.approx(94.0983 + 93.5443)
    assert log.records[0].step_time_s == pytest.approx((21062.2956 - 187.6426) / 2907)
    # 8.826 samples/s / 0.138 steps/s = 63.96 -> 64 sequences per optimizer step
    assert log.meta["global_batch"] == 64
    assert log.records[0].loss == pytest.approx(0.3322)


def test_hf_printed_dicts():
    log = read_training_log(LOGS / "hf_printed.log")
    assert log.format == "hf-trainer"
    # no 'step' in the dicts: 116.1914 s x 1.721 steps/s = 199.97 -> 200 steps
    assert log.meta["steps"] == 200
    assert log.records[0].step_time_s == pytest.approx(116.1914 / 200)
    assert log.meta["global_batch"] == 4  # 6.885 / 1.721 = 4.0
    assert log.records[0].loss == pytest.approx(2.5744)


def test_hf_printed_dicts_with_string_values():
    # transformers 5 prints the values as strings
    log = read_training_log(LOGS / "hf_printed_strings.log")
    assert log.meta["steps"] == 200  # 1615 x 0.124 = 200.26
    assert log.records[0].step_time_s == pytest.approx(1615 / 200)
    assert log.meta["global_batch"] == 2  # 0.248 / 0.124


def test_table_csv_and_json():
    log = read_training_log(LOGS / "table.csv")
    assert log.format == "table"
    assert [r.step for r in log.records] == [10, 20, 30, 40]
    assert log.records[0].mfu == pytest.approx(0.38)  # "38%"
    assert log.records[0].memory_bytes == pytest.approx(61.2 * GiB)
    s = summarize(log)
    assert s.step_time_s == pytest.approx(2.02)  # median of 2.02, 2.00, 2.04
    assert s.tokens_per_s == pytest.approx(64887)
    assert s.memory_bytes == pytest.approx(62.0 * GiB)  # the largest logged peak, warm-up included
    j = summarize(read_training_log(LOGS / "table.json"))
    assert j.step_time_s == pytest.approx(0.5)  # median of 0.498, 0.502
    lines = parse_log_text('{"step": 1, "memory_reserved_gib": 2}\n{"step": 2, "memory_reserved_gib": 3}\n', "t.jsonl")
    assert lines.records[1].memory_kind == "reserved" and lines.records[1].memory_bytes == 3 * GiB


@pytest.mark.parametrize("name, text, fragment", [
    ("missing.log", None, "no such file"),
    ("shopping.txt", "eggs, flour\nmilk\n", "is not a format gpuplan recognises"),
    ("bad.csv", "step,step_time_s\n1,fast\n", "row 1, column 'step_time_s': 'fast' is not a number"),
    ("extra.csv", "step,step_time_s,colour\n1,2.0,red\n", "unknown column(s) colour"),
    ("empty.csv", "step,step_time_s\n1,\n", "row 1 has no step_time_s, tokens_per_s or memory_gib"),
    ("ckpt.json", '{"global_step": 10, "log_history": [{"loss": 1.0, "step": 10}]}', "no final 'train_runtime'"),
    ("other.json", '{"hello": "world"}', "neither a trainer_state.json nor a table"),
    ("broken.json", '{"step": 1,', "is not valid JSON"),
    ("titan.log", "step: 3  loss: 2.0  grad_norm: 1.0\n", "neither 'tps:' nor 'memory:'"),
])
def test_unreadable_logs_name_the_file_and_what_was_expected(tmp_path, name, text, fragment):
    path = tmp_path / name
    if text is not None:
        path.write_text(text)
    with pytest.raises(InputError) as err:
        read_training_log(path)
    assert str(path) in str(err.value) and fragment in str(err.value)


def test_binary_file_is_refused(tmp_path):
    path = tmp_path / "events.out.tfevents"
    path.write_bytes(b"\x00\x01\x02binary")
    with pytest.raises(InputError, match="is binary"):
        read_training_log(path)
