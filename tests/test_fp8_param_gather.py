"""The distributed optimizer's parameter all-gather as the Megatron-Bridge recipes run it: FP8-CS primary
weights (fp8_param_gather = True, training/mixed_precision.py@v0.2.2 L289) gather the layer matrices as
Megatron-Core's uint8 buffer (distributed_data_parallel.py@core_v0.14.0 L225-233), 1 B an element; MXFP8's
gather in bf16 through the gradient buffer (param_and_grad_buffer.py@core_v0.14.0 L681-695); the 25.11 perf
configs that turn overlap_param_gather off for fp8_mx gather synchronously after the step."""

from dataclasses import replace

import pytest

from gpuplan.catalog import load_accelerator, load_model
from gpuplan.core.comm.dp_costs import ParamGather, data_parallel_costs, gather_bytes, params_per_gpu
from gpuplan.core.comm.topology import cluster_for
from gpuplan.core.time.step import StepSettings
from gpuplan.jobs.validation import published_throughput as pt

# Llama 3.1 405B (meta-llama/Llama-3.1-405B config.json): 126 layers, hidden 16,384, 128 heads of 128, 8 KV
# heads, FFN 53,248, vocabulary 128,256, untied head; RMSNorm weights only
H, L, FFN, VOCAB, KV = 16384, 126, 53248, 128256, 8 * 128
ATTN = 2 * H * H + 2 * H * KV  # q, o; k, v: 570,425,344
MLP = 3 * H * FFN  # gate, up, down: 2,617,245,696
MATRICES = L * (ATTN + MLP)  # 401,646,551,040
EMBED_HEAD, NORMS = 2 * VOCAB * H, (2 * L + 1) * H
TOTAL = MATRICES + EMBED_HEAD + NORMS  # 405,853,388,800


def test_405b_fp8cs_gather_bytes_by_hand():
    spec = load_model("llama-3.1-405b")
    assert TOTAL == 405_853_388_800
    # one rank's share at tp 4, pp 8 (params_per_gpu: every parameter / (tp x pp)): matrices at 1 B, the rest at 2
    by_hand = (MATRICES * 1 + (EMBED_HEAD + NORMS) * 2) / 32  # 12.815e9 B, 1.01037 B an element
    fp8 = ParamGather(fp8_matrices=True)
    assert gather_bytes(spec, fp8, 4, 8, 1) == pytest.approx(by_hand, rel=1e-9)
    assert by_hand / (TOTAL / 32) == pytest.approx(1.0104, abs=1e-4)
    assert gather_bytes(spec, ParamGather(), 4, 8, 1) == pytest.approx(TOTAL / 32 * 2, rel=1e-9)


def test_405b_fp8cs_row_gathers_half_the_bf16_bytes_a_step(published_rows):
    """mbridge-25.09-llama-3.1-405b-b200-128g-fp8cs (tp 4, pp 8, cp 2, dp 2): each rank gathers its stage's
    weights once a step, 405,853,388,800 / 32 = 12.68e9 elements; at 1.0104 B: 12.81 GB (bf16: 25.37 GB)."""
    row = published_rows["mbridge-25.09-llama-3.1-405b-b200-128g-fp8cs"]
    spec = load_model("llama-3.1-405b")
    gather = pt.param_gather(row)
    assert gather == ParamGather(fp8_matrices=True)
    cluster = cluster_for(load_accelerator("b200"))
    held = params_per_gpu(spec, 4, 8, 1)
    assert held == pytest.approx(TOTAL / 32)

    def gathered_bytes(param_gather):
        costs = data_parallel_costs(spec, cluster, StepSettings(param_gather=param_gather), dp=2, tp=4, pp=8, cp=2,
                                    ep=1, zero=1, micro_batches=32, shard_group=None, layers=16,
                                    trained_params=held, t_bwd_gemm_mb=0.1, compute=5.0)
        (ag,) = [c for c in costs if c.collective == "param all-gather"]
        return ag.calls * ag.bytes_per_call

    assert gathered_bytes(gather) == pytest.approx((MATRICES + 2 * (EMBED_HEAD + NORMS)) / 32, rel=1e-9)  # 12.81 GB
    assert gathered_bytes(ParamGather()) == pytest.approx(TOTAL / 32 * 2, rel=1e-9)  # 25.37 GB


def test_mxfp8_rows_gather_bf16_and_the_25_11_switch_is_synchronous(published_rows):
    rows = published_rows
    assert pt.param_gather(rows["mbridge-25.09-llama-3.1-405b-b200-128g-mxfp8"]) == ParamGather()
    sync = rows["mbridge-25.11-llama-3.1-405b-b200-128g-mxfp8"]
    assert pt.param_gather(sync) == ParamGather(overlapped=False)
    # synchronous: the whole gather is exposed, more than the overlapped schedule leaves
    step, overlapped = pt.predicted_step(sync), pt.predicted_step(sync, param_gather=ParamGather())
    assert step.dp_comm > overlapped.dp_comm and step.dp_traffic == pytest.approx(overlapped.dp_traffic)


def test_settings_default_gathers_bf16_overlapped():
    assert StepSettings().param_gather == ParamGather(2.0, fp8_matrices=False, overlapped=True)
    assert replace(StepSettings(), param_gather=ParamGather(fp8_matrices=True)).param_gather.overlapped


def test_nemo2_fp8_rows_gather_fp8_but_under_megatron_fsdp(published_rows):
    """NeMo 25.02 (fp8_params = True, mixed_precision.py@v2.2.0 L53) and 25.04 (fp8_param_gather = True,
    @v2.3.0 L70 / L135; off under Megatron FSDP, scripts/performance/utils.py@v2.3.0 L352-354): the step's
    gather and the memory check's weights read one answer."""
    from gpuplan.jobs.validation.published_fits import recipe_memory_fields

    rows = published_rows
    for run_id in ("nemo2502-llama-3.1-405b-b200-128g", "nemo2504-llama-3.1-405b-gb200-128g"):
        assert pt.param_gather(rows[run_id]) == ParamGather(fp8_matrices=True)
        assert recipe_memory_fields(rows[run_id])["low_precision_weights"] == "primary"
    fsdp = rows["nemo2504-llama-3-70b-gb200-64g"]  # printed FSDP: ZeRO-3
    assert pt.recipe_low_precision_weights(fsdp) is None and "low_precision_weights" not in recipe_memory_fields(fsdp)
    assert pt.recipe_low_precision_weights(rows["nemo2407-llama-3-8b-h100-8g"]) is None  # 24.07: not read
