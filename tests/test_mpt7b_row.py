"""MPT-7B, the GPU-hours reference row (issue 37 point 4, wave 6): MPT's own shape through the 'mpt' config
reader (adapters/hf_config.py, config_fields.mpt_fields), and the layout MosaicML's 7B recipe states (full
recompute, micro-batch capped by the 4 sequences a GPU; training_runs.yaml layout_source, docs/training.md)."""

import pytest

from gpuplan.adapters.hf_config import model_spec_from_hf_config
from gpuplan.core.model.spec import count_parameters
from gpuplan.errors import InputError
from gpuplan.jobs.validation.gpu_hours import end_to_end_gpu_hours, run_inputs
from helpers import reference_runs_by_id as _runs

# MPT-7B's config.json as mlc-ai/mlc-llm quotes it ('The original config for the model',
# mlc_llm/relax_model/mpt/README.md @16392c9638d4; init_config and auto_map left out, they hold no shape)
MPT_7B = {
    "architectures": ["MPTForCausalLM"],
    "attn_config": {"alibi": True, "alibi_bias_max": 8, "attn_impl": "torch", "attn_pdrop": 0,
                    "attn_type": "multihead_attention", "attn_uses_sequence_id": False, "clip_qkv": None,
                    "prefix_lm": False, "qk_ln": False, "softmax_scale": None},
    "d_model": 4096, "emb_pdrop": 0, "embedding_fraction": 1.0, "expansion_ratio": 4, "init_device": "cpu",
    "learned_pos_emb": True, "logit_scale": None, "max_seq_len": 2048, "model_type": "mpt", "n_heads": 32,
    "n_layers": 32, "no_bias": True, "norm_type": "low_precision_layernorm", "resid_pdrop": 0,
    "tokenizer_name": "EleutherAI/gpt-neox-20b", "torch_dtype": "bfloat16", "transformers_version": "4.28.1",
    "use_cache": False, "verbose": 0, "vocab_size": 50432,
}


def test_mpt_7b_counts_the_checkpoints_tensors():
    # mlc-llm's tensor list (mpt_topology.txt @ce6b66a27940): wte 50,432 x 4,096 = 206,569,472; a block: norm_1 and
    # norm_2 weights 2 x 4,096, Wqkv 12,288 x 4,096 = 50,331,648, out_proj 16,777,216, up and down 2 x 16,384 x 4,096 =
    # 134,217,728: 201,334,784, x 32 = 6,442,713,088; norm_f 4,096; no wpe, no bias, no separate head (tied)
    counted = count_parameters(model_spec_from_hf_config(MPT_7B, "mpt-7b"))
    assert counted.total == 206_569_472 + 32 * 201_334_784 + 4_096 == 6_649_286_656
    assert counted.position_embedding == 0 and counted.lm_head == 0
    assert counted.norms == 65 * 4_096  # weights only: no_bias drops the LayerNorms' biases too


def test_mpt_7b_shape_is_mpts_not_llamas():
    spec = model_spec_from_hf_config(MPT_7B, "mpt-7b")
    assert (spec.num_layers, spec.hidden_size, spec.vocab_size) == (32, 4096, 50432)
    assert (spec.mlp.intermediate_size, spec.mlp.gated, spec.mlp.activation, spec.mlp.bias) == (16384, False, "gelu",
                                                                                                False)
    assert (spec.attention.num_heads, spec.attention.num_kv_heads, spec.attention.head_dim) == (32, 32, 128)
    assert not (spec.attention.qkv_bias or spec.attention.out_bias or spec.norm_bias)
    assert spec.norm == "layernorm" and spec.tie_embeddings and spec.fused_qkv
    assert not spec.rotary and spec.learned_positions == 0  # ALiBi: no position parameters


def test_the_reader_reproduces_llm_foundrys_own_count_for_its_7b_recipe():
    # llm-foundry scripts/train/benchmarking/README.md @a3eed9b42 L183 (7b, 2,048, a100_40gb): NumParams 6,658,859,008
    # for the 7b yaml: vocabulary 50,368, no ALiBi (learned positions, 2,048 x 4,096) and biases everywhere (MPTConfig
    # defaults). 50,368 x 4,096 + 8,388,608 + 32 x (201,334,784 + 45,056 biases) + 8,192 = 6,658,859,008
    recipe = {**MPT_7B, "vocab_size": 50368, "no_bias": False, "attn_config": {"alibi": False}}
    counted = count_parameters(model_spec_from_hf_config(recipe, "mpt-7b-recipe"))
    assert counted.position_embedding == 2048 * 4096
    assert counted.total == 6_658_859_008


def test_the_catalog_entry_reads_as_the_quoted_config():
    from gpuplan.catalog import load_model

    assert count_parameters(load_model("mpt-7b")).total == 6_649_286_656


@pytest.mark.parametrize("change, field", [
    ({"attn_config": {"attn_type": "sparse"}}, "attn_config.attn_type"),
    ({"attn_config": {"attn_type": "grouped_query_attention"}}, "attn_config.kv_n_heads"),
    ({"norm_type": "batchnorm"}, "norm_type"),
    ({"no_bias": "yes"}, "no_bias"),
    ({"attn_config": {"alibi": 1}}, "attn_config.alibi"),
    ({"ffn_config": {"ffn_type": "te_ln_mlp"}}, "ffn_config"),
    ({"n_layers": 0}, "n_layers"),
    ({"d_model": None}, "d_model"),
])
def test_a_bad_mpt_field_is_named(change, field):
    with pytest.raises(InputError) as caught:
        model_spec_from_hf_config({**MPT_7B, **change}, "bad")
    assert f"config.json: {field}" in str(caught.value)


def test_grouped_query_mpt_reads_its_kv_heads():
    spec = model_spec_from_hf_config({**MPT_7B, "attn_config": {"attn_type": "grouped_query_attention",
                                                                "kv_n_heads": 8, "alibi": True}}, "gqa")
    assert spec.attention.num_kv_heads == 8


def test_the_row_states_the_recipes_layout_and_mpts_shape():
    run = _runs()["mpt-7b"]
    inputs = run_inputs(run)
    assert (inputs.model, inputs.recompute, inputs.zero, inputs.micro_batch) == ("mpt-7b", "full", 3, 4)
    assert inputs.attention_kernel == "flash1"
    assert "activation_checkpointing: true" in run["layout_source"] and "no splitting will be done" in \
        run["layout_source"]
    assert 1760 // 440 == inputs.micro_batch  # the device batch, below the recipe's micro-batch 8
    _, basis = end_to_end_gpu_hours(run)
    assert "dp440 tp1 pp1 ZeRO-3 mb4, full recompute" in basis


def test_full_recompute_costs_at_most_one_more_forward():
    """At the same micro-batch, recomputing every layer adds one forward to forward + backward (1 + 2 passes), so
    the step grows by more than nothing and at most 4 / 3 (communication and the optimizer are not recomputed)."""
    from gpuplan.jobs.budget.estimate import estimate_budget

    run = _runs()["mpt-7b"]
    steps = {recompute: estimate_budget(run_inputs(dict(run, recompute=recompute))).value("io_step_seconds")
             for recompute in ("none", "full")}
    assert 1.0 < steps["full"] / steps["none"] <= 4 / 3


def test_mpts_own_shape_times_within_two_percent_of_the_generic_one():
    """The generic 6.7B (Llama-2-7B's 32 x 4,096, SwiGLU 11,008, 32,000 vocabulary) has the same matrix parameters a
    layer within 1% (3 x 4,096 x 11,008 = 135.3M against MPT's 2 x 4,096 x 16,384 = 134.2M); MPT's larger vocabulary
    adds 50,432 / 32,000 of a small LM head: the step moves by well under 2%."""
    from gpuplan.jobs.budget.estimate import estimate_budget

    run = _runs()["mpt-7b"]
    generic = {k: v for k, v in run.items() if k != "model"} | {"params": 6.7e9}
    own, other = (estimate_budget(run_inputs(r)).value("io_step_seconds") for r in (run, generic))
    assert own == pytest.approx(other, rel=0.02)


def test_the_row_is_no_longer_the_kinds_outlier():
    """With the recipe's layout the model's step is 2.38 s against the 2.96 s the card's 9.5 days amount to (a ratio
    of 1.24, where the other held-out totals sit at 0.89-1.24x their model steps: docs/training.md): -19.0% end to end,
    where the planner's mb2 without recompute gave -36.4%. The bound is that level + ~5 points, so a layout regression
    (back to no recompute: -36%) fails; the sign stays low (the campaign's time around the step is not all modelled)."""
    from gpuplan.jobs.validation.gpu_hours import reported_step_seconds

    run = _runs()["mpt-7b"]
    predicted, _ = end_to_end_gpu_hours(run)
    error = predicted / run["measured_gpu_hours"] - 1
    assert -0.25 < error < 0
    assert reported_step_seconds(run) == pytest.approx(100_320 * 3600 / 440 / (1e12 / (1760 * 2048)), rel=1e-9)


@pytest.mark.parametrize("ratio, width", [(4, 16_384), (2.5, 10_240), (3.5, 14_336)])
def test_a_float_expansion_ratio_reads_as_llm_foundry_resolves_it(ratio, width):
    """llm-foundry's resolve_ffn_hidden_size (ffn.py@8c8dd48f7 L117-121): int(d_model x expansion_ratio) where the
    product is whole; d_model 4,096: 2.5 -> 10,240, 3.5 -> 14,336 (by hand)."""
    spec = model_spec_from_hf_config({**MPT_7B, "expansion_ratio": ratio}, "mpt")
    assert spec.mlp.intermediate_size == width


@pytest.mark.parametrize("ratio", [2.0001, "4", True, -1, float("nan")])
def test_an_expansion_ratio_without_a_whole_width_is_named(ratio):
    with pytest.raises(InputError) as caught:
        model_spec_from_hf_config({**MPT_7B, "expansion_ratio": ratio}, "bad")
    assert "config.json: expansion_ratio" in str(caught.value)
