"""`infer` on a TPU (w16 B3, jobs/inference/tpu_serving.py): `infer llama-3-8b --gpu tpu-v6e` answered 'CUDA-graph
memory 0.63 GiB', 'non-torch 0.25 GiB', 'memory not visible to CUDA 0.50 GiB' and 'Using FLASH_ATTN attention
backend' (review w16 R4 N4), and the plain search and the --rps sizing listed tpu-v4 / v5e / v5p / v6e among their
candidates. vLLM's TPU worker sizes its KV cache by another rule (vllm/v1/worker/tpu_worker.py@28b912a5
determine_available_memory: bytes_limit x gpu_memory_utilization - 1.02 x bytes in use), SGLang's TPU port is the
separate sglang-jax and TensorRT-LLM is NVIDIA-only: a TPU is refused in one line naming --gpu at every door, and
left out of every search over the catalog."""

import pytest
from helpers import four_door_refusal

from gpuplan import InferenceInputs, estimate_inference
from gpuplan.catalog import hardware_entries, load_accelerator
from gpuplan.core.hardware import XLA_VENDOR
from gpuplan.core.serving import engines as E
from gpuplan.errors import InputError
from gpuplan.jobs.inference import estimate as IE
from gpuplan.jobs.inference import tpu_serving as TS
from gpuplan.jobs.inference.resolve import resolve_plan
from gpuplan.jobs.inference.serving import serving_gpus

pytestmark = pytest.mark.usefixtures("time_box")  # conftest: a hang fails the case, not the suite

ASK = {"model": "llama-3-8b", "gpu": "tpu-v6e"}
TPUS = {gpu_id for gpu_id, entry in hardware_entries().items() if entry.get("vendor") == XLA_VENDOR}


def test_the_catalog_has_the_four_tpus_this_rule_is_about():
    assert TPUS == {"tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e"}
    assert all(not TS.modelled_on(load_accelerator(gpu_id)) for gpu_id in TPUS)
    assert TS.modelled_on(load_accelerator("h100"))


@pytest.mark.parametrize("extra, fragment", [
    ({}, "vLLM's TPU worker (torch_xla, or the tpu-inference plugin) sizes its KV cache by another rule"),
    ({"engine": "sglang==0.4.9"}, "its TPU port, sglang-jax, is a separate engine"),
    # a CUDA-only option with it: refused by the part, before any option is read (no rule of its own needed)
    ({"engine": "trtllm", "cuda_graph_gib": 1}, "TensorRT-LLM builds CUDA engines for NVIDIA GPUs only"),
])
def test_a_tpu_is_refused_at_every_door_naming_the_engines_reason(run_cli, client, tmp_path, extra, fragment):
    web = four_door_refusal(run_cli, client, tmp_path, "infer", "inference", {**ASK, **extra}, "gpu", fragment)
    assert web.startswith("gpu: got 'tpu-v6e'; is a Google Cloud TPU v6e (Trillium), where infer models no serving "
                          "engine: ")
    assert web.endswith(TS.VALID_ON_TPU)


def test_the_refusal_names_the_part_as_given():
    """An alias (the catalog's 'v5p' for tpu-v5p) is named as typed, as every other --gpu refusal names it."""
    with pytest.raises(InputError) as info:
        estimate_inference(InferenceInputs(model="llama-3-8b", gpu="v5p"))
    assert str(info.value).startswith("gpu: got 'v5p'; is a Google Cloud TPU v5p, where infer models no serving")


def test_the_valid_neighbour_named_answers():
    """The refusal's neighbour, --gpu h100, answers the same ask (the line names a part that works)."""
    assert "--gpu h100" in TS.VALID_ON_TPU
    report = estimate_inference(InferenceInputs(model="llama-3-8b", gpu="h100", search=False))
    assert report.to_dict()["results"]["fits"] is True


def test_every_engine_has_its_reason():
    assert set(TS.WHY_NOT_ON_TPU) == set(E.ENGINES)


@pytest.fixture(scope="module")
def plan():
    return resolve_plan(InferenceInputs(model="llama-3-8b", gpu="h100"))


def test_no_search_over_the_catalog_takes_a_tpu(plan):
    """serving_gpus is every search's candidates (the plain search, 'would fit on', --rps sizing and its
    --disaggregate pools, sizing.refused_gpus via serves): it had the four TPUs, now none, and keeps every
    other part that has the dtype (an H100 and an MI300X among them)."""
    candidates = {gpu.id for gpu in serving_gpus(plan)}
    assert not candidates & TPUS
    assert {"h100-sxm", "mi300x"} <= candidates


def test_the_memory_to_recommend_is_a_size_of_a_part_infer_answers_on():
    """estimate.memory_classes ('recommended GPU memory >= N GB'): no TPU-only size. The TPUs' sizes are 16 (v5e),
    32 (v6e), 32 (v4) and 95 GB (v5p) marketed; the 16 and 95 GB classes came from the v5e and v5p alone."""
    sizes = {gb for gb, _ in IE.memory_classes("bf16")}
    tpu_only = {float(hardware_entries()[t]["memory_gb"]) for t in TPUS} - {
        float(e["memory_gb"]) for e in hardware_entries().values() if e.get("vendor") != XLA_VENDOR}
    assert tpu_only == {16.0, 95.0} and not sizes & tpu_only
    assert TS.engine_modelled_on("vllm", "AMD") and not TS.engine_modelled_on("vllm", XLA_VENDOR)
    assert not TS.engine_modelled_on("trtllm", "AMD")


def test_a_report_names_the_serving_sections_own_gpu_field():
    """`gpuplan report` shares the plan file's gpu between training and serving: a TPU there was refused with '--gpu
    h100', which would move the training sections off the TPU too (review w16 R7 M1). The line now names the nested
    field the report reads, and that field answers: the training sections on the TPU, the serving one on the H100."""
    from gpuplan.commands.report import reports_for_plan

    plan = {"model": "llama-3-8b", "gpu": "tpu-v5p", "gpus": 64, "tokens": 1e11, "context": "8K", "batch": 8}
    with pytest.raises(InputError) as info:
        reports_for_plan(plan, "tpu_report.yaml", ("inference",))
    line = str(info.value)
    assert line.startswith("gpu: got 'tpu-v5p'; is a Google Cloud TPU v5p, where infer models no serving engine: ")
    assert line.endswith(TS.VALID_IN_REPORT) and "inference: {gpu: h100}" in line and "--gpu h100" not in line
    memory, serving = reports_for_plan({**plan, "inference": {"gpu": "h100"}}, "tpu_report.yaml",
                                       ("memory", "inference"))
    assert memory.line("gpu").value == "tpu-v5p" and serving.to_dict()["results"]["fits"] is True


def test_the_refusal_names_every_kind_of_part_infer_answers_on():
    """Gaudi 3 and Ascend 910B answer infer (core/serving/engines.py names their vLLM plugins): the line names them
    with CUDA / ROCm (review w16 R7 N2: 'a CUDA / ROCm part' under-stated what is valid)."""
    assert "CUDA / ROCm / Gaudi / Ascend" in TS.VALID_ON_TPU
    for gpu in ("gaudi3", "ascend-910b"):
        assert estimate_inference(InferenceInputs(model="llama-3-8b", gpu=gpu, search=False)).to_dict()["results"]
