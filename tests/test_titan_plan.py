"""`plan --framework torchtitan` times torchtitan's default (eager) op list and shows it class by
class (jobs/step_classes.py, core/time/titan_ops.py); MoE models keep the fused model."""

import json

import pytest

from gpuplan.core.time import titan_ops as T

DENSE = ("plan", "llama-3.1-8b", "--tokens", "1T", "--gpu", "h100", "--gpus", "8", "--pp", "1", "--tp", "1",
         "--framework", "torchtitan", "--full", "--json")


def _classes(out: str) -> dict:
    report = json.loads(out)
    section = next(s for s in report["sections"] if "op class" in s["title"])
    return {line["key"]: line["value"] for line in section["lines"]}, report


def test_torchtitan_plan_shows_its_memory_bound_classes(run_cli):
    code, out, _ = run_cli(*DENSE)
    assert code == 0
    classes, report = _classes(out)
    for name in ("norm", "rope", "repeat_kv", "swiglu", "residual", "grad_sums", "loss"):
        assert classes[f"class_titan_{name}"] > 0
    # the lines add up to the step's compute (they split the same micro-batch): within 0.1%
    step = report["results"]["best_step_seconds"]
    parts = sum(v for k, v in classes.items())
    assert parts == pytest.approx(step, rel=0.001)
    # Llama 3.1 8B eager, per token: SwiGLU 10I + 18I = 401 KB, the two nn.RMSNorms 2 x (4h + 10h) = 115 KB
    assert classes["class_titan_swiglu"] > classes["class_titan_norm"]


def test_default_ops_are_eager_and_moe_keeps_the_fused_model():
    from gpuplan.catalog import load_model

    assert T.default_ops(load_model("llama-3.1-8b")) == T.TitanOps(compiled=False, norm="fused")
    assert T.default_ops(load_model("qwen3-30b-a3b")) is None
