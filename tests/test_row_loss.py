"""A published row's step is timed with the loss its recipe ran (recipe_memory.loss, read at its tag),
the field the memory check reads too: Megatron-Bridge's perf scripts set cross_entropy_fusion_impl 'te'
for every model, so a Qwen3 or GPT-OSS row runs TE's fused cross-entropy although its provider's
default is Megatron's native one (core.time.megatron_ops.loss_impl)."""

import pytest


def test_rows_with_te_ce_are_timed_with_tes_loss_whatever_the_provider_default(published_rows):
    from gpuplan.core.time.megatron_ops import loss_impl
    from gpuplan.jobs.validation.published_throughput import row_loss_impl, run_spec

    run = published_rows["mbridge-26.08-qwen3-30b-a3b-gb300-8g-mxfp8"]
    spec = run_spec(run["model"])
    assert run["recipe_memory"]["loss"] == "te-ce"
    assert loss_impl(spec) == "native"  # the Qwen3 provider's default
    assert row_loss_impl(run, spec) == "te"


def test_rows_without_the_field_keep_the_provider_default(published_rows):
    from gpuplan.core.time.megatron_ops import loss_impl
    from gpuplan.jobs.validation.published_throughput import row_loss_impl, run_spec

    bare = [r for r in published_rows.values() if "loss" not in (r.get("recipe_memory") or {})
            and not r["family"].startswith("torchtitan") and r["model"].get("catalog")]
    assert bare
    for run in bare[:5]:
        spec = run_spec(run["model"])
        assert row_loss_impl(run, spec) == loss_impl(spec)


def test_te_loss_is_faster_than_the_native_one_on_a_row(published_rows):
    from gpuplan.jobs.validation.published_throughput import predict_tokens_per_gpu_s

    run = published_rows["mbridge-26.08-qwen3-30b-a3b-gb300-8g-mxfp8"]
    assert predict_tokens_per_gpu_s(run) > predict_tokens_per_gpu_s(run, megatron_loss="native")
