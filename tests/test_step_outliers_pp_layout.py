"""A recipe's fixed pipeline split (Megatron-Core pipeline_model_parallel_layout) in the step model
(core.time.pipeline_schedule.layout_stage_layers, published_throughput.recipe_stage_layers).

Hand numbers: "Et|(tt|)*30mL" (DeepSeek-V3 on H100, scripts/performance/run_script.py@v0.1.0rc4 L66) unrolls to
'Et', 30 x 'tt', 'mL' = 32 chunks; chunk v runs on rank v mod 8, so rank 0 holds chunks 0, 8, 16, 24 = 1 + 2 + 2 + 2
= 7 layers, ranks 1-6 four 'tt' = 8, rank 7 chunks 7, 15, 23 ('tt') + 31 ('mL') = 6 layers + MTP + loss; 7 + 6 x 8 + 6
= 61. The step model's own split (ceil((61 + 3) / 8) = 8 on the others, MTP shedding 3) leaves the last rank 5.
"""

from __future__ import annotations

from copy import deepcopy

import pytest

from gpuplan.core.memory.model_states import stage_span
from gpuplan.core.time.pipeline_schedule import layout_chunks, layout_stage_layers
from gpuplan.jobs.validation.published_throughput import predict_tokens_per_gpu_s, predicted_step, recipe_stage_layers

H100_DSV3 = "mbridge-25.09-deepseek-v3-h100-sxm-1024g-fp8cs"
# deepseek_workload_base_configs.py@v0.3.0 L48 (GB300 pp 2 vp 8), @v0.5.0 (B200 pp 8 vp 2)
BLACKWELL_PRESET = "Et*4|(t*4|)*14tmL"


def test_layout_unrolls_as_megatron_parses_it():
    assert layout_chunks("Et|(tt|)*2mL") == ["Et", "tt", "tt", "mL"]
    assert layout_chunks("Et|(tt|)*30mL") == ["Et"] + ["tt"] * 30 + ["mL"]
    assert layout_chunks(BLACKWELL_PRESET) == ["Etttt"] + ["tttt"] * 14 + ["tmL"]
    assert layout_chunks("E,t|t") == ["Et", "t"]  # commas are cosmetic


def test_h100_deepseek_layout_by_hand():
    assert layout_stage_layers("Et|(tt|)*30mL", 8, 4, 61) == (8, 6)
    assert stage_span(61, 8, 7, 3)[1] == 5  # the model's own split: one layer fewer on the last rank


@pytest.mark.parametrize("pp", [2, 8, 16])
def test_blackwell_preset_equals_the_models_own_split(pp):
    # the presets the Blackwell rows ran: the generic split already matches, so those rows need no pp_layout
    own = (stage_span(61, pp, 0, 3)[1], stage_span(61, pp, pp - 1, 3)[1])
    assert layout_stage_layers(BLACKWELL_PRESET, pp, 16 // pp, 61) == own


@pytest.mark.parametrize("layout, pp, layers, words", [
    ("Etx|tmL", 2, 2, "unknown layer character"),
    ("Et|tt|tmL", 2, 4, "3 chunks, the row runs pp x vpp = 2 x 1"),
    ("Et|ttmL", 2, 4, "3 decoder layers"),
    ("EtL|tm", 2, 2, "'L' close the last"),
])
def test_bad_layouts_are_refused_with_the_reason(layout, pp, layers, words):
    with pytest.raises(ValueError, match=words):
        layout_stage_layers(layout, pp, 1, layers)


def test_the_h100_row_runs_its_recipes_split(published_rows):
    row = published_rows[H100_DSV3]
    assert row["pp_layout"] == "Et|(tt|)*30mL" and "run_script.py@v0.1.0rc4:L66" in row["derived"]["pp_layout"]
    assert recipe_stage_layers(row) == (8, 6)
    plain = deepcopy(row)
    del plain["pp_layout"]
    assert recipe_stage_layers(plain) is None
    # one more layer on the pace-setting last rank: 20.95 s -> 22.88 s, 1,564 -> 1,432 tokens/s/GPU (published 1,297)
    assert predicted_step(plain).total == pytest.approx(20.95, rel=0.02)
    assert predicted_step(row).total == pytest.approx(22.88, rel=0.02)
    assert predict_tokens_per_gpu_s(row) / predict_tokens_per_gpu_s(plain) == pytest.approx(20.95 / 22.88, rel=0.002)
