"""The optimizer's shard of an MoE (core.comm.dp_costs.optimizer_shards): Megatron-Core shards the dense
parameters' optimizer states over the data-parallel ranks (dp x cp) and the routed experts' over the expert
data-parallel group, dp x cp x tp / (etp x ep) ranks (parallel_state.py@core_v0.14.0 L697-717; the experts'
own distributed optimizer on that group, optimizer/__init__.py@core_v0.14.0 L706-735; shards of
bucket / group size, distrib_optimizer.py@core_v0.14.0 L165-173). The step's optimizer pass updates
trained / optimizer_shards parameters."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from gpuplan.catalog import load_model
from gpuplan.core.comm.dp_costs import expert_data_ranks, optimizer_shards
from gpuplan.core.time.step import StepSettings

# Mixtral 8x7B (mistralai/Mixtral-8x7B-v0.1 config.json): 32 layers, hidden 4,096, 32 heads / 8 KV heads of 128,
# 8 experts of FFN 14,336 (gate, up, down), vocabulary 32,000 untied, router 4,096 x 8, two RMSNorms a layer
EXPERTS = 32 * 8 * 3 * 4096 * 14336  # 45,097,156,608
LAYER = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 4096 * 8 + 2 * 4096  # attention, router, norms: 41,984,000
DENSE = 32 * LAYER + 2 * 32000 * 4096 + 4096  # + embedding, head, final norm: 1,605,636,096
SETTINGS = StepSettings(seq_len=4096, dtype="bf16")


def _hand(dp_cp, expert_ranks, ep):
    experts = EXPERTS / ep
    share = experts / (DENSE + experts)
    return 1 / ((1 - share) / dp_cp + share / expert_ranks)


def test_mixtral_on_64_gpus_at_ep8_shards_its_experts_eight_ways():
    spec = load_model("mixtral-8x7b")
    shards = optimizer_shards(spec, SETTINGS, 1, data=64, tp=1, pp=1, ep=8)
    assert shards == pytest.approx(_hand(64, 8, 8), rel=1e-12)
    assert shards == pytest.approx(9.925, abs=1e-3)  # not 64: 78% of the GPU's parameters are experts on 8 ranks
    assert optimizer_shards(spec, SETTINGS, 0, data=64, tp=1, pp=1, ep=8) == 1  # DDP: every rank steps everything
    assert optimizer_shards(spec, SETTINGS, 1, data=8, tp=1, pp=1, ep=8) == pytest.approx(1 / (
        (DENSE / (DENSE + EXPERTS / 8)) / 8 + (EXPERTS / 8 / (DENSE + EXPERTS / 8)) / 1), rel=1e-12)  # ep = dp: 1


def test_expert_tensor_parallel_one_gives_the_experts_tp_more_ranks():
    # Megatron-Bridge's MoE recipes: etp 1 beside tp 2, dp x cp 32, ep 8: 32 x 2 / (1 x 8) = 8 expert ranks
    assert expert_data_ranks(32, 2, 8, 1) == 8
    assert expert_data_ranks(32, 2, 8) == 4  # etp = tp
    assert expert_data_ranks(4, 1, 8) == 1  # never below one rank
    spec = load_model("mixtral-8x7b")
    share = (EXPERTS / 8) / (DENSE / 2 + EXPERTS / 8)  # params_per_gpu: dense / tp, experts / ep
    etp1 = optimizer_shards(spec, replace(SETTINGS, expert_tp=1), 1, data=32, tp=2, pp=1, ep=8)
    assert etp1 == pytest.approx(1 / ((1 - share) / 32 + share / 8), rel=1e-12)
    assert optimizer_shards(spec, SETTINGS, 1, data=32, tp=2, pp=1, ep=8) == pytest.approx(
        1 / ((1 - share) / 32 + share / 4), rel=1e-12)


def test_a_dense_model_and_lora_shard_over_the_data_ranks():
    dense = load_model("llama-3-8b")
    assert optimizer_shards(dense, SETTINGS, 1, data=64, tp=2, pp=2, ep=1) == pytest.approx(64)
    lora = replace(SETTINGS, finetune="lora")  # the adapters are dense: no expert share
    assert optimizer_shards(load_model("mixtral-8x7b"), lora, 1, data=64, tp=1, pp=1, ep=8) == pytest.approx(64)


def test_vectorised_over_layouts():
    spec = load_model("mixtral-8x7b")
    got = optimizer_shards(spec, SETTINGS, np.array([0, 1, 3]), data=np.array([64, 64, 32]), tp=np.array([1, 1, 1]),
                           pp=np.array([1, 1, 1]), ep=np.array([8, 8, 4]))
    assert got == pytest.approx([1, _hand(64, 8, 8), _hand(32, 8, 4)], rel=1e-12)
