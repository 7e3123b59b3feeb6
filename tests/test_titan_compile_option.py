"""`--compile` (issue 36 item 2): torchtitan's torch.compile per block asked through the user's door
(CLI, plan file, web API) and timed with core/time/titan_ops.py's compiled op list."""

from __future__ import annotations

import json

import pytest

# Llama 3.1 8B on the 8 H100 (96 GB, 500 W) of torchtitan's Dec-2024 benchmark: one 8,192-token
# sequence per GPU, FSDP, no recompute (so no forward is repeated and the step's difference is
# the memory-bound work alone: the host is hidden behind 8,192-token kernels)
PLAN = ("plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm-96gb-500w", "--gpus", "8", "--framework",
        "torchtitan", "--tp", "1", "--pp", "1", "--cp", "1", "--zero", "3", "--micro-batch", "1",
        "--recompute", "none", "--seq-len", "8192", "--global-batch", "8", "--dtype", "bf16")


def _plan(run_cli, *extra: str) -> dict:
    code, out, err = run_cli(*PLAN, *extra, "--json")
    assert code == 0, err
    return json.loads(out)


def test_compile_saves_the_memory_bound_bytes_titan_ops_counts(run_cli):
    eager, compiled = _plan(run_cli), _plan(run_cli, "--compile")
    saved = eager["results"]["best_step_compute"] - compiled["results"]["best_step_compute"]
    # per token and layer (h 4096, q 4096, kv 1024, I 14336 = 3.5h; titan_ops' classes), torchtitan 0.3.0's one
    # wqkv and k / v handed to SDPA unrepeated (core.frameworks; docs/step.md, q / k / v per release in the op
    # list): eager with nn.RMSNorm: norms 28h, RoPE 20(q + kv) each way = 50h, SwiGLU 28I = 98h, residual 24h,
    # grad sums 6h (w1/w3's), the split's copies and cat 8(q + 2kv) = 12h: 218h = 892,928 B in 34 kernels (233h in
    # 36 with wq, wk, wv and repeat_kv's 10h); compiled: norms 40h (attention_norm's backward reads one gradient,
    # 48h with three), RoPE 50h (k written at its own width, 58h repeated), SwiGLU 16I = 56h, residual 6h: 152h =
    # 622,592 B in 24 kernels. The loss over V = 128,256: eager 36V B in 7 kernels, compiled 6V in 2.
    # 8,192 tokens x (32 x 270,336 + 30 x 128,256) = 1.0239e11 B at 89% of 2.4 TB/s = 47.93 ms,
    # + (32 x 10 + 5) kernels x 7.84 us = 2.55 ms  ->  50.48 ms (47.97 with 9dec370's wq, wk, wv and repeat_kv)
    assert saved == pytest.approx(0.05048, abs=0.0005)
    # the rest of the step (GEMMs, attention, FSDP traffic, optimizer) is unchanged
    assert eager["results"]["best_step_dp_comm"] == compiled["results"]["best_step_dp_comm"]
    # compile / eager with today's nn.RMSNorm (1.046 when written). The published 1.157 (torchtitan
    # benchmarks/llama3_h100_202412_torchtitan.md Table 1) is against 9dec370's Python RMSNorm
    # (8 kernels, 36h B forward a norm), which a plan does not run: tests/test_titan_published.py
    # checks that pair (1.18 predicted). With the fused norm eager runs less memory-bound work, so
    # compile gains less than published, and the step saves exactly the 50.48 ms above
    eager_s, compiled_s = eager["results"]["best_step_seconds"], compiled["results"]["best_step_seconds"]
    assert 1.0 < eager_s / compiled_s < 1.157
    assert eager_s - compiled_s == pytest.approx(0.05048, abs=0.0005)


def test_the_assumption_line_says_which(run_cli):
    shown = {a["key"]: a for a in _plan(run_cli)["assumptions"]}
    assert shown["compile"]["value"].startswith("eager") and not shown["compile"]["user_set"]
    shown = {a["key"]: a for a in _plan(run_cli, "--compile")["assumptions"]}
    assert shown["compile"]["value"].startswith("torch.compile per TransformerBlock")
    assert shown["compile"]["user_set"] and "b5bcd76" in shown["compile"]["source"]
    code, out, err = run_cli("train", "--model", "llama-3.1-8b", "--gpu", "h100-sxm-96gb-500w", "--gpus", "8",
                             "--framework", "torchtitan", "--compile", "--mfu", "predicted", "--tokens", "1e11",
                             "--json")
    assert code == 0, err
    assert any(a["key"] == "compile" and a["user_set"] for a in json.loads(out)["assumptions"])


@pytest.mark.parametrize("args, fragment", [
    (("--model", "llama-3.1-8b", "--framework", "megatron"), "give --framework torchtitan (not megatron"),
    (("--model", "llama-3.1-8b", "--framework", "hf"), "give --framework torchtitan (not hf"),
    (("--model", "mixtral-8x7b", "--framework", "torchtitan"), "mixtral-8x7b is mixture-of-experts"),
])
def test_compile_where_it_does_not_apply_is_one_line_and_exit_2(run_cli, args, fragment):
    code, out, err = run_cli("plan", "--gpu", "h100", "--gpus", "64", *args, "--compile")
    assert code == 2 and out == ""
    assert err.startswith("error: compile: got True") and fragment in err and err.count("\n") == 1


def test_memory_takes_the_same_field_and_keeps_its_estimate(run_cli):
    args = ("memory", "--model", "llama-3.1-8b", "--gpu", "h100", "--framework", "torchtitan", "--json")
    code, plain, _ = run_cli(*args)
    code2, compiled, _ = run_cli(*args, "--compile")
    assert code == code2 == 0
    plain, compiled = json.loads(plain), json.loads(compiled)
    assert plain["results"] == compiled["results"]
    assert any(a["key"] == "compile" and "published memory gap" in a["source"] for a in compiled["assumptions"])


def test_a_plan_file_takes_the_same_key(run_cli, tmp_path):
    plan = tmp_path / "plan.toml"
    keys = dict(zip((a.lstrip("-").replace("-", "_") for a in PLAN[1::2]), PLAN[2::2]))
    plan.write_text("".join(f'{k} = "{v}"\n' for k, v in keys.items()) + "compile = true\n")
    code, out, err = run_cli("plan", str(plan), "--json")
    assert code == 0, err
    from_file = json.loads(out)
    assert from_file["results"]["best_step_seconds"] == _plan(run_cli, "--compile")["results"]["best_step_seconds"]


def test_the_web_api_takes_the_same_key():
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from gpuplan.web import create_app

    client = TestClient(create_app())
    body = {"model": "llama-3.1-8b", "gpu": "h100-sxm-96gb-500w", "gpus": 8, "framework": "torchtitan", "tp": 1,
            "pp": 1, "cp": 1, "zero": 3, "micro_batch": 1, "recompute": "none", "seq_len": 8192, "global_batch": 8,
            "dtype": "bf16"}
    eager = client.post("/api/plan", json=body)
    compiled = client.post("/api/plan", json=body | {"compile": True})
    assert eager.status_code == compiled.status_code == 200, compiled.text
    saved = eager.json()["results"]["best_step_compute"] - compiled.json()["results"]["best_step_compute"]
    assert saved == pytest.approx(0.05048, abs=0.0005)  # the CLI test's hand count
    refused = client.post("/api/plan", json=body | {"compile": True, "framework": "megatron"})
    assert refused.status_code == 422 and "compile" in refused.text
