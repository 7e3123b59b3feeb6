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
