"""pp_layout is checked as Megatron-Core checks it (review w10 r1 SHOULD-FIX 5; pipeline_parallel_layer_layout.py
@core_v0.14.0 L37-42: vpp = chunks / pp; L90-102: the layer-ordered layout opens with 'E' and closes with 'L',
once each): a mistyped row is refused with one line naming pp_layout."""

from __future__ import annotations

import pytest

from gpuplan.core.time.pipeline_schedule import layout_stage_layers


@pytest.mark.parametrize("layout, pp, vpp, layers, words", [
    ("Et|(tt|)*30mL", 8, 2, 61, "32 chunks, the row runs pp x vpp = 8 x 2 = 16"),  # the H100 row at vpp 2
    ("Et|(tt|)*30mL", 8, 8, 61, "32 chunks, the row runs pp x vpp = 8 x 8 = 64"),
    ("tE|tmL", 2, 1, 2, "'E' must open the first chunk"),
    ("t|EtmL", 2, 1, 2, "'E' must open the first chunk"),   # 'E' on rank 1: passed on the parent
    ("Et|tLm", 2, 1, 2, "'L' close the last"),
    ("EtE|tmL", 2, 1, 2, "once each"),
    ("Et|ttm|tt|tL", 2, 2, 6, "must follow every decoder layer"),  # L111-115: decoder layers after the MTP
    ("Et|tt|tm|tL", 2, 2, 5, "sit on the last rank"),              # MTP on rank 0 (chunk 2)
])
def test_mistyped_layouts_are_refused_naming_the_field(layout, pp, vpp, layers, words):
    with pytest.raises(ValueError, match=r"^pp_layout ") as info:
        layout_stage_layers(layout, pp, vpp, layers)
    assert words in str(info.value)


def test_the_h100_recipe_layout_passes_at_its_own_vpp():
    """"Et|(tt|)*30mL": 32 chunks = pp 8 x vpp 4; rank 0 E + 7 layers (chunks 0, 8, 16, 24: 1 + 2 + 2 + 2), ranks
    1-6 8, rank 7 6 (chunks 7, 15, 23 with 2 each, chunk 31 'mL'): (8, 6)."""
    assert layout_stage_layers("Et|(tt|)*30mL", 8, 4, 61) == (8, 6)
