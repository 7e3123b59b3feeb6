"""Answers on a TPU say what a TPU run does (wave 16 A5, schema/tpu_rules.py): `train llama-3.1-8b --gpu tpu-v5p
--gpus 64` answered 'reserved + CUDA context + NCCL 75.67 GiB' under the megatron default, and `plan --explain` named
NCCL protocols ('ring / Simple'). Now the framework not stated is generic on a TPU (said in the assumptions), no
CUDA context, NCCL buffer or caching-allocator reserve is counted there (XLA allocates statically; its runtime's
reserve has no published size: openxla.org/xla/errors/error_1000), the explain table names XLA over ICI with the
algorithm only, and options that name a CUDA-only mechanism are refused in one line at every door."""

import re

import pytest
from helpers import four_door_refusal

from gpuplan import MemoryInputs, PlanInputs, TrainingInputs, estimate_memory, estimate_training, plan_report
from gpuplan.core.hardware import XLA_VENDOR
from gpuplan.core.memory.device_memory import NCCL_GROUP_BYTES_A100, Overheads, GiB
from gpuplan.errors import InputError
from gpuplan.jobs.plan.explain import XLA_COLUMN
from gpuplan.schema import device_rules, tpu_rules as X
from gpuplan.schema.device_rules import accelerator

pytestmark = pytest.mark.usefixtures("time_box")  # conftest: a hang fails the case, not the suite

ASK = {"model": "llama-3.1-8b", "gpu": "tpu-v5p", "gpus": 64, "tokens": "100B"}


def test_the_framework_not_stated_is_generic_on_a_tpu_and_megatron_elsewhere():
    assert TrainingInputs(**ASK).framework == "generic" and "framework" not in TrainingInputs(**ASK).given
    assert TrainingInputs(**{**ASK, "gpu": "h100"}).framework == "megatron"
    # a TPU only compared (memory --compare) leaves the --gpu part's default as it is (review w16 R4 M1)
    assert MemoryInputs(model="llama-3.1-8b", gpu="h100", compare="h100,tpu-v4").framework == "megatron"
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
    assert allocated == pytest.approx(_llama_31_8b_dp8_allocated(), rel=1e-12)  # the tensors' model, by hand
    assert r["overheads"] == 0 and r["peak_reserved"] == r["peak_total"] == allocated
    tpu, h100_sxm = (accelerator(name).memory_bytes for name in ("tpu-v5p", "h100"))  # the catalog's capacities
    assert (tpu, h100_sxm) == (95 * GiB, 85_520_809_984)
    assert r["headroom"] == pytest.approx(0.95 * tpu - allocated, abs=1)
    h100 = 0.95 * h100_sxm - (allocated * 1.12 + 0.5 * GiB + NCCL_GROUP_BYTES_A100 * 1.5)
    rows = {row[0]: row[3] for row in report.tables[0].rows}
    assert rows == {"tpu-v5p": "25.22 GiB", "h100-sxm": f"{h100 / GiB:.2f} GiB"} == {"tpu-v5p": "25.22 GiB",
                                                                                    "h100-sxm": "1.37 GiB"}
    labels = {line.key: line.label for section in report.sections for line in section.lines}
    assert (labels["overheads"], labels["peak_total"]) == (X.XLA_RUNTIME, X.XLA_TOTAL)
    assumptions = {a["key"]: a["value"] for a in report.to_dict()["assumptions"]}
    assert assumptions["runtime"] == "not modelled" and "cuda_context" not in assumptions


def _llama_31_8b_dp8_allocated() -> float:
    """llama-3.1-8b's allocated peak (bytes) at dp 8, ZeRO-1, micro-batch 1, s = 4,096, bf16 mixed precision, the
    megatron activation model with flash attention and HF's cross-entropy, at the start of backward: 69,826,156,544
    B. Its config.json: hidden 4,096, intermediate 14,336, vocabulary 128,256, 32 layers, 32 heads and 8 KV heads
    of 128. Per token of one layer (core.memory.activations.layer_activations, Korthikanti et al. 2022 Table 2 with
    the fused kernels): two RMSNorms' bf16 input + fp32 rstd 2 x (2h + 4) = 16,392; the fused norm+linear inputs of
    QKV and fc1 (2 + 2)h = 16,384; flash attention's q, k, v and output in bf16, 2 (h + 2 x 1,024 + h) = 20,480,
    and its fp32 logsumexp per head, 4 x 32 = 128; SwiGLU's gate, up and their product 3 x 2 x 14,336 = 86,016:
    139,400 B. Outside the layers (outside_layer_bytes): the final norm 2h + 4, bf16 logits 2V and fp32
    log-softmax 4V saved = 777,732 B, and at backward start the fp32 gradients 8V = 1,026,048 B."""
    h, f, v, layers, kv, seq = 4096, 14336, 128256, 32, 8 * 128, 4096
    # untied embedding and LM head, q and o, k and v, the gated MLP's three, two norms a layer, the final norm
    n = 2 * v * h + layers * (2 * h * h + 2 * h * kv + 3 * h * f + 2 * h) + h
    assert n == 8_030_261_248  # the catalog shape's count, as the report's model_states_total says
    states = 2 * n + 2 * n + (4 * n + 8 * n) / 8  # bf16 weights and grads; fp32 master and Adam over dp 8 (ZeRO-1)
    layer = 2 * (2 * h + 4) + (2 + 2) * h + 2 * (h + 2 * kv + h) + 4 * 32 + 3 * 2 * f
    outside, backward_temp = (2 * h + 4) + (2 + 4) * v, 2 * 4 * v
    return states + seq * (layers * layer + outside + backward_temp)


@pytest.mark.parametrize("job, route, extra, field, fragment", [
    ("train", "training", {"allocator": "expandable"}, "allocator", "PYTORCH_CUDA_ALLOC_CONF"),
    ("plan", "plan", {"model": "mixtral-8x7b", "ep_dispatcher": "flex"}, "ep_dispatcher", "give alltoall"),
    ("budget", "budget", {"model": "mixtral-8x7b", "cuda_graph_scope": "moe-router"}, "cuda_graph_scope",
     "the layers CUDA graphs capture"),
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


def test_a_tpu_only_compared_leaves_the_cuda_parts_answer_as_asked_and_says_how_the_rows_differ():
    """review w16 R4 M1: `memory --gpu h100 --gpus 8 --compare tpu-v4` answered 74.30 GiB, fits (generic), where
    `--gpu h100 --gpus 8` answers 86.66 GiB, does not fit (megatron). Now both answer megatron's, and the note says
    the TPU row is modelled under it (its own default: generic); the reverse ask says the same of the CUDA part."""
    ask = {"model": "llama-3.1-8b", "gpu": "h100", "gpus": 8}
    alone = estimate_memory(MemoryInputs(**ask, compare="h100")).to_dict()["results"]
    beside = estimate_memory(MemoryInputs(**ask, compare="h100,tpu-v4"))
    assert beside.to_dict()["results"]["peak_total"] == alone["peak_total"] and not alone["fits"]
    note = next(n for n in beside.notes if n.startswith("verdict table"))
    assert "--framework megatron" in note and "tpu-v4's own default is generic" in note, note
    reverse = estimate_memory(MemoryInputs(model="llama-3.1-8b", gpu="tpu-v4", gpus=8, compare="h100"))
    note = next(n for n in reverse.notes if n.startswith("verdict table"))
    assert "--framework generic" in note and "h100-sxm's own default is megatron" in note, note
    stated = estimate_memory(MemoryInputs(**ask, compare="h100,h200"))  # same defaults: no note
    assert not any(n.startswith("verdict table") for n in stated.notes)


ON_GENERIC = [  # (model, the option; each refused under generic on an H100 too, by the framework's own rule)
    ("llama-3.1-8b", {"recompute_layers": 2, "pp": 2, "recompute": "full"}),
    ("llama-3.1-8b", {"recompute_modules": "mlp", "recompute": "selective"}),
    ("llama-3.1-8b", {"compile": True}),
    ("llama-3.1-8b", {"fsdp_float8_all_gather": True, "dtype": "fp8"}),
    ("llama-3.1-8b", {"tp_comm_dtype": "fp32", "tp": 2}),
]


@pytest.mark.parametrize("model, extra", ON_GENERIC)
def test_a_cuda_frameworks_option_on_a_tpu_says_to_leave_it_out_not_to_give_a_framework_the_tpu_refuses(model, extra):
    """review w16 R4 M2: each of these answered 'give --framework megatron / torchtitan / deepspeed ...', which a TPU
    refuses in turn ('give --framework generic'). On a TPU the line names the framework as one that does not run
    there and what answers instead; the same option under generic on an H100 is refused by the framework's own
    rule (so the TPU line is no stricter than generic's)."""
    (field,) = [name for name, *_ in X.OTHER_FRAMEWORK_OPTIONS if name in extra]
    with pytest.raises(InputError) as tpu:
        TrainingInputs(**{**ASK, "model": model, **extra})
    assert tpu.value.field == field and "give --framework" not in str(tpu.value), str(tpu.value)
    assert "which does not run on a Google Cloud TPU v5p" in str(tpu.value) and "leave it out" in str(tpu.value)
    with pytest.raises(InputError) as h100:
        TrainingInputs(**{**ASK, "gpu": "h100", "framework": "generic", "model": model, **extra})
    assert h100.value.field == field and "give --framework" in str(h100.value), str(h100.value)
    if field == "recompute_layers":  # the neighbour it names answers on the TPU
        assert TrainingInputs(**{**ASK, "pp": 2, "recompute": "full"}).recompute == "full"


def test_flex_backend_and_cuda_graph_scope_on_a_tpu_say_what_they_are():
    """review w16 R4 M2 / S1: --flex-backend pointed to --framework megatron; --cuda-graph-scope said it 'captures
    CUDA graphs'. Their defaults (deepep, none) are answered as unstated since the review of wave 18
    (tests/test_hostile_w18.py); another value is refused saying what it is."""
    with pytest.raises(InputError) as flex:
        TrainingInputs(**{**ASK, "model": "mixtral-8x7b", "flex_backend": "hybridep"})
    assert "give --framework" not in str(flex.value) and "NVSHMEM" in str(flex.value)
    with pytest.raises(InputError) as scope:
        TrainingInputs(**{**ASK, "model": "mixtral-8x7b", "cuda_graph_scope": "moe-router"})
    assert "captures CUDA graphs" not in str(scope.value) and "changes nothing" in str(scope.value)
    for default in ({"flex_backend": "deepep"}, {"cuda_graph_scope": "none"}):
        assert TrainingInputs(**{**ASK, "model": "mixtral-8x7b", **default})


def test_tp_comm_overlap_answers_on_a_tpu_as_xlas_collective_matmul():
    """review w16 R4 M3: refused as 'Transformer Engine's userbuffers overlap'; XLA overlaps a TP collective with
    its matmul on a TPU (Wang et al. ASPLOS 2023; MaxText's windowed-einsum flags): it answers, and the explain
    row names it so."""
    ask = {**ASK, "model": "llama-3.1-70b", "tp": 4, "pp": 2, "tp_comm_overlap": True}
    table = next(t for t in plan_report(ask).tables if t.title.startswith("Communication per step"))
    tp_row = next(row for row in table.rows if row[0] == "TP")
    assert tp_row[1] == f"RS + AG (SP), {X.TP_OVERLAP_ON_TPU}" and XLA_COLUMN in table.columns
    assert XLA_COLUMN == "XLA collective: timed as NCCL's"  # heads DCN rows too (review w16 R4 N2)


def test_one_vendor_constant_says_which_parts_run_xla_and_the_runtime_line_says_what_it_leaves_unsized():
    """review w16 R4 S5 / S4: device_rules' and device_memory's copies of 'Google' are one (core.hardware); the
    memory line names the unsized parts openxla's error_1000 lists and that XLA's buffers may differ."""
    assert device_rules.TPU_VENDOR is XLA_VENDOR
    tpu, h100 = accelerator("tpu-v5p"), accelerator("h100")
    assert (tpu.runs_xla, h100.runs_xla) == (True, False) and X.is_tpu(tpu) and not X.is_tpu(h100)
    assert Overheads().on_device(tpu).xla and not Overheads().on_device(h100).xla
    for words in ("unsized", "assumed to fit inside the margin", "compiled binary", "buffer assignment"):
        assert words in X.XLA_RUNTIME_WHY


@pytest.mark.parametrize("job", ["train", "budget", "plan"])
def test_a_tpu_answer_counts_chips_and_a_gpu_answer_gpus(run_cli, job):
    """The answer-first lines (headline) of a TPU answer said 'GPU-hours', 'GPUs', 'on 64 GPUs' (w17 D item 10): on a
    TPU they say chips (schema.tpu_rules.device_noun, in_device_words: the one place), on an H100 GPUs as before;
    the JSON keys stay (gpu_hours_with_comm, gpus, best_gpus)."""
    flags = ("llama-3.1-8b", "--gpus", "64", "--tokens", "100B")
    answers = {}
    for gpu in ("tpu-v5p", "h100"):
        code, out, err = run_cli(job, *flags, "--gpu", gpu)
        assert code == 0, err
        answers[gpu] = out.split("\n\n")[0]  # the answer-first lines, before the tables and notes
    tpu, h100 = answers["tpu-v5p"], answers["h100"]
    hours = {"train": "chip-hours with comm allowance", "budget": "chip-hours budget",
             "plan": "chip-hours, failure-free"}[job]
    assert hours in tpu and re.search(r"^chips( used)? +64$", tpu, re.M), tpu
    assert not re.search(r"\bGPU", tpu.split("\n", 1)[1]), tpu  # the title names the part: 'Google Cloud TPU v5p'
    assert hours.replace("chip", "GPU") in h100 and "chip" not in h100, h100
    report = (plan_report if job == "plan" else estimate_training)({**ASK, "tokens": "100B"}).to_dict()["results"]
    assert ("best_gpus" if job == "plan" else "gpu_hours_with_comm") in report
