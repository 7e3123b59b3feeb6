"""--flex-backend is one field of plan and memory (review wave 6b, must-fix 2): both default to Megatron-Core's
moe_flex_dispatcher_backend 'deepep' (transformer_config.py@core_v0.16.1 L682) and count that backend's buffers
(core.memory.deep_ep for DeepEP, core.memory.device_memory.hybrid_ep_bytes for HybridEP), so plan's
"device memory needed (= gpuplan memory of this layout)" is what `gpuplan memory` prints for the same layout."""

import json

import numpy as np
import pytest

from helpers import one_line_refusal

QWEN = dict(model="qwen3-30b-a3b", gpu="h100", gpus=16, ep=16, framework="megatron", ep_dispatcher="flex")
LAYOUT = dict(tp=1, pp=1, cp=1, zero=1, micro_batch=1)


def _both(**given):
    """(memory's device total, plan's device total) in bytes of qwen3-30b-a3b on 16 H100, ep 16, dp 16, mb 1."""
    from gpuplan.jobs.memory.estimate import estimate_memory
    from gpuplan.jobs.memory.schema import MemoryInputs
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.search import evaluator_for

    args = {**QWEN, **LAYOUT, **given}
    report = estimate_memory(MemoryInputs(global_batch=16, **args))
    lines = {ln.key: ln.value for section in report.sections for ln in section.lines}
    evaluator = evaluator_for(PlanInputs(tokens=1e12, **args))
    g = {k: np.array([v]) for k, v in dict(LAYOUT, ep=16, dp=16, vpp=1, global_batch=16).items()}
    _, total, _ = evaluator.memory_of(g, "none")
    return lines["peak_total"], float(total[0]), evaluator


@pytest.mark.parametrize("backend", [None, "deepep", "hybridep"])
def test_plan_and_memory_count_the_same_flex_buffers(backend):
    given = {} if backend is None else {"flex_backend": backend}
    memory, plan, evaluator = _both(**given)
    assert plan == pytest.approx(memory, rel=1e-12)
    assert evaluator.overheads.hybrid_ep.backend == (backend or "deepep")  # the step's default backend too
    assert evaluator.step.flex_backend == (backend or "deepep")


def test_the_default_is_deepep_and_differs_from_hybridep_by_their_buffers():
    """Default = --flex-backend deepep exactly; hybridep differs by DeepEP's buffers less HybridEP's (ep 16,
    hidden 2,048, one H100 NVLink domain of 8: core.memory.deep_ep / device_memory.hybrid_ep_bytes)."""
    from gpuplan.core.memory.deep_ep import deep_ep_bytes
    from gpuplan.core.memory.device_memory import HybridEPShape, hybrid_ep_bytes
    from gpuplan.core.parallel import ParallelLayout

    default, _, _ = _both()
    deepep, _, _ = _both(flex_backend="deepep")
    hybridep, _, _ = _both(flex_backend="hybridep")
    assert default == deepep
    hybrid = hybrid_ep_bytes(ParallelLayout(dp=16, ep=16, micro_batch=1), HybridEPShape(4096, 2048, 128, 8))
    assert deepep - hybridep == pytest.approx(float(deep_ep_bytes(16, 2048)) - float(hybrid), rel=1e-9)


def test_cli_plan_and_memory_print_the_same_device_memory(run_cli):
    """The review's case: qwen3-30b-a3b, 16 H100, ep 16, ZeRO-1, --ep-dispatcher flex (plan 72.52 GiB with
    DeepEP's buffers vs memory 72.44 GiB with HybridEP's before): one figure now."""
    common = ("qwen3-30b-a3b", "--gpu", "h100", "--gpus", "16", "--ep", "16", "--zero", "1", "--ep-dispatcher",
              "flex")
    code, out, err = run_cli("plan", *common)
    assert code == 0, err
    plan_line = next(ln for ln in out.splitlines() if ln.startswith("peak memory per GPU"))
    code, out, err = run_cli("memory", *common)
    assert code == 0, err
    memory_line = next(ln for ln in out.splitlines() if ln.startswith("device memory needed"))
    assert plan_line.split()[-2:] == memory_line.split()[-2:]


def test_memory_refuses_a_backend_without_the_flex_dispatcher(run_cli, tmp_path):
    args = ("memory", "qwen3-30b-a3b", "--gpu", "h100", "--gpus", "16", "--ep", "16", "--flex-backend", "hybridep")
    code, _, err = run_cli(*args)
    one_line_refusal(code, err)
    assert err.startswith("error: flex_backend"), err
    plan = tmp_path / "memory.yaml"
    plan.write_text("model: qwen3-30b-a3b\ngpu: h100\ngpus: 16\nep: 16\nflex_backend: hybridep\n")
    code, _, err = run_cli("memory", str(plan))
    one_line_refusal(code, err, f"{plan}: flex_backend: got 'hybridep'")  # deepep, the default: answered (wave 18)


def test_web_api_memory_takes_the_backend():
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from gpuplan.web import create_app

    client = TestClient(create_app())
    body = {"model": "qwen3-30b-a3b", "gpu": "h100", "gpus": 16, "ep": 16, "zero": 1, "ep_dispatcher": "flex"}
    deepep = client.post("/api/memory", json=body)
    hybridep = client.post("/api/memory", json={**body, "flex_backend": "hybridep"})
    assert deepep.status_code == hybridep.status_code == 200, deepep.text
    assert json.dumps(deepep.json()) != json.dumps(hybridep.json())
    bad = client.post("/api/memory", json={**body, "ep_dispatcher": "alltoall", "flex_backend": "hybridep"})
    assert bad.status_code == 422 and "flex_backend" in bad.text
