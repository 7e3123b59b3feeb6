"""SGLang and TensorRT-LLM releases gate --speculative as vLLM's do (wave 11 hostile sweep: `infer --engine
sglang==0.3.0 --speculative eagle3` answered). The boundaries are the ones jobs/inference/inputs_releases.py cites:
SGLang from its wheels' server_args.py --speculative-algorithm choices (pip download sglang==X, 2026-12-06),
TensorRT-LLM from docs/source/release-notes.md. Each pair: the release just before refuses in one line naming
`speculative` and the first release, the first release answers."""

from __future__ import annotations

import pytest
from helpers import field_refusal, web_refusal

from gpuplan.core.serving.releases import parse_release
from gpuplan.errors import InputError
from gpuplan.jobs.inference import inputs_releases as IR

BOUNDARIES = (  # (method, the release just before, the first release as the wheels / notes write it)
    ("eagle", "sglang==0.4.1.post3", "sglang==0.4.1.post4"),    # eagle_worker.py, choices ["EAGLE"] @0.4.1.post4 L667
    ("mtp", "sglang==0.4.3", "sglang==0.4.3.post1"),      # ["EAGLE", "NEXTN"] @0.4.3.post1 L711
    ("eagle3", "sglang==0.4.4.post1", "sglang==0.4.4.post2"),  # "EAGLE3" @0.4.4.post2 L816, not @0.4.4.post1 L758
    ("draft", "sglang==0.5.1.post3", "sglang==0.5.2"),    # "STANDALONE" @0.5.2 L1538
    ("ngram", "sglang==0.5.2", "sglang==0.5.3"),          # "NGRAM" @0.5.3 L2044
    ("draft", "trtllm==0.6.1", "trtllm==0.7.0"),          # 'Speculative decoding (preview)', 0.7 notes
    ("eagle", "trtllm==0.14.0", "trtllm==0.15.0"),        # 'Added support for EAGLE'
    ("ngram", "trtllm==0.14.0", "trtllm==0.15.0"),        # 'prompt-lookup speculative decoding'
    ("mtp", "trtllm==0.18.2", "trtllm==0.19.0"),          # 'Multi-Token Prediction (MTP) support'
    ("eagle3", "trtllm==0.18.2", "trtllm==0.19.0"),       # 'initial EAGLE-3 implementation'
)


@pytest.mark.parametrize("method,before,first", BOUNDARIES)
def test_the_release_before_refuses_and_the_first_answers(method, before, first):
    with pytest.raises(InputError) as exc:
        IR.check_speculative(method, parse_release(before))
    version = first.split("==")[1]
    assert exc.value.field == "speculative" and f"runs it from {version} (" in str(exc.value)
    assert f"--engine {first} or later" in str(exc.value)
    IR.check_speculative(method, parse_release(first))


def test_a_post_build_is_read_as_its_release():
    """Review w11 r4 M3: an SGLang post build keeps its number (releases.parse_version: 0.4.1.post1 = (0, 4, 1, 1),
    after 0.4.1, before 0.4.2), so the builds the wheels show lacking a method refuse it (EAGLE absent from
    0.4.1-0.4.1.post3, NEXTN from 0.4.3, EAGLE3 from 0.4.4.post1: SGLANG_SPECULATIVE_SINCE) and the first build
    and every later release answer; the label names the build. vLLM and TensorRT-LLM still read X.Y.Z.postN as
    X.Y.Z (tests/test_serving_memory, tests/test_hostile_wave7)."""
    assert parse_release("sglang==0.4.1.post1").version == (0, 4, 1, 1)
    assert (0, 4, 1) < parse_release("sglang==0.4.1.post1").version < parse_release("sglang==0.4.2").version
    assert parse_release("sglang==0.5.0.post2").label == "sglang==0.5.0.post2"
    assert parse_release("vllm==0.6.3.post1").version == (0, 6, 3)
    for method, refused, answered in (("eagle", ("0.4.1", "0.4.1.post1", "0.4.1.post3"), ("0.4.1.post4", "0.4.2")),
                                      ("mtp", ("0.4.3",), ("0.4.3.post1", "0.4.4")),
                                      ("eagle3", ("0.4.4", "0.4.4.post1"), ("0.4.4.post2", "0.4.5"))):
        for build in refused:
            with pytest.raises(InputError) as exc:
                IR.check_speculative(method, parse_release(f"sglang=={build}"))
            assert f"sglang=={build} has no {method}" in str(exc.value)
        for build in answered:
            IR.check_speculative(method, parse_release(f"sglang=={build}"))


DOORS = (("llama-3.1-8b", "h100", 1, "sglang==0.3.0", "eagle3", "sglang==0.4.4.post2"),
         ("deepseek-v3", "h200", 8, "trtllm==0.18.2", "mtp", "trtllm==0.19.0"))


@pytest.mark.parametrize("model,gpu,gpus,engine,method,valid", DOORS)
def test_every_door_refuses(run_cli, client, tmp_path, model, gpu, gpus, engine, method, valid):
    import gpuplan

    err = field_refusal(run_cli("infer", model, "--gpu", gpu, "--gpus", str(gpus), "--engine", engine,
                                "--speculative", method), "speculative", valid)
    assert err.count("\n") == 1
    web_refusal(client.post("/api/inference", json={"model": model, "gpu": gpu, "gpus": gpus, "engine": engine,
                                                    "speculative": method, "search": False}), "speculative", valid)
    plan = tmp_path / "p.yaml"
    plan.write_text(f"model: {model}\ngpu: {gpu}\ngpus: {gpus}\nengine: {engine}\nspeculative: {method}\n")
    field_refusal(run_cli("infer", str(plan)), f"{plan}", f"speculative: got '{method}'")
    with pytest.raises(InputError) as exc:
        gpuplan.estimate_inference(gpuplan.InferenceInputs(model=model, gpu=gpu, gpus=gpus, engine=engine,
                                                           speculative=method))
    assert exc.value.field == "speculative" and valid in str(exc.value)


def test_the_first_release_answers_on_the_cli(run_cli):
    """sglang==0.4.4.post2 (the first build with EAGLE3) prices EAGLE-3; trtllm==0.19 MTP on DeepSeek-V3."""
    for args in (("llama-3.1-8b", "--gpu", "h100", "--engine", "sglang==0.4.4.post2", "--speculative", "eagle3"),
                 ("deepseek-v3", "--gpu", "h200", "--gpus", "8", "--engine", "trtllm==0.19", "--speculative", "mtp")):
        code, out, err = run_cli("infer", *args, "--no-search")
        assert code == 0 and "ms" in out, err
