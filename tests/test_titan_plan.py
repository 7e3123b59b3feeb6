"""`plan --framework torchtitan` times torchtitan's default (eager) op list and shows it class by
class (jobs/step_classes.py, core/time/titan_ops.py); MoE models keep the fused model."""

import pytest
from helpers import op_class_values

from gpuplan.core.time import titan_ops as T

# the layout held (micro-batch 4, selective recompute: the planner's choice until the fit rule took FSDP2's
# stream pools + 9%, planner/framework_rules.py; it now picks mb2 without recompute)
DENSE = ("plan", "llama-3.1-8b", "--tokens", "1T", "--gpu", "h100", "--gpus", "8", "--pp", "1", "--tp", "1",
         "--micro-batch", "4", "--recompute", "selective", "--framework", "torchtitan", "--full", "--json")


def test_torchtitan_plan_shows_its_memory_bound_classes(run_cli):
    code, out, _ = run_cli(*DENSE)
    assert code == 0
    classes, report = op_class_values(out)
    for name in ("norm", "rope", "swiglu", "residual", "grad_sums", "qkv_split", "loss"):
        assert classes[f"class_titan_{name}"] > 0
    # torchtitan 0.3.0 hands grouped k and v to SDPA (enable_gqa, core.frameworks.torchtitan_repeats_kv) and runs
    # one wqkv: no repeat_kv line, the split's (docs/step.md, q / k / v per release in the op list)
    assert "class_titan_repeat_kv" not in classes
    # the residual line by hand: two eager adds a layer, read 2 + 2 B and write 2 B of h 4,096 each = 12 h
    # = 49,152 B a token forward and again backward, 2 kernels each (titan_ops.py eager 'residual'); the plan's
    # layout dp8 mb4 at 4,096 tokens: 16,384 tokens a micro-batch, 1,024 / 8 / 4 = 32 micro-batches, 32 layers;
    # H100 3.35 TB/s at 89% + 7.84 us a kernel (memory_kernels): 32 x 32 x 2 x (2 x 7.84 us + 49,152 x 16,384 B /
    # 2.9815 TB/s) = 32 x 32 x 2 x 285.78 us = 0.58528 s
    assert report["results"]["best_layout"].startswith("dp8 tp1 pp1") and " mb4," in report["results"]["best_layout"]
    assert report["results"]["global_batch"] == 1024
    residual = 32 * 32 * 2 * (2 * 7.84e-6 + 12 * 4096 * 16384 / (3.35e12 * 0.89))
    assert residual == pytest.approx(0.58528, rel=1e-4)
    assert classes["class_titan_residual"] == pytest.approx(residual, rel=1e-9)
    # the lines add up to the step's compute (they split the same micro-batch): within 0.1%
    step = report["results"]["best_step_seconds"]
    parts = sum(v for k, v in classes.items())
    assert parts == pytest.approx(step, rel=0.001)
    # Llama 3.1 8B eager, per token: SwiGLU 10I + 18I = 401 KB, the two nn.RMSNorms 2 x (4h + 10h) = 115 KB
    assert classes["class_titan_swiglu"] > classes["class_titan_norm"]


def test_default_ops_are_eager_and_moe_keeps_the_fused_model():
    from gpuplan.catalog import load_model

    assert T.default_ops(load_model("llama-3.1-8b"), fused_qkv=True, repeats_kv=False) == \
        T.TitanOps(compiled=False, norm="fused", fused_qkv=True, repeats_kv=False)
    assert T.default_ops(load_model("qwen3-30b-a3b"), fused_qkv=True, repeats_kv=False) is None
