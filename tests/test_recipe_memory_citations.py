"""Every recipe fact the memory check passes for a published row is a row field cited at the row's own tag
(published_throughput.yaml recipe_memory, header conventions; jobs.validation.published_fits): no fact by model
name or release, no citation at another tag."""

from __future__ import annotations

import re

import pytest

BRIDGE_TAG = {(25, 9, 0): "v0.1.0rc4", (25, 11, 0): "v0.2.2", (26, 2, 0): "v0.3.0", (26, 2, 1): "v0.3.1",
              (26, 4, 0): "v0.4.0", (26, 4, 1): "v0.4.2", (26, 6, 0): "v0.5.0", (26, 6, 1): "v0.5.1",
              (26, 8, 0): "v0.6.0"}
"""The Megatron-Bridge tag of each NeMo container (the yaml header's recipe_recompute convention)."""
VALUES = {"grad_dtype": {"bf16", "fp32"}, "moment_dtype": {"bf16"}, "loss": {"te-ce"}, "embedding_loss_slots": {True},
          "zero": {1}, "allocator": {"expandable"}, "moe_keeps_expert_output": {True}}
CONTAINER_CODE = {"24.07": {"r2.0.0rc1", "810ffae"}}
"""Code a NeMo 24.07 launcher config defers to where it sets nothing (grad_sync_dtype): NeMo r2.0.0rc1's
megatron_base_model and the Apex commit its Dockerfile.ci pins. The launcher's own line is cited too."""
SKILL_COMMIT = {"mbridge-skill-h100": "302976773079"}
"""Megatron-Bridge skill rows (no container release): the commit their recipe is read at."""


@pytest.fixture(scope="module")
def rows():
    from gpuplan.jobs.validation.published_throughput import published_throughput_rows

    return published_throughput_rows()


def _tag(run) -> str:
    from gpuplan.jobs.validation.published_fits import bridge_release

    nemo = {"nemo-24.07": "24.07", "nemo-25.02": "v2.2.0", "nemo-25.04": "v2.3.0"}  # Launcher; NVIDIA/NeMo
    if run["family"] in SKILL_COMMIT:
        return SKILL_COMMIT[run["family"]]
    if run["family"].rsplit("-", 1)[0] in nemo:
        return nemo[run["family"].rsplit("-", 1)[0]]
    return BRIDGE_TAG[bridge_release(run)]


def test_every_recipe_memory_value_is_cited_at_the_rows_tag(rows):
    carrying = [r for r in rows if r.get("recipe_memory")]
    # 220 Megatron-Bridge rows (25.09 - 26.08), 8 NeMo 24.07 rows, 15 NeMo 25.02 / 25.04 rows (the one that prints
    # FSDP carries grad_dtype only), the Megatron-Bridge skill row
    assert len(carrying) == 244
    for run in carrying:
        tag = _tag(run)
        for key, value in run["recipe_memory"].items():
            assert value in VALUES[key], (run["id"], key)
            cited = run["derived"].get(f"recipe_memory.{key}", "")
            at = re.findall(r"@([\w.]+):L\d+", cited)
            assert at and tag in at and set(at) <= {tag} | CONTAINER_CODE.get(tag, set()), (run["id"], key, cited)


def test_every_bridge_row_carries_its_gradient_buffer_and_loss(rows):
    """grad_reduce_in_fp32 False and cross_entropy_fusion_impl te were read at all nine tags, for every model."""
    from gpuplan.jobs.validation.published_fits import bridge_release

    for run in rows:
        if bridge_release(run):
            assert {"grad_dtype", "loss"} <= set(run.get("recipe_memory") or {}), run["id"]


def test_the_memory_check_passes_the_row_fields_and_nothing_by_model_name(rows):
    """recipe_memory_fields takes the four keys from the row: a copy of a row without them gets none of them."""
    from gpuplan.jobs.validation.published_fits import RECIPE_MEMORY_FIELDS, nemo2_layout, recipe_memory_fields

    by_id = {r["id"]: r for r in rows}
    run = by_id["mbridge-26.02-deepseek-v3-gb200-256g-mxfp8"]
    assert run["recipe_memory"] == {"grad_dtype": "bf16", "loss": "te-ce", "moment_dtype": "bf16"}
    fields = recipe_memory_fields(run)
    assert {k: fields[k] for k in RECIPE_MEMORY_FIELDS if k in fields} == run["recipe_memory"]
    bare = recipe_memory_fields({k: v for k, v in run.items() if k != "recipe_memory"})
    assert not set(bare) & set(RECIPE_MEMORY_FIELDS)
    for row in ("nemo2407-llama-3-8b-h100-8g", "nemo2502-llama-3-8b-b200-8g", "nemo2504-llama-3.1-405b-gb200-128g"):
        nemo = by_id[row]
        assert nemo["layout"]["zero"] is None and nemo2_layout(nemo)["zero"] == 1
        assert nemo2_layout({k: v for k, v in nemo.items() if k != "recipe_memory"})["zero"] is None
    assert nemo2_layout(by_id["nemo2504-llama-3-70b-gb200-64g"])["zero"] == 3  # printed FSDP kept
