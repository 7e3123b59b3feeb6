"""A TPU answer's device noun past the line labels (review w17 of b2ef15fc, M2 / S2; mender MD).

b2ef15fc reworded a TPU answer's labels to 'chips' at source (schema.tpu_rules.in_device_words), which the Chinese
translation (report.i18n.translate_report) no longer matched: 'chips', 'chip-hours with comm allowance', 'dense bf16
peak per chip' came out in English, and key-translated labels still said GPU. Now the translation reads the report's
device_noun, puts 'chip' back to 'GPU' to find the catalog's words and then writes 芯片; a TPU's own XLA labels have
their own entries (catalog tpu_lines). Titles, columns, formulas and notes read 'chip' at render time
(report.device_words.for_display) while the JSON keeps its keys. A GPU answer is untouched.
"""

from __future__ import annotations

import re

import pytest

from gpuplan import MemoryInputs, PlanInputs, TrainingInputs, estimate_memory, estimate_training, plan_report
from gpuplan.report import plain
from gpuplan.report.device_words import for_display
from gpuplan.report.i18n import translate_report
from gpuplan.schema import tpu_rules as X

TPU = {"model": "llama-3.1-8b", "gpu": "tpu-v5p", "gpus": 64, "tokens": "1T"}


def _labels(report):
    """Every label and title a reader sees: inputs, assumptions, section titles and their lines, tables."""
    yield report.title
    yield from (item.label for item in (*report.inputs, *report.assumptions))
    for section in report.sections:
        yield section.title
        yield from (line.label for line in section.lines)
    for table in report.tables:
        yield table.title
        yield from table.columns


@pytest.fixture(scope="module")
def tpu_train():
    return estimate_training(TrainingInputs(**TPU))


def test_a_zh_tpu_train_report_has_no_english_label_and_no_gpu(tpu_train):
    """Each label is Chinese (an all-ASCII label only as an acronym: 'MFU') and none says GPU or CUDA."""
    zh = translate_report(tpu_train, "zh")
    shown = list(_labels(zh))
    assert [s for s in shown if "GPU" in s or "CUDA" in s] == []
    assert [s for s in shown if re.fullmatch(r"[\x00-\x7f]*", s) and not s.isupper()] == []
    lines = {line.key: line.label for s in zh.sections for line in s.lines}
    # the labels the review found in English, and the key-translated ones that said GPU
    assert (lines["gpus"], lines["gpu_hours_with_comm"], lines["gpu_hours"]) == ("芯片数", "含通信余量的芯片·小时",
                                                                               "芯片·小时")
    assert lines["peak_flops"] == "每芯片稠密 bf16 峰值"
    assert lines["mem_peak_total"] == "所需显存（张量；XLA 运行时未建模）"  # not the CUDA parts' '预留 + CUDA 上下文 + NCCL'


def test_a_zh_tpu_memory_report_words_its_xla_lines(tmp_path):
    """memory's keyed peak_total / overheads labels on a TPU (with a calibration's overhead): their own zh entries."""
    report = estimate_memory(MemoryInputs(model="llama-3.1-8b", gpu="tpu-v5p", gpus=8))
    lines = {line.key: line.label for s in translate_report(report, "zh").sections for line in s.lines}
    assert (lines["peak_total"], lines["overheads"]) == ("所需显存（张量；XLA 运行时未建模）", "XLA 运行时（未建模）")
    assert lines["peak_allocated"] == "已分配峰值（张量）"


def test_a_gpu_report_translates_as_before():
    """An H100's answer: no device_noun in its JSON, its zh labels by key as the catalog has them."""
    report = estimate_training(TrainingInputs(**{**TPU, "gpu": "h100"}))
    assert "device_noun" not in report.to_dict() and for_display(report) is report
    lines = {line.key: line.label for s in translate_report(report, "zh").sections for line in s.lines}
    assert (lines["gpus"], lines["gpu_hours"], lines["mem_peak_total"]) == ("GPU 数", "GPU·小时",
                                                                          "预留 + CUDA 上下文 + NCCL")


def test_plan_titles_and_columns_read_chips_when_shown_not_in_json():
    """S2: plan's top-10 table title ('fewest GPUs within 1%') and columns (GPUs, peak/GPU) read chips on the
    screen; the JSON keeps its record keys and table title, and says device_noun 'chip'."""
    report = plan_report(PlanInputs(**TPU))
    data = report.to_dict()
    assert data["device_noun"] == "chip"
    (title, records), = ((t, r) for t, r in data["tables"].items() if t.startswith("top 10 layouts"))
    assert "fewest GPUs within 1%" in title and {"GPUs", "peak/GPU"} <= set(records[0])
    shown = for_display(report)
    table, = (t for t in shown.tables if t.title.startswith("top 10 layouts"))
    assert "fewest chips within 1%" in table.title and {"chips", "peak/chip"} <= set(table.columns)
    text = "\n".join(plain.summary_lines(shown))
    assert "GPU" not in text.replace("H100", "")  # the answer-first view found its table by the reworded title
    assert "peak/chip" in text


def test_the_budget_still_finds_its_time_section_on_a_tpu():
    """budget.estimate looks its sections up by the English 'GPU time' title, which stays at source."""
    from gpuplan import BudgetInputs, estimate_budget

    report = estimate_budget(BudgetInputs(model="llama-3.1-8b", gpu="tpu-v5p", tokens="1T", days=10))
    assert any(s.title == "GPU time" for s in report.sections)
    assert any(s.title == "chip time" for s in for_display(report).sections)
    assert X.device_noun(None) == "GPU"
