"""Models transformers runs with eager attention only (core/time/attention_core.py SDPA_REFUSED): under
--framework hf GPT-OSS (``_supports_sdpa = False``, models/gpt_oss/modeling_gpt_oss.py@5.25.0 L378, for
its sinks) is timed with the eager kernel and its memory holds the eager scores, as Gemma 2 is; every
other model keeps the kernel asked for."""

from __future__ import annotations

import json

import pytest

from gpuplan.catalog.op_profiles import eager_ops_for
from gpuplan.core.time.attention_core import SDPA_REFUSED, execution_kernel




def _config(tmp_path):
    from importlib.resources import files

    doc = json.loads(files("gpuplan.catalog").joinpath("models", "gpt-oss-20b.json").read_text("utf-8"))
    cfg = {k: v for k, v in doc["config"].items() if k != "quantization_config"}
    cfg.update(num_hidden_layers=4, layer_types=["sliding_attention", "full_attention"] * 2)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg), "utf-8")
    return str(path)


def test_the_transformers_flag_is_what_the_installed_modeling_files_say():
    """The two model_types are those whose modeling classes refuse SDPA in the installed transformers."""
    pytest.importorskip("transformers")
    from transformers.models.gemma2.modeling_gemma2 import Gemma2PreTrainedModel
    from transformers.models.gpt_oss.modeling_gpt_oss import GptOssPreTrainedModel
    from transformers.models.llama.modeling_llama import LlamaPreTrainedModel

    assert GptOssPreTrainedModel._supports_sdpa is False and Gemma2PreTrainedModel._supports_sdpa is False
    assert LlamaPreTrainedModel._supports_sdpa is True
    assert set(SDPA_REFUSED) == {"gemma2", "gpt_oss"}


@pytest.mark.parametrize("model_type, framework, option, kernel", [
    ("gpt_oss", "hf", "flash", "eager"), ("gpt_oss", "hf", "sdpa", "eager"), ("gpt_oss", "megatron", "flash", "flash"),
    ("gemma2", "hf", "flash", "eager"), ("llama", "hf", "flash", "flash"), ("llama", "hf", "eager", "eager")])
def test_execution_kernel_by_model_and_framework(model_type, framework, option, kernel):
    assert execution_kernel(option, model_type, framework) == kernel


def test_gpt_oss_takes_llamas_eager_attention_profile():
    """No gpt_oss profile: Llama's, with Llama's eager-attention setting added (its softmax and mask
    kernels), and the attention marked eager so the step runs the score matmuls; Llama asked for flash
    keeps its SDPA profile."""
    oss = eager_ops_for("gpt_oss", "bf16", "full", "flash")
    llama_eager = eager_ops_for("llama", "bf16", "full", "eager")
    llama = eager_ops_for("llama", "bf16", "full", "flash")
    assert oss.attention == "eager" and llama.attention == ""
    assert oss.terms == llama_eager.terms and oss.terms != llama.terms
    assert "no op profile for model_type gpt_oss" in oss.note


@pytest.mark.parametrize("framework, kernel", [("hf", "eager"), ("megatron", "flash")])
def test_plan_and_memory_take_the_same_kernel_for_gpt_oss(tmp_path, framework, kernel):
    """`plan --framework hf` on a short GPT-OSS config: the step runs eager (its eager_ops say so) and the
    memory model holds eager scores; `memory` of the same job agrees. Megatron keeps its fused kernel."""
    from gpuplan.jobs.memory.schema import MemoryInputs
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.search import evaluator_for

    model = _config(tmp_path)
    ev = evaluator_for(PlanInputs.parse({"model": model, "gpu": "h200", "gpus": "1", "framework": framework}))
    step_kernel = ev.step.eager_ops.attention if ev.step.eager_ops is not None else ev.step.attention_kernel
    assert step_kernel == kernel and ev.memory.attention_kernel == kernel
    memory = MemoryInputs.parse({"model": model, "gpu": "h200", "framework": framework})
    assert memory.settings().attention_kernel == kernel


def test_llama_under_hf_is_unchanged(tmp_path):
    from gpuplan.jobs.memory.schema import MemoryInputs
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.search import evaluator_for

    ev = evaluator_for(PlanInputs.parse({"model": "llama-3.2-1b", "gpu": "h200", "gpus": "1", "framework": "hf"}))
    assert ev.step.attention_kernel == ev.memory.attention_kernel == "flash" and ev.step.eager_ops.attention == ""
    assert MemoryInputs.parse({"model": "llama-3.2-1b", "gpu": "h200", "framework": "hf"}).settings().attention_kernel \
        == "flash"


def test_gpt_oss_eager_scores_in_memory_are_its_bf16_softmax(tmp_path):
    """transformers' GPT-OSS eager softmax runs in the logits' dtype (modeling_gpt_oss.py@5.25.0 L248,
    dtype=combined_logits.dtype) and saves its bf16 output, 2 B per score: per token and layer the eager
    path keeps 2·a·s - 4·a bytes where flash keeps the fp32 logsumexp, 4·a (core/memory/activations.py).
    64 heads, s 4,096: (2 x 64 x 4,096 - 4 x 64) - 4 x 64 = 523,776 B per token and layer more."""
    from dataclasses import replace

    from gpuplan.adapters.resolve import resolve_model
    from gpuplan.core.memory.activations import _attention_bytes

    spec = resolve_model(_config(tmp_path))
    assert spec.eager_softmax_fp32 is False and spec.attention.num_heads == 64
    # full-attention layers only (SDPA's saved sliding mask, on the flash side, is another term)
    spec = replace(spec, layer_types=("full",) * spec.num_layers)
    eager = _attention_bytes(spec, 4096, "hf", "eager", 2, 0.0)
    flash = _attention_bytes(spec, 4096, "hf", "flash", 2, 0.0)
    assert eager - flash == 2 * 64 * 4096 - 8 * 64 == 523_776


def test_the_explain_line_of_eager_attention_says_where_its_time_is(run_json, tmp_path):
    """Under eager attention the attention class is 0 s: its score matmuls are timed with the
    matmuls and its softmax / masks with the memory-bound kernels (core/time/eager_step.py). The
    line said "attention (eager kernel) 0 s (0%)", which read as free attention."""
    import json

    from gpuplan.catalog import model_entry

    config = dict(model_entry("gemma-2-2b")["config"], num_hidden_layers=2)
    path = tmp_path / "gemma" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(config))
    out = run_json("plan", str(path), "--gpu", "h200", "--gpus", "1", "--tp", "1", "--pp", "1", "--cp", "1",
                   "--zero", "0", "--framework", "hf", "--seq-len", "1024", "--micro-batch", "1", "--global-batch",
                   "1", "--tokens", "1B", "--recipe", "bf16", "--full")
    line = next(s for s in out["sections"] if s["title"].startswith("One step by op class"))
    attention = next(x for x in line["lines"] if x["key"] == "class_attention")
    matmuls = next(x for x in line["lines"] if x["key"] == "class_gemm")
    assert attention["value"] == 0 and "in the matmuls line" in attention["label"] and matmuls["value"] > 0
    # the matmuls line by hand (core/time/linears.py: max(2 m k n / (peak x MAMF x d / (d + 512)), 2 B x (m k + k n
    # + m n) at 89% of HBM + 7.84 us), d the smallest dimension): H200 989.4 TFLOP/s BF16, MAMF 0.803
    # (efficiency.MAMF_FRACTION), 4.8 TB/s; Gemma 2 2B, h 2,304, 8 query / 4 KV heads of 256, MLP 9,216, vocab
    # 256,000, 2 layers, one 1,024-token sequence: every GEMM has d = 1,024 -> 989.4e12 x 0.803 x 2 / 3 = 529.7 TF/s,
    # each linear a forward, input-gradient and weight-gradient GEMM; the k and v projections (1,024 x 2,304 x 1,024:
    # 9.12 us of FLOPs) sit on the memory floor, 11.5 MB / 4.272 TB/s + 7.84 us = 10.54 us. A layer's seven
    # linears 0.9116 ms; eager attention's QK^T and PV, 8 heads batched in one launch (d 256: 264.8 TF/s), with their
    # two backward GEMMs each, 0.0973 ms; the LM head 3 x 2 x 1,024 x 2,304 x 256,000 / 529.7 TF/s = 6.842 ms:
    # 2 x (0.9116 + 0.0973) + 6.842 = 8.860 ms
    def gemm(m, k, n, groups=1):
        d = min(m, k, n)
        flops = groups * 2 * m * k * n / (989.4e12 * 0.803 * d / (d + 512))
        return max(flops, groups * 2 * (m * k + k * n + m * n) / (4.8e12 * 0.89) + 7.84e-6)

    def linear(inputs, outputs, tokens=1024):
        return gemm(tokens, inputs, outputs) + gemm(tokens, outputs, inputs) + gemm(outputs, tokens, inputs)

    layer = sum(linear(i, o) for i, o in ((2304, 2048), (2304, 1024), (2304, 1024), (2048, 2304), (2304, 9216),
                                          (2304, 9216), (9216, 2304)))
    scores = 3 * gemm(1024, 256, 1024, groups=8) + 3 * gemm(1024, 1024, 256, groups=8)
    assert (layer, scores, linear(2304, 256_000)) == pytest.approx((0.9116e-3, 0.0973e-3, 6.842e-3), rel=1e-3)
    assert matmuls["value"] == pytest.approx(2 * (layer + scores) + linear(2304, 256_000), rel=1e-9)
    assert matmuls["value"] == pytest.approx(8.860e-3, rel=1e-3)


@pytest.mark.parametrize("framework, implementation, kernel", [
    ("generic", "hf", "eager"), ("megatron", "hf", "eager"), ("generic", "megatron", "flash"), ("hf", None, "eager")])
def test_execution_kernel_keys_on_transformers_modules_too(framework, implementation, kernel):
    """--implementation hf runs transformers' modules under any framework: those refuse SDPA for gemma2."""
    assert execution_kernel("flash", "gemma2", framework, implementation) == kernel
    assert execution_kernel("flash", "llama", framework, implementation) == "flash"


def test_memory_with_transformers_modules_holds_gemma2s_eager_scores():
    """`memory --model gemma-2-2b --implementation hf` kept flash (69.10 GiB). By hand, per token and
    layer (a 8 heads, kv 4, d 256, s 4,096, core/memory/activations.py): eager saves the fp32 softmax
    + its bf16 copy + the soft-cap tanh output, 8·a·s - 4·a, where flash saves the fp32 logsumexp 4·a:
    262,080 B more; flash's sliding layers (half of them) also keep SDPA's additive mask c·s and
    repeat_kv's 2·(a - kv)·d·c: 0.5 x (8,192 + 4,096) = 6,144 B. 26 layers x 4,096 tokens x
    (262,080 - 6,144) = 27,256,160,256 B (25.38 GiB) more than flash."""
    from dataclasses import replace

    from gpuplan.core.memory import training as M
    from gpuplan.jobs.memory.estimate import estimate_memory, resolve_layout
    from gpuplan.jobs.memory.schema import MemoryInputs

    inputs = MemoryInputs.parse({"model": "gemma-2-2b", "implementation": "hf"})
    spec = inputs.spec()
    settings = inputs.settings(spec)
    assert settings.attention_kernel == "eager" and inputs.framework != "hf"
    layout = resolve_layout(spec, inputs)
    flash = M.peak_memory(spec, layout, replace(settings, attention_kernel="flash")).allocated
    assert M.peak_memory(spec, layout, settings).allocated - flash == pytest.approx(27_256_160_256, rel=1e-9)
    row = next(a for a in estimate_memory(inputs).assumptions if a.key == "attention_kernel")
    assert row.value == "eager" and "_supports_sdpa = False" in row.source and "modeling_gemma2.py" in row.source
    assert "--attention-kernel" not in row.flag


@pytest.mark.parametrize("args", [
    ["memory", "--model", "gemma-2-2b", "--implementation", "hf", "--attention-kernel", "flash"],
    ["memory", "--model", "gemma-2-2b", "--framework", "hf", "--attention-kernel", "sdpa"],
    ["plan", "--model", "gemma-2-2b", "--gpu", "h100", "--gpus", "8", "--framework", "hf",
     "--attention-kernel", "flash"],
])
def test_an_explicit_sdpa_kernel_transformers_refuses_is_one_line_exit_2(capsys, args):
    """It was silently run eager; an explicit eager, or none, runs; Llama keeps its flash."""
    from gpuplan.cli import main

    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: attention_kernel: got ")
    assert "eager attention only" in err[0] and "give eager" in err[0]
    assert main([*args[:-1], "eager"]) == 0
    capsys.readouterr()
    assert main(["memory", "--model", "llama-3.2-1b", "--implementation", "hf", "--attention-kernel", "flash"]) == 0


def test_the_refusal_is_the_schemas_so_the_api_gets_it_too():
    from gpuplan.errors import InputError
    from gpuplan.jobs.memory.schema import MemoryInputs

    with pytest.raises(InputError) as refused:
        MemoryInputs.parse({"model": "gemma-2-2b", "implementation": "hf", "attention_kernel": "flash"}).spec()
    assert refused.value.field == "attention_kernel"
