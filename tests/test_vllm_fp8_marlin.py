"""FP8 checkpoints on Ampere (sm80-sm88): the engines' weight-only FP8 Marlin path (issue 38, core/serving/fp8_marlin).

Read in the wheels: vLLM 0.5.1 serves dense FP8 on sm80 through Marlin (fp8.py@v0.5.1 L114-118; 0.5.0.post1's
Fp8Config needs capability 89), 0.9.0 block-FP8 linears and FP8 MoE experts (fp8.py@v0.9.0 L179-188, L443-447,
L831-845); SGLang 0.5.1 dense FP8 (fp8.py@0.5.1 L213-217), no FP8 MoE Marlin through 0.5.6. Weights stay 1 byte,
decode streams them, prefill runs at Marlin's large-M ceiling (141.4 TFLOP/s on an A100, core/serving/marlin.py).

Llama-3.1-8B (hidden 4,096, 32 layers, 32 / 8 heads of 128, MLP 14,336, vocab 128,256, untied), by hand:
  a layer's matmuls: q 4,096^2 + k, v 2 x 4,096 x 1,024 + o 4,096^2 + gate, up, down 3 x 4,096 x 14,336
                     = 41,943,040 + 176,160,768 = 218,103,808; x 32 = 6,979,321,856 weights at 1 byte
  embedding and LM head 2 x 128,256 x 4,096 = 1,050,673,152 at 2 bytes; norms 65 x 4,096 = 266,240 at 2 bytes
  weights = 6,979,321,856 + 2 x (1,050,673,152 + 266,240) = 9,081,200,640 bytes (bf16: 16,060,522,496)
  Marlin's scales, one 16-bit scale an output channel (per-tensor scales repeated: marlin_utils_fp8.py@v0.9.0
  L126-146): 32 layers x (q 4,096 + k 1,024 + v 1,024 + o 4,096 + gate, up 2 x 14,336 + down 4,096 = 43,008
  output channels) x 2 B = 2.75 MB, 0.03%: not counted, inside the 5e-4 tolerance.
  decode step at batch 1 reads the matmuls + LM head + norms = 6,979,321,856 + 2 x (525,336,576 + 266,240)
  = 8,030,527,488 bytes; / (2,039 GB/s x 0.85, vLLM's expected HBM fraction) = 4.6335 ms.
  prefill of 4,096 tokens: 2 x 6,979,321,856 x 4,096 FLOPs (+ the LM head's one row) / 141.4 TFLOP/s = 404.35 ms.
"""

import json

import pytest

from gpuplan.catalog import load_accelerator
from gpuplan.core.serving import fp8_marlin as FM
from gpuplan.core.serving import marlin as MG
from gpuplan.core.serving import roofline as R
from gpuplan.core.serving import weights as W
from gpuplan.core.serving.releases import parse_release
from gpuplan.jobs.inference.resolve import plan_on_gpu, resolve_plan
from gpuplan.jobs.inference.schema import InferenceInputs
from gpuplan.jobs.inference.serving import serves

LLAMA_FP8_WEIGHTS = 9_081_200_640


@pytest.fixture
def infer(run_cli):
    """`gpuplan infer ...` through cli.main (conftest's run_cli)."""
    return lambda *args: run_cli("infer", *args)


def _plan(**kw):
    return resolve_plan(InferenceInputs(**{"model": "llama-3.1-8b", "gpu": "a100", "quantization": "fp8", **kw}))


# ---- memory and speed, by hand --------------------------------------------------------------------------------

def test_llama_fp8_weights_on_an_a100_are_one_byte_a_matmul_weight(infer):
    code, out, err = infer("llama-3.1-8b", "--quantization", "fp8", "--gpu", "a100", "--json", "--no-search")
    assert code == 0, err
    data = json.loads(out)
    assert data["results"]["weights_total"] == pytest.approx(LLAMA_FP8_WEIGHTS, rel=5e-4)
    assert data["results"]["bits_per_weight"] == 8
    # the same bytes an H100 holds natively (FP8 tensor cores): the path changes the kernel, not the storage
    code, out, err = infer("llama-3.1-8b", "--quantization", "fp8", "--gpu", "h100", "--json", "--no-search")
    assert code == 0, err
    assert json.loads(out)["results"]["weights_total"] == pytest.approx(LLAMA_FP8_WEIGHTS, rel=5e-4)


def test_decode_streams_one_byte_weights_and_prefill_runs_at_marlins_ceiling():
    plan = _plan()
    assert plan.setup.fmt.name == "fp8-marlin" and plan.setup.fmt.compute_dtype == "bf16"
    assert plan.setup.efficiency.bandwidth[0] == 0.85  # the expected HBM fraction the bound uses
    kw = R.gpu_keywords(plan.gpu, plan.setup)
    decode = R.decode_step(plan.spec, plan.groups, plan.setup, 0.0, batch=1, context=1, tp=1, pp=1, **kw)
    assert decode.memory_s == pytest.approx(4.6335e-3, rel=1e-3)  # by hand: 8,030,527,488 B (the 9,081,200,640 B FP8 checkpoint less its
    # input embedding, 128,256 x 4,096 x 2 B = 1,050,673,152 B, which a decode step gathers, not streams) / (2,039 GB/s x 0.85)
    prefill = R.prefill_step(plan.spec, plan.groups, plan.setup, prompt=4096, tp=1, pp=1, **kw)
    flops = 2 * 6_979_321_856 * 4096 + 2 * 525_336_576  # the LM head runs the last token only
    assert prefill.compute_s == pytest.approx(flops / 141.4e12, rel=1e-3)  # 404.35 ms at Marlin's plateau
    # bf16 on the same part: cuBLAS at 0.80 of 312 TFLOP/s, so Marlin's prefill GEMMs take 249.6 / 141.4 = 1.765x
    bf16 = _plan(quantization="bf16")
    kw16 = R.gpu_keywords(bf16.gpu, bf16.setup)
    ratio = prefill.compute_s / R.prefill_step(bf16.spec, bf16.groups, bf16.setup, prompt=4096, tp=1, pp=1,
                                               **kw16).compute_s
    assert ratio == pytest.approx(312 * 0.80 / 141.4, rel=1e-3)


def test_block_fp8_scales_become_16_bit_group_scales():
    """DeepSeek-V3's 128 x 128 blocks: Marlin keeps one 16-bit scale per 128 weights along K (group_size =
    weight_block_size[1], marlin_utils_fp8.py@v0.9.0 L123-160): 8 + 16 / 128 = 8.125 bits. Its routed experts alone
    are 58 layers x 256 x 3 x 7,168 x 2,048 = 653,908,770,816 weights, the dense matmuls (attention 11,413,547,008 +
    dense MLPs 1,189,085,184 + shared experts 2,554,331,136: count_parameters) 15,156,963,328 more, so the scales add
    669,065,734,144 x 2 / 128 = 10,454,152,096 bytes over the whole model (weight_bytes_per_gpu of the plan's groups,
    every stage's: ~1%)."""
    def weights(gpu, engine):
        plan = resolve_plan(InferenceInputs(model="deepseek-v3", gpu=gpu, engine=engine, tp=8, pp=2))
        return plan, W.weight_bytes_per_gpu(plan.groups, plan.setup.fmt, plan.spec.num_layers)

    marlin, on_a100 = weights("a100", "vllm==0.9.0")
    assert marlin.setup.fmt.bits_per_weight == 8.125 and marlin.setup.fmt.group_size == 128
    native, on_h100 = weights("h100", "vllm==0.9.0")
    assert native.setup.fmt.name == "fp8" and native.setup.fmt.bits_per_weight == 8
    assert on_a100 - on_h100 == pytest.approx(10.45e9, rel=0.01)


# ---- the release gates ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("args, first", [
    (("llama-3.1-8b", "--quantization", "fp8", "--gpu", "a100"), "vllm==0.5.1"),   # dense per-tensor
    (("deepseek-v3", "--gpu", "a100", "--tp", "8", "--pp", "2"), "vllm==0.9.0"),   # block-FP8 MoE
    (("llama-3.1-8b", "--quantization", "fp8", "--gpu", "a10"), "sglang==0.5.1"),  # sm86, SGLang's auto Marlin
])
def test_the_release_before_the_path_refuses_and_the_first_answers(infer, args, first):
    engine, _, version = first.partition("==")
    before = {"vllm==0.5.1": "vllm==0.5.0", "vllm==0.9.0": "vllm==0.8.5", "sglang==0.5.1": "sglang==0.5.0"}[first]
    code, out, err = infer(*args, "--engine", before, "--no-search")
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("error: quantization: got 'fp8'; ") and "has no FP8 tensor cores" in err, err
    assert f"--engine {first} or later" in err, err  # names what would run it
    code, out, err = infer(*args, "--engine", first, "--no-search")
    assert code == 0, err
    assert "FP8 Marlin" in out and "weight-only" in out and "no FP8 compute" in out, out


@pytest.mark.parametrize("engine, says, not_said", [
    ("sglang", "--engine vllm==0.9.0 or later", "--engine sglang=="),  # SGLang 0.5.6: no FP8 MoE Marlin branch
    ("trtllm", "--engine vllm==0.9.0 or later", "--engine sglang=="),
])
def test_deepseek_v3_on_the_default_a100_names_the_engine_that_runs_it(infer, engine, says, not_said):
    code, _, err = infer("deepseek-v3", "--engine", engine, "--no-search")
    assert code == 2 and err.count("\n") == 1 and says in err and not_said not in err, err
    assert "--gpu (a100 is the default: --gpu was not given)" in err, err


def test_the_default_request_of_the_issue_answers(infer):
    """`gpuplan infer deepseek-v3 --rps 1` (the default GPU, an A100, and vLLM's newest release) was refused."""
    code, out, err = infer("deepseek-v3", "--rps", "1")
    assert code == 0, err
    assert "block-FP8 MoE weights weight-only through FP8 Marlin" in out and "fused_marlin_moe" in out, out


@pytest.mark.parametrize("method, block, moe, first", [
    ("fp8", None, False, (0, 5, 1)), ("fp8", 128, False, (0, 9, 0)), ("fp8", None, True, (0, 9, 0)),
    ("compressed-tensors", None, False, (0, 5, 4)), ("compressed-tensors", None, True, (0, 9, 0)),
    ("modelopt", None, False, None),  # ModelOptFp8Config.get_min_capability 89 (modelopt.py@v0.9.0 L60-61)
])
def test_vllm_first_release_per_checkpoint_kind(method, block, moe, first):
    ckpt = FM.Fp8Checkpoint(W.FORMATS["fp8"], method, block, moe)
    assert FM.first_release("vllm", ckpt) == first
    a100 = load_accelerator("a100-sxm4-80gb")
    if first is not None:
        before = first[:2] + (first[2] - 1,) if first[2] else (first[0], first[1] - 1, 5)
        assert not FM.runs_fp8_marlin(parse_release("vllm==" + ".".join(map(str, before))), a100, ckpt)
        assert FM.runs_fp8_marlin(parse_release("vllm==" + ".".join(map(str, first))), a100, ckpt)


@pytest.mark.parametrize("gpu, marlin", [("a100-sxm4-80gb", True), ("a10", True), ("rtx-3090", True),
                                         ("l4", False), ("h100-sxm", False), ("v100-sxm2-32gb", False),
                                         ("mi300x", False)])
def test_only_sm80_to_sm88_nvidia_parts_take_the_path(gpu, marlin):
    # sm89+ has FP8 tensor cores; sm70 is below Marlin's mma.sync (is_fp8_marlin_supported: capability >= 80);
    # vLLM turns Marlin off on ROCm (fp8.py@v0.9.0 L181-183)
    assert FM.needs_marlin(load_accelerator(gpu)) is marlin


# ---- searches over GPU types take each part's own path --------------------------------------------------------

def test_an_h100_fp8_plan_runs_marlin_on_an_a100_and_fp8_on_an_h100():
    plan = _plan(gpu="h100")
    assert plan.setup.fmt.name == "fp8"
    assert plan_on_gpu(plan, load_accelerator("a100-sxm4-80gb")).setup.fmt.name == "fp8-marlin"
    assert plan_on_gpu(plan, load_accelerator("l4")).setup.fmt.name == "fp8"
    assert serves(plan, load_accelerator("a10")) and not serves(plan, load_accelerator("v100-sxm2-32gb"))
    old = _plan(gpu="h100", engine="vllm==0.5.0")  # before the path: the A100 is not a candidate
    assert not serves(old, load_accelerator("a100-sxm4-80gb"))


def test_moe_experts_keep_the_16_bit_gemm_fraction():
    """fused_marlin_moe has no large-M figure (as int4 MoE in marlin.py): only dense fp8-marlin takes 0.4532."""
    a100 = load_accelerator("a100-sxm4-80gb")
    release = parse_release("vllm==0.9.0")
    assert MG.runs_marlin(release, a100, "fp8-marlin") and not MG.runs_marlin(release, a100, "fp8-marlin", moe=True)
    assert MG.runs_marlin(release, a100, "fp8-marlin (attention bf16)")
    assert not MG.runs_marlin(parse_release("trtllm"), a100, "fp8-marlin")
