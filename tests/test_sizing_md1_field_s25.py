"""The sizing's M/D/1 reading as a structured field (helper DB, session 25): where the note of docs/inference.md §5b is
said, `infer --json` carries its numbers in results.sized_config_md1 (jobs/inference/sizing_md1.md1_told), a line of
the colocated sizing section after the answer's, not among the headline's. The ask is §5b's first row (helper MS's,
s24): Llama-3.1-70B on A100 with TensorRT-LLM (no server hold), 3 requests/s, TTFT p99 800 ms: M/M/1 answers
44 x (tp 8) = 352 GPUs at prefill 2.7%, M/D/1 needs 9 x (tp 8) = 72 GPUs at 13.9%."""

import math

import pytest

from gpuplan.core.serving.load import MD1, first_token_seconds

pytestmark = pytest.mark.usefixtures("time_box")

ASK = ("infer", "llama-3.1-70b", "--gpu", "a100", "--engine", "trtllm", "--rps", "3", "--ttft-p99", "800ms")


@pytest.fixture(scope="module")
def prefill_s() -> float:
    """One prompt's prefill on A100 tp 8, seconds (the t_prefill of ρ = rate x t_prefill): 0.38-0.40 s."""
    from gpuplan.jobs.inference import sizing
    from gpuplan.jobs.inference.resolve import resolve_plan
    from gpuplan.jobs.inference.schema import InferenceInputs

    plan = resolve_plan(InferenceInputs(model="llama-3.1-70b", gpu="a100", engine="trtllm", rps=3, ttft_p99="800ms"))
    return sizing._tp_steps(plan, plan.gpu, 8)[0]


def test_the_md1_field_of_the_docs_first_row(run_json, prefill_s):
    data = run_json(*ASK)
    results = data["results"]
    assert results["sized_config"] == {"gpu": "a100-sxm4-80gb", "tp": 8, "replicas": 44}  # M/M/1: the answer
    md1 = results["sized_config_md1"]
    assert (md1["gpu"], md1["tp"], md1["replicas"]) == ("a100-sxm4-80gb", 8, 9)  # 9 x 8 = 72 GPUs
    # the replicas are the rate asked over the most one replica sustains: ceil(3 / 0.354) = ceil(8.48) = 9
    assert md1["replicas"] == math.ceil(3 / md1["rate_per_replica"]) and 8 < 3 / md1["rate_per_replica"] < 9
    # its prefill share is rate x t_prefill (§5b's table): 0.354 x 0.393 s = 13.9%
    assert md1["prefill_share"] == pytest.approx(md1["rate_per_replica"] * prefill_s, rel=1e-6)
    assert md1["prefill_share"] == pytest.approx(0.139, abs=5e-4)
    # and that rate is the TTFT-bound one: M/D/1's p99 TTFT there is the 800 ms target (max_rate bisects to 1e-4)
    assert first_token_seconds(prefill_s, md1["prefill_share"], queue=MD1)[1] == pytest.approx(0.8, rel=2e-3)
    # the line sits in the colocated sizing section, out of the headline; the note says the same numbers
    line = next(line for s in data["sections"] for line in s["lines"] if line["key"] == "sized_config_md1")
    assert line["text"].startswith("9 x (tp 8 on NVIDIA A100 80GB SXM4) = 72 GPUs")
    assert "sized_config_md1" not in data["headline"] and "sized_config" in data["headline"]
    (note,) = [n for n in data["notes"] if "M/D/1" in n]
    assert "9 x (tp 8 on NVIDIA A100 80GB SXM4) = 72 GPUs would do" in note and "at 13.9%;" in note


def test_no_md1_field_where_no_note(run_json):
    # the README's sizing ask: its H100 answer is held by its KV cache at prefill 37%, not by the TTFT (no note)
    data = run_json("infer", "llama-3.1-8b", "--rps", "20", "--ttft-p99", "500ms", "--tpot", "50ms", "--prompt", "2K",
                    "--output-tokens", "512")
    assert "sized_config_md1" not in data["results"] and not [n for n in data["notes"] if "M/D/1" in n]
