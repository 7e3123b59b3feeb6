"""--cuda-graph-scope and --flex-backend as plan / train / budget inputs (schema.te_kernels, review of 5b75a49):
each reaches the step the validation mapping prices a published row with, the defaults are Megatron-Core's
(cuda_graph_impl 'none', moe_flex_dispatcher_backend 'deepep': transformer_config.py@core_v0.16.1 L776 / L682),
bad combinations are refused in one line, and the CLI, a plan file, the web API and the Python API agree.

Hand numbers: one host op costs 7.5466 us (core.time.host's carry-over, worked in tests/test_moe_router_graphs.py);
without router graphs a flex MoE layer issues 39 router + 11 preprocessing ops in place of the replay's 8: 42 ops.
DeepEP's FP8 padding: Fp8Padding + Fp8Unpadding, 2 copies each way (moe_layer.QUANTIZATION_PADDING_COPIES), each
7.84 us + the routed rows read and written (memory_kernels.KERNEL_FIXED_SECONDS, HBM_STREAM_EFFICIENCY 0.89).
"""

from __future__ import annotations

import json

import pytest

from gpuplan.errors import InputError

US = 1e-6
OP = 7.5466 * US
ROW = "mbridge-26.04-qwen3-30b-a3b-h100-sxm-16g-fp8cs"  # 16 H100, ep 16, mb 1, GBS 1,024: flex / HybridEP, no graphs
MICRO_BATCHES, MOE_LAYERS = 64, 48  # 1,024 / (dp 16 x mb 1); Qwen3-30B-A3B's 48 layers are all MoE


def _row_fields(run, **extra) -> dict:
    """The row's recipe as a user types it (conftest's published_row_fields adds the layout)."""
    from gpuplan.jobs.validation.published_throughput import recipe_low_precision_weights

    fields = dict(dtype="fp8", framework="megatron", ep_dispatcher="flex", loss=run["recipe_memory"]["loss"],
                  grad_dtype=run["recipe_memory"]["grad_dtype"]) | extra  # bf16 buffer and wire, as the row's step
    fp8 = fields["dtype"] == "fp8"  # FP8-CS: primary weights (its gather at 1 B); a BF16 run has none
    return fields | {"low_precision_weights": recipe_low_precision_weights(run) if fp8 else None}


def _step(plan_published_row, run, **extra) -> float:
    return plan_published_row(run, **_row_fields(run, **extra)).step_seconds


def test_the_default_is_megatron_cores_no_graphs_and_deepep():
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.search import evaluator_for

    def step(**extra):
        return evaluator_for(PlanInputs(model="qwen3-30b-a3b", gpu="h100", gpus=16, **extra)).step

    plain = step(framework="megatron", ep_dispatcher="flex")
    assert (plain.moe_launch, plain.moe_router_graphs, plain.flex_backend) == ("eager", False, "deepep")
    graphed = step(framework="megatron", cuda_graph_scope="moe-router", ep_dispatcher="flex", flex_backend="hybridep")
    assert (graphed.moe_launch, graphed.moe_router_graphs, graphed.flex_backend) == ("eager", True, "hybridep")
    # --full-iteration-graph (documented before) is --cuda-graph-scope full-iteration
    assert step(framework="megatron", full_iteration_graph=True) == step(framework="megatron",
                                                                          cuda_graph_scope="full-iteration")
    assert step(framework="megatron", full_iteration_graph=True).moe_launch == "graph"
    # other frameworks charge no MoE host time per layer (core.frameworks moe_launch 'none'): unchanged
    for name in ("generic", "torchtitan", "deepspeed"):
        assert step(framework=name).moe_launch == "none", name


def test_the_router_graphs_input_moves_the_step_by_the_router_ops(published_rows, plan_published_row):
    # the row is host-bound on every MoE layer-micro-batch, forward and backward: 64 x 48 x 42 ops x 7.5466 us
    # = 0.97382 s in the forward and 1.4544 x that in the backward, whose counted host is the forward's Python
    # x 1.4544 (core.time.moe_host.backward_host_seconds): 2.3900 s
    run = published_rows[ROW]
    none = _step(plan_published_row, run, flex_backend="hybridep", cuda_graph_scope="none")
    graphed = _step(plan_published_row, run, flex_backend="hybridep", cuda_graph_scope="moe-router")
    assert none - graphed == pytest.approx(MICRO_BATCHES * MOE_LAYERS * 42 * OP * (1 + 1.4544), rel=1e-3)
    # the default is 'none', and the step the validation mapping prices the row with (its cuda_graph 'none')
    assert _step(plan_published_row, run, flex_backend="hybridep") == none


def test_plan_with_the_rows_graphs_and_backend_is_the_validation_mapping(published_rows, plan_published_row):
    from gpuplan.jobs.validation.published_throughput import predict_tokens_per_gpu_s

    run = published_rows[ROW]
    assert run["moe_comm"]["cuda_graph"] == "none" and run["moe_comm"]["backend"] == "hybridep"
    plan = plan_published_row(run, **_row_fields(run, flex_backend="hybridep", cuda_graph_scope="none"))
    assert plan.tokens_per_second / plan.gpus_asked == pytest.approx(predict_tokens_per_gpu_s(run), rel=1e-9)
    graphed = plan_published_row(run, **_row_fields(run, flex_backend="hybridep", cuda_graph_scope="moe-router"))
    assert graphed.tokens_per_second / graphed.gpus_asked == pytest.approx(
        predict_tokens_per_gpu_s(run, moe_router_graphs=True), rel=1e-9)


def test_the_deepep_backend_adds_the_fp8_padding_copies(published_rows, plan_published_row):
    # 4,096 tokens x top-8 x hidden 2,048 x 2 B, read and written: 268,435,456 B a copy; on the H100's 3.35 TB/s
    # at 0.89: 90.03 us + 7.84 us = 97.87 us; 2 + 2 copies a layer-micro-batch: 391.49 us x 64 x 48 = 1.2027 s
    run = published_rows[ROW]
    copy = 7.84 * US + 4096 * 8 * 2048 * 2 * 2 / (3.35e12 * 0.89)
    hybrid = _step(plan_published_row, run, flex_backend="hybridep")
    deepep = _step(plan_published_row, run, flex_backend="deepep")
    assert deepep - hybrid == pytest.approx(MICRO_BATCHES * MOE_LAYERS * 4 * copy, rel=1e-3)
    assert _step(plan_published_row, run) == deepep  # Megatron-Core's default backend
    # BF16: no padding, the backend changes nothing
    assert _step(plan_published_row, run, dtype="bf16", flex_backend="deepep") == \
        _step(plan_published_row, run, dtype="bf16", flex_backend="hybridep")


Q = ("plan", "qwen3-30b-a3b", "--gpu", "h100", "--gpus", "16")


@pytest.mark.parametrize(("args", "field", "fragment"), [
    (("--framework", "torchtitan", "--cuda-graph-scope", "moe-router"), "cuda_graph_scope", "--framework megatron"),
    (("--framework", "deepspeed", "--ep-dispatcher", "alltoall", "--flex-backend", "hybridep"), "flex_backend",
     "--framework megatron"),
    (("--framework", "generic", "--cuda-graph-scope", "moe-router"), "cuda_graph_scope", "only full-iteration changes its answer"),
    (("--framework", "generic", "--ep-dispatcher", "flex", "--flex-backend", "hybridep"), "flex_backend",
     "--framework megatron"),
    (("--flex-backend", "hybridep"), "flex_backend", "--ep-dispatcher flex"),
    (("--full-iteration-graph", "--cuda-graph-scope", "moe-router"), "cuda_graph_scope", "one of the two"),
    (("--cuda-graph-scope", "attn"), "cuda_graph_scope", "none, moe-router, full-iteration"),
    (("--ep-dispatcher", "flex", "--flex-backend", "nccl"), "flex_backend", "deepep, hybridep"),
])
def test_the_cli_refuses_in_one_line(run_cli, args, field, fragment):
    """--cuda-graph-scope none under torchtitan and --flex-backend deepep without the flex dispatcher were refused
    here until wave 18; as stated defaults they are answered now (tests/test_hostile_w18.py)."""
    code, out, err = run_cli(*Q, *args)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith(f"error: {field}:") and fragment in err and "Traceback" not in err


def test_a_dense_model_has_no_router_to_graph(run_cli):
    code, _, err = run_cli("plan", "llama-3.1-8b", "--gpu", "h100", "--gpus", "8", "--cuda-graph-scope", "moe-router")
    assert code == 2 and err.startswith("error: cuda_graph_scope:") and "dense" in err and err.count("\n") == 1


def test_the_python_api_refuses_as_the_cli_does():
    from gpuplan.jobs.plan.schema import PlanInputs

    with pytest.raises(InputError) as err:
        PlanInputs(model="qwen3-30b-a3b", gpu="h100", gpus=16, flex_backend="hybridep")
    assert err.value.field == "flex_backend"


ASKED = {"model": "qwen3-30b-a3b", "gpu": "h100", "gpus": 16, "framework": "megatron", "dtype": "fp8",
         "ep": 16, "ep_dispatcher": "flex", "flex_backend": "hybridep", "cuda_graph_scope": "moe-router"}


def _flags(asked: dict) -> list[str]:
    flags = [asked["model"]]
    for k, v in asked.items():
        if k != "model":
            flags += [f"--{k.replace('_', '-')}", str(v)]
    return flags


def test_cli_plan_file_web_api_and_python_api_give_one_answer(run_cli, tmp_path):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from gpuplan.jobs.plan.estimate import plan_report
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.web import create_app

    code, out, err = run_cli("plan", *_flags(ASKED), "--json")
    assert code == 0, err
    cli = json.loads(out)
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text("".join(f"{k}: {v}\n" for k, v in ASKED.items()))
    code, out, err = run_cli("plan", str(plan_file), "--json")
    assert code == 0, err
    from_file = json.loads(out)
    api = TestClient(create_app()).post("/api/plan", json=ASKED).json()
    python = plan_report(PlanInputs(**ASKED)).to_dict()
    for other in (from_file, api, python):
        assert other["results"] == cli["results"] and other["assumptions"] == cli["assumptions"]
    shown = {a["key"]: a for a in cli["assumptions"]}
    assert shown["cuda_graph_scope"]["user_set"] and shown["cuda_graph_scope"]["value"].startswith("TE graphs")
    assert "flex (hybridep)" in shown["ep_comm"]["value"]
    # the inputs reach the answer: Megatron-Core's defaults (no graphs, DeepEP) give a longer step
    plain = {k: v for k, v in ASKED.items() if k not in ("flex_backend", "cuda_graph_scope")}
    default = TestClient(create_app()).post("/api/plan", json=plain).json()
    assert default["results"]["best_step_seconds"] > cli["results"]["best_step_seconds"]
    assert {a["key"]: a for a in default["assumptions"]}["cuda_graph_scope"]["value"].startswith("none")
