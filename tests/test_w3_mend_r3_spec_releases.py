"""One per-method table of the first vLLM release that runs each --speculative method, read from the wheels
(review w10 r3 M1, S1, NITs): every door refuses a method its release lacks in one line naming `speculative`
and the first release that runs it (exit 2). The parent answered MTP on 0.7.2, EAGLE on 0.4.1 and EAGLE-3 on
a Qwen target at 0.8.5."""

from __future__ import annotations

import pytest
from helpers import field_refusal, web_refusal

from gpuplan.core.serving.releases import parse_release
from gpuplan.errors import InputError
from gpuplan.jobs.inference import inputs_releases as IR

REFUSED = (  # (model, gpu, gpus, engine, method, the release named as valid)
    ("deepseek-v3", "h200", "8", "vllm==0.7.2", "mtp", "vllm==0.7.3"),   # deepseek_mtp.py first in 0.7.3's wheel
    ("deepseek-v3", "h200", "8", "vllm==0.8.5", "mtp", "vllm==0.7.3 (V0)"),  # 0.8.x: V0 only
    ("llama-3.1-8b", "h100", "1", "vllm==0.5.4", "eagle", "vllm==0.5.5"),  # models/eagle.py first in 0.5.5
    ("llama-3.1-8b", "h100", "1", "vllm==0.4.1", "ngram", "vllm==0.4.2"),  # ngram_worker.py first in 0.4.2
    ("llama-3.1-8b", "h100", "1", "vllm==0.4.0", "ngram", "vllm==0.4.2"),
    ("llama-3.1-8b", "h100", "1", "vllm==0.8.4", "eagle3", "vllm==0.8.5"),
    ("qwen3-8b", "h100", "1", "vllm==0.8.5", "eagle3", "vllm==0.10.1"),  # 'Eagle3 is only supported for Llama'
)


@pytest.mark.parametrize("model,gpu,gpus,engine,method,valid", REFUSED)
def test_cli_refuses_a_method_its_release_lacks(run_cli, model, gpu, gpus, engine, method, valid):
    err = field_refusal(run_cli("infer", model, "--gpu", gpu, "--gpus", gpus, "--engine", engine,
                                "--speculative", method), "speculative", valid)
    assert engine.rstrip(".0") in err and err.count("\n") == 1


@pytest.mark.parametrize("model,gpu,gpus,engine,method,valid", REFUSED)
def test_web_refuses_the_same(client, model, gpu, gpus, engine, method, valid):
    web_refusal(client.post("/api/inference", json={"model": model, "gpu": gpu, "gpus": int(gpus), "engine": engine,
                                                    "speculative": method, "search": False}), "speculative", valid)


def test_plan_file_and_python_api_refuse_the_same(run_cli, tmp_path):
    plan = tmp_path / "p.yaml"
    plan.write_text("model: deepseek-v3\ngpu: h200\ngpus: 8\nengine: vllm==0.7.2\nspeculative: mtp\n")
    field_refusal(run_cli("infer", str(plan)), f"{plan}", "speculative: got 'mtp'")
    import gpuplan

    for kw, valid in ((dict(model="deepseek-v3", gpu="h200", gpus=8, engine="vllm==0.7.2", speculative="mtp"),
                       "vllm==0.7.3"),
                      (dict(model="qwen3-8b", gpu="h100", engine="vllm==0.8.5", speculative="eagle3"), "Llama")):
        with pytest.raises(InputError) as exc:
            gpuplan.estimate_inference(gpuplan.InferenceInputs(**kw))
        assert exc.value.field == "speculative" and valid in str(exc.value)


def test_each_first_release_runs():
    """The first release of each method, and 0.9.0 MTP, pass; SGLang 0.4.9 runs MTP (NEXTN from 0.4.3.post1).
    SGLang's and TensorRT-LLM's own per-method gates (79a4c09) are checked in
    tests/test_spec_release_gates_sglang.py."""
    for method, since in IR.VLLM_SPECULATIVE_SINCE.items():
        IR.check_speculative(method, parse_release("vllm==" + ".".join(map(str, since))))
    IR.check_speculative("mtp", parse_release("vllm==0.9.0"))
    IR.check_speculative("mtp", parse_release("sglang==0.4.9"))
    IR.check_eagle3_target("eagle3", "llama", parse_release("vllm==0.8.5"))
    IR.check_eagle3_target("eagle3", "qwen3", parse_release("vllm==0.10.1"))
    assert IR.VLLM_SPECULATIVE_SINCE == {"draft": (0, 4, 1), "ngram": (0, 4, 2), "eagle": (0, 5, 5),
                                         "mtp": (0, 7, 3), "eagle3": (0, 8, 5)}


def test_mtp_on_0_7_3_still_answers(run_cli):
    code, out, _ = run_cli("infer", "deepseek-v3", "--gpu", "h200", "--gpus", "8", "--engine", "vllm==0.7.3",
                           "--speculative", "mtp")
    assert code == 0 and out


def test_sizing_ttft_names_the_rate_once(run_cli):
    """NIT: the rate a replica was in the value column only, not again in the formula."""
    code, out, _ = run_cli("infer", "llama-3.1-8b", "--rps", "20", "--ttft-p99", "500ms", "--tpot", "50ms",
                           "--prompt", "2K", "--output-tokens", "512", "--full")
    line = next(l for l in out.splitlines() if l.startswith("TTFT p99"))
    assert code == 0 and line.count("requests/s a replica") == 1 and "at the load asked: server hold" in line


@pytest.mark.parametrize("batch, hidden", [(16, False), (64, True)])
def test_runner_host_value_is_what_the_text_adds(run_json, batch, hidden):
    """NIT: where the draft issue is below the drafts' GPU work (batch 64) the --json value is the 29 serial
    launches alone (29 x 41.96 us = 1.22 ms), as the text says the issue is hidden; host-bound (batch 16) it
    adds the 46 draft launches (1.93 ms). The parent gave 3.15 ms at both."""
    from helpers import report_lines

    line = report_lines(run_json("infer", "llama-3.1-8b", "--gpu", "h100", "--engine", "vllm==0.8.5",
                                 "--speculative", "eagle", "--spec-tokens", "2", "--batch", str(batch)))[
        "spec_runner_host"]
    launch = 41.957e-6  # first_token_path.EAGER_HOST_PER_LAUNCH_S
    assert line["value"] == pytest.approx((29 + (0 if hidden else 46)) * launch, rel=1e-3)
    assert ("hidden" in line["text"]) == hidden
