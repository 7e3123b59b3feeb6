"""NeMo 2 / Megatron-Bridge's 128 Mi-parameter gradient buckets (core.comm.dp_overlap.NEMO_BUCKET_PARAMS; issue 37,
wave 12 W2-A): hand-worked bucket counts, and which published rows take them."""

import pytest
from helpers import row_step_settings

from gpuplan.core.comm.dp_overlap import NEMO_BUCKET_PARAMS, megatron_buckets


def test_bucket_counts_hand_worked():
    # Megatron-Core's default at dp 64: max(40e6, 64 x 1e6) = 64e6 parameters a bucket, 1e9 / 64e6 = 15.6 -> 16
    assert megatron_buckets(1e9, 64) == 16
    # at dp 8 the 40e6 floor: 1e9 / 40e6 = 25
    assert megatron_buckets(1e9, 8) == 25
    # NeMo 2 / Bridge: 128 x 1024 x 1024 = 134,217,728 parameters, 1e9 / 134,217,728 = 7.45 -> 8, whatever the dp
    assert NEMO_BUCKET_PARAMS == 134_217_728
    assert megatron_buckets(1e9, 64, NEMO_BUCKET_PARAMS) == 8
    assert megatron_buckets(1e6, 8, NEMO_BUCKET_PARAMS) == 1  # never fewer than one


@pytest.mark.parametrize("row, expected", [
    ("mbridge-25.09-llama-3-8b-b200-8g-fp8cs", NEMO_BUCKET_PARAMS),  # Bridge, dp 8, distributed optimizer
    ("nemo2502-mixtral-8x7b-b200-64g", NEMO_BUCKET_PARAMS),  # NeMo v2.2.0: recipe_memory zero 1, dp 64
    ("nemo2407-llama-2-7b-h100-8g", None),  # NeMo 24.07: Apex's optimizer, not the callback: Megatron-Core's default
])
def test_rows_take_their_framework_bucket(monkeypatch, published_rows, row, expected):
    assert row_step_settings(monkeypatch, published_rows[row]).dp_bucket_params == expected


def test_the_recipe_bucket_needs_the_distributed_optimizer_and_data_ranks():
    import numpy as np

    from gpuplan.adapters.resolve import resolve_model
    from gpuplan.core.comm.dp_costs import _units
    from gpuplan.core.time.step import StepSettings

    spec, s = resolve_model("llama-3-8b"), StepSettings(dp_bucket_params=NEMO_BUCKET_PARAMS)
    zero = np.array([0, 1, 1])
    data = np.array([64, 64, 1])
    units, gather = _units(spec, s, 1e9, 2e9, data, 32, np.array([False, False, False]), zero)
    # ZeRO-0 (no distributed optimizer: the setup leaves Megatron-Core's default, 64e6 at dp 64): 16; ZeRO-1 at dp 64:
    # 128 Mi, 8; one data rank: the default's 40e6 floor, 25
    assert list(units) == [16, 8, 25] and list(gather) == [16, 8, 25]
