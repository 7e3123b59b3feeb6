"""Review w14 R2 M4, M5, S3 (mender C, 2026-12-06).

M4: the vLLM release gate keyed on the compute dtype (fp8 / int8), so a checkpoint's MXFP4 (compute bf16), NVFP4
(fp4) and GPTQ (int4 compute fp16) were answered on releases that cannot load them (`infer --model gpt-oss-20b
--engine vllm==0.2.7`: exit 0). The first releases, read in the wheels (inputs_releases.VLLM_CHECKPOINT_SINCE):
gptq 0.2.6, nvfp4 0.8.0, mxfp4 0.10.1. M5: the torchtitan interleaved refusal said 'at least pp' to a batch that
already had pp micro-batches. S3: the MXFP4 padding in the weights basis was a residual, not
core.serving.weights.mxfp4_padding_bytes.
"""

import json

import pytest
from helpers import field_refusal, web_refusal

pytestmark = pytest.mark.usefixtures("time_box")


def _checkpoint(tmp_path, quantization_config: dict) -> str:
    """llama-3-8b's catalog config.json with ``quantization_config``, written to tmp_path."""
    from gpuplan.catalog.paths import CATALOG

    config = json.loads((CATALOG / "models" / "llama-3-8b.json").read_text())["config"]
    config["quantization_config"] = quantization_config
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return str(path)


# ---- M4 ----------------------------------------------------------------------------------------------------------

def test_a_checkpoints_mxfp4_before_0_10_1_is_refused_the_same_at_every_door(run_cli, client, tmp_path):
    """gpt-oss-20b's MXFP4 checkpoint: quantization/mxfp4.py is absent from the 0.10.0 wheel, first in 0.10.1's.
    CLI, plan file, web and Python API give the same one line naming quantization."""
    from gpuplan import InferenceInputs, InputError, estimate_inference

    ask = {"model": "gpt-oss-20b", "gpu": "h100", "engine": "vllm==0.10.0"}
    fragment = "got 'mxfp4'; vllm==0.10 cannot load a mxfp4 checkpoint: vLLM loads them from 0.10.1"
    flag = field_refusal(run_cli("infer", "--model", "gpt-oss-20b", "--gpu", "h100", "--engine", "vllm==0.10.0"),
                         "quantization", fragment)
    plan = tmp_path / "p.yaml"
    plan.write_text("model: gpt-oss-20b\ngpu: h100\nengine: vllm==0.10.0\n", encoding="utf-8")
    assert field_refusal(run_cli("infer", str(plan)), f"{plan}: quantization") == flag.replace(
        "error: ", f"error: {plan}: ", 1)
    web = web_refusal(client.post("/api/inference", json=ask), "quantization", fragment)
    with pytest.raises(InputError) as api:
        estimate_inference(InferenceInputs(**ask))
    assert flag.strip() == f"error: {web}" == f"error: {api.value}"
    assert field_refusal(run_cli("infer", "--model", "gpt-oss-20b", "--gpu", "h100", "--engine", "vllm==0.2.7"),
                         "quantization", "vllm==0.2.7 cannot load a mxfp4 checkpoint")


@pytest.mark.parametrize("qcfg, older, first", [
    ({"quant_method": "gptq", "bits": 4, "group_size": 128}, "vllm==0.2.5", "vllm==0.2.6"),
    ({"quant_method": "gptq_marlin", "bits": 4, "group_size": 128}, "vllm==0.4.1", "vllm==0.4.2"),
    ({"quant_method": "modelopt", "quant_algo": "NVFP4"}, "vllm==0.7.3", "vllm==0.8.0"),
])
def test_a_checkpoint_format_is_refused_before_its_first_release_and_answered_from_it(run_cli, tmp_path, qcfg,
                                                                                      older, first):
    """GPTQ: --quantization choices ['awq', 'squeezellm', None] at arg_utils.py@v0.2.5 L182, with 'gptq' at @v0.2.6
    L184; gptq_marlin first in quantization/__init__.py@v0.4.2; ModelOptNvFp4Config first in modelopt.py@v0.8.0
    (0.7.3's has FP8 only). The release before answered exit 0."""
    model = _checkpoint(tmp_path, qcfg)
    key = qcfg["quant_method"] if "gptq" in qcfg["quant_method"] else "nvfp4"
    field_refusal(run_cli("infer", "--model", model, "--gpu", "h100", "--engine", older), "quantization",
                  f"cannot load a {key} checkpoint: vLLM loads them from {first.split('==')[1]}")
    assert run_cli("infer", "--model", model, "--gpu", "h100", "--engine", first)[0] == 0


def test_awq_and_the_flag_int4_are_not_gated(run_cli, tmp_path):
    """AWQ is in the oldest release modelled (0.2.0: --quantization choices ['awq']); --quantization int4 may be
    AWQ, so it stays answered there too."""
    model = _checkpoint(tmp_path, {"quant_method": "awq", "bits": 4, "group_size": 128})
    assert run_cli("infer", "--model", model, "--gpu", "h100", "--engine", "vllm==0.2.0")[0] == 0
    assert run_cli("infer", "--model", "llama-3-8b", "--gpu", "h100", "--engine", "vllm==0.2.0",
                   "--quantization", "int4")[0] == 0


def test_checkpoint_key_reads_the_method_then_the_format():
    from gpuplan.jobs.inference.inputs_releases import checkpoint_key

    assert checkpoint_key("GPTQ ", "int4-g128") == "gptq"
    assert checkpoint_key("awq", "int4-g128") is None
    assert checkpoint_key("modelopt", "nvfp4 (attention bf16)") == "nvfp4"
    assert checkpoint_key("mxfp4", "mxfp4") == "mxfp4"
    assert checkpoint_key(None, "fp8") is None


# ---- M5 ----------------------------------------------------------------------------------------------------------

def test_next_interleaved_micro_batches_is_the_smallest_count_the_schedule_runs():
    """Brute force against planner.framework_rules.torch_pipeline_runs (torch 2.13 schedules.py L2935-2942) for pp
    2-8 and m 1-96; hand-worked: pp 2, m 5 -> 6 (rounds 3); pp 2, m 7 -> 8; pp 4, m 9 -> 10 (rounds 2)."""
    from gpuplan.jobs.memory.schema import next_interleaved_micro_batches
    from gpuplan.planner.framework_rules import torch_pipeline_runs

    assert [next_interleaved_micro_batches(p, m) for p, m in ((2, 5), (2, 7), (4, 9), (4, 8))] == [6, 8, 10, 8]
    for pp in range(2, 9):
        for m in range(1, 97):
            got = next_interleaved_micro_batches(pp, m)
            assert bool(torch_pipeline_runs(pp, 2, got)), (pp, m, got)
            assert not any(bool(torch_pipeline_runs(pp, 2, k)) for k in range(m, got)), (pp, m, got)


@pytest.mark.parametrize("gpus, given, named", [(2, 5, 6), (4, 14, 16)])
def test_the_torchtitan_interleaved_refusal_names_the_next_batch_that_runs(run_cli, gpus, given, named):
    """`memory --pp 2 --vpp 2 --framework torchtitan --global-batch 5` was told 'at least 2' (5 >= 2 already); it
    now names 6. With dp 2: 14 -> 7 micro-batches (rounds 3), the next that runs is 8, a global batch of 16."""
    from gpuplan.jobs.memory.schema import MemoryInputs

    ask = ("memory", "--model", "llama-3-8b", "--gpu", "h100", "--gpus", str(gpus), "--pp", "2", "--vpp", "2",
           "--framework", "torchtitan", "--global-batch")
    err = field_refusal(run_cli(*ask, str(given)), "global_batch", f"give a global batch of {named} (")
    assert "global batch of at least" not in err
    common = {"model": "llama-3-8b", "gpu": "h100", "gpus": gpus, "pp": 2, "vpp": 2, "framework": "torchtitan"}
    assert MemoryInputs(**common, global_batch=named).layout().global_batch == named  # the named batch is taken


# ---- S3 ----------------------------------------------------------------------------------------------------------

def test_the_padding_is_mxfp4_padding_bytes_not_a_residual():
    """gpt-oss-20b at tp 1: 24 layers x 32 experts x 3 x 2,880 x 2,880 routed weights x 4.25 bits / 8 x
    (2,944 x 3,072 / 2,880^2 - 1) = 917,471,232 bytes = 874.97 MiB (weights.mxfp4_padding_bytes). Another term in the per-GPU weights
    (1 GB added here) printed under the padding's name; it is not named padding now."""
    from dataclasses import replace

    from gpuplan import InferenceInputs
    from gpuplan.core.serving import memory as M
    from gpuplan.jobs.inference.memory_report import weights_added
    from gpuplan.jobs.inference.resolve import resolve_plan

    plan = resolve_plan(InferenceInputs(model="gpt-oss-20b", gpu="h100", engine="vllm"))
    memory = M.serving_memory_on(plan.spec, plan.groups, plan.setup, 1, 1, plan.gpu)
    text = weights_added(memory)
    assert text == " + 0.92 GB (874.97 MiB) MXFP4 expert padding (vLLM's MoE layout)", text
    assert weights_added(replace(memory, weights=memory.weights + 1e9)) == text
    dense = resolve_plan(InferenceInputs(model="llama-3-8b", gpu="h100", engine="vllm"))
    dense_memory = M.serving_memory_on(dense.spec, dense.groups, dense.setup, 1, 1, dense.gpu)
    assert "MXFP4" not in weights_added(replace(dense_memory, weights=dense_memory.weights + 1e9))
