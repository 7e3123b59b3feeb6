"""Session 19's serving / input-rule debt (issue 38), each item with no behaviour change:

1. One table of CUDA-only training options with what a TPU and a Gaudi / Ascend part take instead
   (schema/cuda_only.py), one walk of it for both: the refusal lines are the ones printed before (quoted whole below,
   as `gpuplan train` / `memory --compare` printed them at b7202988).
2. --sampler's first releases are read off core.serving.releases.VLLM_RULES' rows (schema/serving_rules.SAMPLER_SINCE):
   0.17.0 (vllm PR 33538, the Triton sampler's 14 B a logit), 0.8.0 (V1's profiled sampler step, PR 13594) and
   0.28.0 (Model Runner V2's 2 B a logit, PR 44443), the releases the refusals named before.
3. The FP8 Marlin format's name and engines are core/serving/fp8_marlin.py's alone; marlin.runs_marlin reads them.
4. A resolve parses the checkpoint's quantization_config once, and a search over GPU types converts an FP8 plan to a
   part's path once a part (resolve.plan_on_gpu), not at each TP it tries.
"""

import pytest

from gpuplan.catalog import load_accelerator
from gpuplan.core.serving import fp8_marlin as FM
from gpuplan.core.serving import marlin as MG
from gpuplan.core.serving import weights as W
from gpuplan.core.serving.releases import parse_release
from gpuplan.errors import InputError
from gpuplan.schema import cuda_only as CO
from gpuplan.schema.serving_rules import SAMPLER_SINCE, check_sampler

TE_CE = ("is Transformer Engine's fused cross-entropy (Triton kernels: transformer_engine/pytorch/triton/"
         "cross_entropy.py)")


# ---- 1. one table, one walk ----------------------------------------------------------------------------------

@pytest.mark.parametrize("args, line", [
    (("train", "llama-3.1-8b", "--gpu", "tpu-v5p", "--loss", "te-ce"),
     f"error: loss: got 'te-ce'; {TE_CE}, which a Google Cloud TPU v5p does not run: give fp32-ce, vocab-parallel-ce "
     "or chunked, or leave it out"),
    (("train", "llama-3.1-8b", "--gpu", "gaudi3", "--loss", "te-ce"),
     f"error: loss: got 'te-ce'; {TE_CE}, which an Intel Gaudi 3 (OAM) does not run (PyTorch runs there through "
     "Intel's HPU bridge, not CUDA or ROCm): give fp32-ce, vocab-parallel-ce or chunked, or leave it out"),
    (("memory", "llama-3.1-8b", "--gpu", "h100", "--compare", "h100,tpu-v5p", "--loss", "te-ce"),
     "error: compare: got 'tpu-v5p'; Google Cloud TPU v5p does not run --loss te-ce (Transformer Engine's fused "
     "cross-entropy (Triton kernels: transformer_engine/pytorch/triton/cross_entropy.py)): leave the part out of "
     "--compare, or the option out"),
    (("memory", "llama-3.1-8b", "--gpu", "h100", "--compare", "h100,gaudi3", "--offload-layers", "2"),
     "error: compare: got 'gaudi3'; Intel Gaudi 3 (OAM) does not run --offload-layers 2 (Megatron-Core's CPU "
     "activation offloading through Transformer Engine's offload context (CUDA streams)): leave the part out of "
     "--compare, or the option out"),
])
def test_the_refusals_read_as_before(run_cli, args, line):
    code, out, err = run_cli(*args)
    assert (code, out, err) == (2, "", line + "\n")


def test_gaudi_and_ascend_refuse_the_six_options_whose_code_has_no_hpu_or_npu_path():
    """The set vendor_rules refused before (its NOT_ON_HPU_NPU): CUDA graphs, DeepEP / HybridEP, TE's cross-entropy
    and offloading; bitsandbytes' QLoRA, the allocator and the context / buffer sizes are answered there."""
    refused = {o.field for o in CO.CUDA_ONLY_OPTIONS if o.on_hpu_npu is not None}
    assert refused == {"cuda_graph_scope", "full_iteration_graph", "ep_dispatcher", "flex_backend", "loss",
                       "offload_layers"}
    assert all(o.on_tpu for o in CO.CUDA_ONLY_OPTIONS)  # a TPU refuses every one
    assert [CO.runs_off_cuda(load_accelerator(p)) for p in ("tpu-v4", "gaudi2", "ascend-910c", "mi300x", "h100")] \
        == [True, True, True, False, False]


# ---- 2. the sampler's first releases -----------------------------------------------------------------------------

@pytest.mark.parametrize("sampler, first, before", [
    ("triton", (0, 17, 0), "vllm==0.16"), ("flashinfer", (0, 8, 0), "vllm==0.7.3"), ("logits", (0, 28, 0), "vllm==0.27"),
])
def test_each_sampler_is_refused_before_its_first_row_and_answered_from_it(sampler, first, before):
    assert SAMPLER_SINCE[sampler][0] == first
    with pytest.raises(InputError, match=f"which vLLM runs from {'.'.join(map(str, first))}:"):
        check_sampler(sampler, parse_release(before))
    check_sampler(sampler, parse_release("vllm==" + ".".join(map(str, first))))  # answered


# ---- 3. one name, one engine list --------------------------------------------------------------------------------

def test_the_name_fp8_marlin_gives_is_the_one_marlin_reads():
    a100, l4 = load_accelerator("a100-sxm4-80gb"), load_accelerator("l4")
    ckpt = FM.Fp8Checkpoint(W.FORMATS["fp8"])
    name = FM.marlin_format(ckpt, "bf16").name
    assert name == "fp8-marlin" == MG.FP8_MARLIN_FORMAT
    for engine in FM.ENGINES:
        assert MG.runs_marlin(parse_release(engine), a100, name)
        assert MG.runs_marlin(parse_release(engine), a100, name + " (attention bf16)")
        assert not MG.runs_marlin(parse_release(engine), l4, name)  # sm89: FP8 tensor cores, no Marlin path
    assert FM.ENGINES == ("vllm", "sglang") and not MG.runs_marlin(parse_release("trtllm"), a100, name)


# ---- 4. parse once, convert once ---------------------------------------------------------------------------------

def test_a_resolve_parses_the_checkpoint_once(monkeypatch):
    """deepseek-v3's block-FP8 quantization_config on an A100: weight_format_from_hf ran 3 times a resolve (the format,
    then fp8_checkpoint for the part asked and again for Plan.fp8)."""
    from gpuplan.jobs.inference import resolve
    from gpuplan.jobs.inference.schema import InferenceInputs

    calls, original = [], resolve.weight_format_from_hf
    monkeypatch.setattr(resolve, "weight_format_from_hf", lambda qcfg: calls.append(1) or original(qcfg))
    plan = resolve.resolve_plan(InferenceInputs(model="deepseek-v3", gpu="a100", tp=8, pp=2))
    assert len(calls) == 1
    assert plan.setup.fmt.name == "fp8-marlin" and plan.fp8.block_k == 128 and plan.fp8.moe


def test_a_search_converts_an_fp8_plan_once_a_gpu_type(monkeypatch):
    """search_configurations: serves' filter once and the search once a part (it converted at max_sequences_at and
    at evaluate, for each TP tried: 1 + 2 x TPs)."""
    from gpuplan.jobs.inference import resolve
    from gpuplan.jobs.inference.schema import InferenceInputs
    from gpuplan.jobs.inference.serving import search_configurations

    plan = resolve.resolve_plan(InferenceInputs(model="llama-3.1-8b", gpu="a100", quantization="fp8"))
    again = resolve.plan_on_gpu(plan, plan.gpu)
    assert resolve.plan_on_gpu(again, plan.gpu) is again and again.setup.fmt == plan.setup.fmt
    seen, original = [], FM.runs_fp8_marlin
    monkeypatch.setattr(FM, "runs_fp8_marlin", lambda rel, gpu, ckpt: seen.append(gpu.id) or original(rel, gpu, ckpt))
    rows = search_configurations(plan, 64)
    assert len(rows) > 3  # the search ran over several GPU types
    assert all(seen.count(gpu.id) == 2 for gpu, _, _, _ in rows), sorted(seen)



def test_a_replaced_setup_is_converted_again():
    """Review s19 S2: plan_on_gpu's mark names the part, setup and FP8 facts it converted from, so a plan whose setup
    is replaced after its conversion (here: back to the FP8 format as stored) is converted again for the same part;
    a mark of the part alone returned the stale format (FP8 tensor-core GEMMs an A100 does not have)."""
    from dataclasses import replace as dc_replace

    from gpuplan.jobs.inference import resolve
    from gpuplan.jobs.inference.schema import InferenceInputs

    plan = resolve.resolve_plan(InferenceInputs(model="llama-3.1-8b", gpu="a100", quantization="fp8"))
    assert plan.setup.fmt.name == "fp8-marlin" and plan.fp8.fmt.name != "fp8-marlin"
    stale = dc_replace(plan, setup=dc_replace(plan.setup, fmt=plan.fp8.fmt))
    assert resolve.plan_on_gpu(stale, plan.gpu).setup.fmt.name == "fp8-marlin"
    again = resolve.plan_on_gpu(plan, plan.gpu)
    assert resolve.plan_on_gpu(again, plan.gpu) is again  # unchanged since its conversion, same part: as it is


def test_v1_since_is_the_first_v1_row():
    """Review s19 N3: releases.VLLM_V1_SINCE states V1's first release a second time beside VLLM_RULES' rows; the two
    must agree (the sampler gates read the rows)."""
    from gpuplan.core.serving.releases import VLLM_RULES, VLLM_V1_SINCE

    assert next(rules.since for rules in VLLM_RULES if rules.v1) == VLLM_V1_SINCE == (0, 8, 0)



def test_a_config_with_one_position_is_refused_naming_the_field(run_cli, tmp_path):
    """H1 wave 21's found list: a config.json with max_position_embeddings 1 was answered by `infer` with 'output_tokens:
    got 0; must be at least 1 and below the context (1)', a field the user never gave; a model needs a prompt token
    and one generated, so the config's field is refused (adapters/hf_config.py: minimum 2)."""
    import json
    from pathlib import Path

    import gpuplan

    entry = json.loads((Path(gpuplan.__file__).parent / "catalog" / "models" / "olmo-3-7b.json").read_text())
    config = dict(entry["config"], max_position_embeddings=1)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    for command in ("infer", "memory"):
        code, out, err = run_cli(command, str(path), "--gpu", "h100")
        assert code == 2 and err.count("\n") == 1
        assert "max_position_embeddings: got 1; must be a whole number >= 2" in err and "output_tokens" not in err
