"""Answers on a TPU say what a TPU run does (wave 16 A5, schema/tpu_rules.py): `train llama-3.1-8b --gpu tpu-v5p
--gpus 64` answered 'reserved + CUDA context + NCCL 75.67 GiB' under the megatron default, and `plan --explain` named
NCCL protocols ('ring / Simple'). Now the framework not stated is generic on a TPU (said in the assumptions), no
CUDA context, NCCL buffer or caching-allocator reserve is counted there (XLA allocates statically; its runtime's
reserve has no published size: openxla.org/xla/errors/error_1000), the explain table names XLA over ICI with the
algorithm only, and options that name a CUDA-only mechanism are refused in one line at every door."""

import pytest
from helpers import four_door_refusal

from gpuplan import MemoryInputs, PlanInputs, TrainingInputs, estimate_memory, estimate_training, plan_report
from gpuplan.core.memory.device_memory import NCCL_GROUP_BYTES_A100, GiB
from gpuplan.jobs.plan.explain import XLA_COLUMN
from gpuplan.schema import tpu_rules as X

pytestmark = pytest.mark.usefixtures("time_box")  # conftest: a hang fails the case, not the suite

ASK = {"model": "llama-3.1-8b", "gpu": "tpu-v5p", "gpus": 64, "tokens": "100B"}


def test_the_framework_not_stated_is_generic_on_a_tpu_and_megatron_elsewhere():
    assert TrainingInputs(**ASK).framework == "generic" and "framework" not in TrainingInputs(**ASK).given
    assert TrainingInputs(**{**ASK, "gpu": "h100"}).framework == "megatron"
    # a TPU only compared (memory --compare) sets it too: the same rule device_rules refuses a stated CUDA one by
    assert MemoryInputs(model="llama-3.1-8b", gpu="h100", compare="h100,tpu-v4").framework == "generic"
    stated = PlanInputs(**ASK, framework="generic")
    assert stated.framework == "generic" and "framework" in stated.given


def test_the_answer_says_which_framework_and_what_the_memory_line_holds():
    report = estimate_training(ASK).to_dict()
    framework = next(a for a in report["assumptions"] if a["key"] == "framework")
    assert framework["value"] == "generic (TPU; megatron is the default on CUDA / ROCm parts)"
    assert not framework["user_set"]
    labels = {line.key: line.label for section in estimate_training(ASK).sections for line in section.lines}
    assert labels["mem_peak_total"] == X.XLA_TOTAL and "CUDA" not in labels["mem_peak_reserved"]
    stated = estimate_training({**ASK, "framework": "generic"}).to_dict()
    assert next(a for a in stated["assumptions"] if a["key"] == "framework")["value"] == "generic"


def test_plan_explain_names_xla_over_ici_with_no_nccl_protocol():
    table = next(t for t in plan_report(ASK).tables if t.title.startswith("Communication per step"))
    column = table.columns.index(XLA_COLUMN)
    rows = [row for row in table.rows if row[0] != "all"]
    assert rows and all("/" not in row[column] and row[column] in ("ring", "tree", "send/recv", "all-to-all")
                        for row in rows), rows
    assert all("chips" in row[column + 1] and "GPUs" not in row[column + 1] for row in rows), rows
    nvidia = next(t for t in plan_report({**ASK, "gpu": "h100"}).tables if t.title.startswith("Communication"))
    assert "NCCL algorithm / protocol" in nvidia.columns and " / " in nvidia.rows[0][4]
    moe = {a["key"]: a["value"] for a in plan_report({**ASK, "model": "mixtral-8x7b"}).to_dict()["assumptions"]}
    assert moe["ep_comm"] == "XLA all-to-all over ICI: one copy per remote expert; not overlapped"


def test_memory_on_a_tpu_counts_the_tensors_alone_and_a_cuda_part_beside_it_its_runtime():
    """Hand-worked, dp 8 (ZeRO-1) on a TPU v5p (102,005,473,280 B) and an H100 (85,520,809,984 B) in one table:
    the TPU needs its allocated peak A and keeps 0.95 x 102,005,473,280 - A; the H100 needs A x 1.12 (the caching
    allocator's reserve) + 0.5 GiB (CUDA context) + 1.032 GB (NCCL's 688 MB for a group of 8 x 1.5 on NVLink 4):
    with A = 69,826,156,544 B that is 27,079,043,072 B (25.22 GiB) and 1,470,603,244 B (1.37 GiB)."""
    report = estimate_memory(MemoryInputs(model="llama-3.1-8b", gpu="tpu-v5p", gpus=8, compare="h100"))
    r = report.to_dict()["results"]
    allocated = r["peak_allocated"]
    assert allocated == pytest.approx(69_826_156_544, rel=1e-6)  # the tensors' model, unchanged by the part
    assert r["overheads"] == 0 and r["peak_reserved"] == r["peak_total"] == allocated
    assert r["headroom"] == pytest.approx(0.95 * 102_005_473_280 - allocated, abs=1)
    h100 = 0.95 * 85_520_809_984 - (allocated * 1.12 + 0.5 * GiB + NCCL_GROUP_BYTES_A100 * 1.5)
    rows = {row[0]: row[3] for row in report.tables[0].rows}
    assert rows == {"tpu-v5p": "25.22 GiB", "h100-sxm": f"{h100 / GiB:.2f} GiB"} == {"tpu-v5p": "25.22 GiB",
                                                                                    "h100-sxm": "1.37 GiB"}
    labels = {line.key: line.label for section in report.sections for line in section.lines}
    assert (labels["overheads"], labels["peak_total"]) == (X.XLA_RUNTIME, X.XLA_TOTAL)
    assumptions = {a["key"]: a["value"] for a in report.to_dict()["assumptions"]}
    assert assumptions["runtime"] == "not modelled" and "cuda_context" not in assumptions


@pytest.mark.parametrize("job, route, extra, field, fragment", [
    ("train", "training", {"allocator": "expandable"}, "allocator", "PYTORCH_CUDA_ALLOC_CONF"),
    ("plan", "plan", {"model": "mixtral-8x7b", "ep_dispatcher": "flex"}, "ep_dispatcher", "give alltoall"),
    ("budget", "budget", {"model": "mixtral-8x7b", "cuda_graph_scope": "moe-router"}, "cuda_graph_scope",
     "captures CUDA graphs"),
    ("memory", "memory", {"cuda_context_gib": 1, "tokens": None}, "cuda_context_gib", "no CUDA context on a TPU"),
])
def test_a_cuda_only_option_on_a_tpu_is_refused_at_every_door(run_cli, client, tmp_path, job, route, extra, field,
                                                               fragment):
    ask = {k: v for k, v in {**ASK, **extra}.items() if v is not None}
    web = four_door_refusal(run_cli, client, tmp_path, job, route, ask, field, fragment)
    assert "which a Google Cloud TPU v5p does not run" in web


def test_the_same_options_answer_on_a_cuda_part_and_beside_a_tpu_only_compared():
    assert TrainingInputs(**{**ASK, "gpu": "h100", "allocator": "expandable"}).allocator == "expandable"
    assert MemoryInputs(model="llama-3.1-8b", gpu="h100", compare="tpu-v4", cuda_context_gib=1).cuda_context_gib == 1
