"""Megatron-Core's recompute options (core/memory/recompute.py): selective modules (--recompute-modules) and
the block method over N layers per virtual chunk (--recompute-layers), in step time, memory, HFU
and the input schema. Expected values are worked out by hand from the formulas' sources."""

import pytest

from gpuplan.catalog import load_model
from gpuplan.core.memory import training as M
from gpuplan.core.parallel import ParallelLayout
from gpuplan.core.memory.recompute import (
    ForwardRates,
    block_recompute_share,
    discarded_bytes_per_token,
    effective_modules,
    mla_up_projection_weights,
    module_applies,
    module_forward_seconds_per_token,
    recompute_label,
    recomputed_forward_flops_per_token,
)
from gpuplan.core.time.step import StepSettings, microbatch_compute_time
from gpuplan.core.comm.topology import cluster_for
from gpuplan.errors import InputError

RATES = ForwardRates(seconds_per_gemm_flop=1e-15, routed_experts=3e-9, attention_core=5e-9, bytes_per_second=1e12)


def _gpu(name):
    from gpuplan.adapters.resolve import resolve_gpu

    return resolve_gpu(name)


def test_block_share_is_n_layers_of_each_chunk():
    assert block_recompute_share(1, 8, 2) == pytest.approx(0.25)  # chunks of 4 layers, 1 recomputed
    assert block_recompute_share(5, 32, 1) == pytest.approx(5 / 32)
    assert block_recompute_share(3, 4, 2) == pytest.approx(1.0)  # N beyond the chunk: all of it


def test_module_times_by_hand():
    """GPT-OSS 120B (hidden 2,880, expert width 2,880, top-4, 36 MoE layers, no MLA) and DeepSeek-V3."""
    oss = load_model("gpt-oss-120b")
    # moe_act: 4 rows x 2,880 x (6 B activation + 2 x 8 B clamp forward) / 1e12 B/s with the eager clamp
    clamped = ForwardRates(1e-15, 0.0, 0.0, 1e12, clamped_glu=True)
    assert module_forward_seconds_per_token(oss, "moe_act", clamped) == pytest.approx(4 * 2880 * 22 / 1e12)
    assert module_forward_seconds_per_token(oss, "moe_act", RATES) == pytest.approx(4 * 2880 * 6 / 1e12)
    # layernorm: every layer is MoE, one standalone pre-MLP norm: 4 B x 2,880
    assert module_forward_seconds_per_token(oss, "layernorm", RATES) == pytest.approx(4 * 2880 / 1e12)
    assert module_forward_seconds_per_token(oss, "core_attn", RATES) == 5e-9
    assert module_forward_seconds_per_token(oss, "mla_up_proj", RATES) == 0.0
    dsv3 = load_model("deepseek-v3")
    # q_up 1,536 x 128 x 192 + kv_up 512 x 128 x (128 + 128) = 37,748,736 + 16,777,216
    assert mla_up_projection_weights(dsv3) == 1536 * 128 * 192 + 512 * 128 * 256 == 54_525_952
    assert module_forward_seconds_per_token(dsv3, "mla_up_proj", RATES) == pytest.approx(2 * 54_525_952 * 1e-15)
    # mlp: the 3 dense layers of 61 (width 18,432): 3 x 7,168 x 18,432 weights, 2 FLOPs each, + activation
    dense = 3 / 61 * (3 * 7168 * 18432 * 2e-15 + 18432 * 6 / 1e12)
    assert module_forward_seconds_per_token(dsv3, "mlp", RATES) == pytest.approx(dense)
    with pytest.raises(ValueError, match="recompute module"):
        module_forward_seconds_per_token(dsv3, "attention", RATES)


def _microbatch(spec, **settings):
    cluster = cluster_for(_gpu("b200"))
    return microbatch_compute_time(spec, cluster, StepSettings(seq_len=4096, **settings), tp=1, cp=1, micro_batch=1,
                                   layers=8, head=False, ep=8, vpp=2).total


def test_step_time_adds_the_modules_and_the_block_share():
    spec = load_model("deepseek-v3")
    none = _microbatch(spec)
    core_attn = _microbatch(spec, recompute="selective")
    assert _microbatch(spec, recompute="selective", recompute_modules=("core_attn",)) == pytest.approx(core_attn)
    up = _microbatch(spec, recompute="selective", recompute_modules=("mla_up_proj",))
    both = _microbatch(spec, recompute="selective", recompute_modules=("core_attn", "mla_up_proj"))
    assert none < up and both == pytest.approx(core_attn + up - none)
    full = _microbatch(spec, recompute="full")
    # 8 layers in 2 chunks of 4: the first layer of each recomputed = a quarter of full recompute
    block = _microbatch(spec, recompute="full", recompute_layers=1)
    assert block - none == pytest.approx(0.25 * (full - none))


def test_discarded_bytes_by_hand():
    """bf16 (c = 2). GPT-OSS moe_act: per routed row the product (2 x 2,880) and the clamped copy
    (2 x 2 x 2,880), 4 rows: 69,120 B; layernorm: the pre-MLP norm output 5,760 B. DeepSeek-V3
    mla_up_proj: q, k, v after the up-projections, 2 x 128 x (2 x 192 + 128) = 131,072 B."""
    oss = load_model("gpt-oss-120b")
    assert discarded_bytes_per_token(oss, ("moe_act",)) == (0.0, 4 * (2 * 2880 + 4 * 2880))
    assert discarded_bytes_per_token(oss, ("layernorm",)) == (0.0, 2 * 2880)
    qwen = load_model("qwen3-30b-a3b")  # no clamp: the product only, 8 rows of 768
    assert discarded_bytes_per_token(qwen, ("moe_act",)) == (0.0, 8 * 2 * 768)
    dsv3 = load_model("deepseek-v3")
    qkv = 2 * 128 * (2 * 192 + 128)
    assert discarded_bytes_per_token(dsv3, ("mla_up_proj",)) == (qkv, qkv)
    # layernorm under MLA: the standalone input norm in every layer, the pre-MLP one in MoE layers
    assert discarded_bytes_per_token(dsv3, ("layernorm",)) == (2 * 7168, 2 * 2 * 7168)


def test_memory_frees_the_discarded_bytes():
    spec = load_model("gpt-oss-120b")
    layout = ParallelLayout(dp=8, tp=1, pp=4, ep=8, micro_batch=1, global_batch=64)

    def activations(**kw):
        settings = M.MemorySettings(seq_len=4096, implementation="megatron", framework="megatron", **kw)
        return M.stage_memory(spec, layout, settings, 0).activations

    none = activations()
    modules = activations(recompute="selective", recompute_modules=("moe_act", "layernorm"))
    # stage 0 of a 1F1B pipeline holds pp = 4 micro-batches of 4,096 tokens; 9 MoE layers per stage
    freed = 4 * 4096 * 9 * (4 * (2 * 2880 + 4 * 2880) + 2 * 2880)
    assert none - modules == pytest.approx(freed)
    full, block = activations(recompute="full"), activations(recompute="full", recompute_layers=3)
    assert block == pytest.approx(3 / 9 * full + 6 / 9 * none)  # 9 layers, one chunk: the first 3


def test_hardware_flops_of_the_modules():
    spec = load_model("deepseek-v3")
    assert recomputed_forward_flops_per_token(spec, 4096, "selective", ("mla_up_proj",)) == \
        pytest.approx(2 * 61 * 54_525_952)
    assert recomputed_forward_flops_per_token(spec, 4096, "selective", ("moe_act", "layernorm")) == 0.0
    assert recomputed_forward_flops_per_token(spec, 4096, "none") == 0.0


def test_moe_supersedes_its_parts_in_time_and_flops():
    """'moe' re-runs the whole MoE block: moe_act and shared_experts beside it add nothing, in step
    time as in FLOPs and memory. DeepSeek-V3: 58 MoE layers, router 7,168 x 256, shared expert
    3 x 7,168 x 2,048, 8 routed experts of 3 x 7,168 x 2,048 per token."""
    spec = load_model("deepseek-v3")
    assert effective_modules(("moe", "moe_act", "shared_experts", "core_attn")) == ("moe", "core_attn")
    assert effective_modules(()) == ("core_attn",)
    moe = _microbatch(spec, recompute="selective", recompute_modules=("moe",))
    assert _microbatch(spec, recompute="selective", recompute_modules=("moe", "moe_act", "shared_experts")) == \
        pytest.approx(moe)
    per_layer = 7168 * 256 + 3 * 7168 * 2048 + 8 * 3 * 7168 * 2048
    assert recomputed_forward_flops_per_token(spec, 4096, "selective", ("moe", "shared_experts")) == \
        pytest.approx(2 * 58 * per_layer)


def test_which_modules_a_model_has():
    dense, dsv3, oss = load_model("llama-3-8b"), load_model("deepseek-v3"), load_model("gpt-oss-120b")
    assert [m for m in ("core_attn", "layernorm", "mlp", "moe", "moe_act", "shared_experts", "mla_up_proj")
            if module_applies(dense, m)] == ["core_attn", "layernorm", "mlp"]
    assert all(module_applies(dsv3, m) for m in ("mlp", "moe", "moe_act", "shared_experts", "mla_up_proj"))
    assert not module_applies(oss, "mlp") and not module_applies(oss, "shared_experts")


def test_labels():
    assert recompute_label("selective", ("moe_act", "layernorm")) == "selective (moe_act, layernorm)"
    assert recompute_label("full", (), 1) == "full (first 1 layer of each virtual chunk)"
    assert recompute_label("full") == "full"


def test_schema_rules():
    from gpuplan.jobs.memory.schema import MemoryInputs

    ok = MemoryInputs(model="gpt-oss-120b", gpus=64, recompute_modules="moe_act, layernorm")
    assert ok.recompute_modules == ("moe_act", "layernorm") and ok.recompute_given == "selective"
    assert ok.settings().recompute == "selective" and ok.settings().recompute_modules == ("moe_act", "layernorm")
    assert MemoryInputs(model="llama-3-8b", gpus=8, recompute_layers=2).recompute_given == "full"
    bad = [({"recompute_modules": "moe_act,attn"}, "recompute_modules"),
           ({"recompute_modules": "moe_act,moe_act"}, "recompute_modules"),
           ({"recompute_modules": ""}, "recompute_modules"),
           ({"recompute_modules": "moe_act", "recompute": "full"}, "recompute_modules"),
           ({"recompute_layers": 2, "recompute": "selective"}, "recompute_layers"),
           ({"recompute_layers": 0}, "recompute_layers"),
           ({"recompute_layers": 2, "recompute_modules": "mlp"}, "recompute_layers"),
           ({"recompute_modules": "mlp", "framework": "torchtitan"}, "recompute_modules")]
    for extra, field in bad:
        with pytest.raises(InputError) as err:
            MemoryInputs(model="llama-3-8b", gpus=8, **extra)
        assert err.value.field == field, extra


def test_cli_states_the_setting(run_cli):
    code, out, err = run_cli("memory", "deepseek-v3", "--gpus", "256", "--pp", "8", "--ep", "32",
                             "--recompute-modules", "mla_up_proj", "--full")
    assert code == 0, err
    assert "selective" in out and "mla_up_proj" in out
    code, out, err = run_cli("plan", "llama-3-8b", "--gpu", "h100", "--gpus", "8", "--recompute-modules", "bogus")
    assert code == 2 and "recompute_modules" in err and "Traceback" not in err


def test_published_rows_run_their_recipes_recompute(published_rows):
    """Each Megatron-Bridge row carries the recompute its recipe ran with, read at the row's tag
    (published_throughput.yaml recipe_recompute, with file and lines under derived)."""
    from gpuplan.jobs.validation.published_throughput import recipe_recompute

    rows = published_rows
    bridge = [r for r in rows.values() if r["family"].startswith("mbridge")
              or (r["family"].startswith("nemo-") and r["family"][5:10] >= "25.09")]
    assert len(bridge) == 221 and all("recipe_recompute" in r["derived"] for r in bridge)
    assert all("recipe_recompute" in r for r in bridge)
    # Bridge v0.4.2 gpt_oss_workload_base_configs.py: GB200 presets recompute layernorm and moe_act
    assert recipe_recompute(rows["mbridge-26.04.01-gpt-oss-120b-gb200-64g-bf16"]) == {
        "recompute": "selective", "recompute_modules": ("layernorm", "moe_act")}
    # v0.2.2 LLAMA3_8B_H100_FP8_CS_BASE_CONFIG: recompute_num_layers=5 -> full, block
    assert recipe_recompute(rows["mbridge-25.11-llama-3-8b-h100-sxm-8g-fp8cs"]) == {
        "recompute": "full", "recompute_layers": 5}
    # full-iteration CUDA-graph presets set an empty module list: nothing recomputed
    assert recipe_recompute(rows["mbridge-26.08-deepseek-v3-gb300-256g-mxfp8"]) == {"recompute": "none"}
    assert recipe_recompute(rows["mbridge-26.08-deepseek-v3-gb200-256g-mxfp8"]) == {
        "recompute": "selective", "recompute_modules": ("mla_up_proj",)}
    titan = next(r for r in rows.values() if r["layout"].get("recompute") == "full")
    assert recipe_recompute(titan) == {"recompute": "full"}  # printed by the source: kept as printed


def test_plan_with_block_recompute_lies_between_none_and_full(run_cli):
    """Llama-3-8B on 16 H100 at pp 2: 16 layers per stage, the first 4 recomputed = a quarter of
    full recompute's extra forward; the single-layout path (train / plan --pp ...) rates it too."""
    import json

    def best(*args):
        code, out, err = run_cli("plan", "llama-3-8b", "--gpu", "h100", "--gpus", "16", "--pp", "2", "--tp", "1",
                                 "--micro-batch", "1", *args, "--json")
        assert code == 0, err
        return json.loads(out)["results"]

    none, full, block = best("--recompute", "none"), best("--recompute", "full"), best("--recompute-layers", "4")
    extra = block["mine_step_compute"] - none["mine_step_compute"]  # seconds of compute per step
    assert extra == pytest.approx(0.25 * (full["mine_step_compute"] - none["mine_step_compute"]), rel=1e-6)
    assert none["best_hfu"] == none["best_mfu"] > block["best_mfu"] and block["best_hfu"] > block["best_mfu"]
    code, out, err = run_cli("train", "llama-3-8b", "--gpu", "h100", "--gpus", "8", "--recompute-layers", "5",
                             "--mfu", "predicted")
    assert code == 0, err
