"""Hostile inputs, wave 15 (2026-12-06): impossible combinations and capability mismatches, swept by scripts outside
the suite (in-process `gpuplan.cli.main` under a SIGALRM time box, plan files, the web app through its TestClient, the
Python API) over train, budget, memory, plan and infer, and the defects the sweep found, each fixed at its cause. A
refusal is one line naming the field and what is valid (exit status 2, 4xx), the same at every door.

Found: (a) an FP8 KV cache, FP8 weights or INT8 (W8A8) weights on a vLLM release that has none were answered
(`--engine vllm==0.2.7 --kv-dtype fp8`, `--engine vllm==0.4.0 --quantization fp8`, a checkpoint's fp8
quantization_config on vllm==0.4.0), as LoRA and speculative decoding on too-old releases were before wave 10;
(b) an --rps sizing whose --ttft-p99 / --tpot no configuration meets answered 'configuration: none meets the target'
with exit status 0 (web 200), where `plan` refuses a deadline no layout meets naming the fastest; (c) a stated tp
that does not divide the sequence under Megatron's sequence parallelism (`memory --tp 8 --seq-len 4100`) answered,
where Megatron asserts; (d) `memory` answered pipeline layouts whose schedule cannot run the step's micro-batches
(Megatron interleaved or torchtitan with fewer micro-batches than stages), which plan / train / budget leave out;
(e) `plan`'s free search chose such a tp ((c)) for an odd sequence length (4,097 on llama-3-70b: dp4 tp4 pp4);
(f) `report` quoted a refusal raised after parsing as the converted number ('output_tokens: got 2048' for '2K'),
where the job's own command quotes the text written.
"""

import json
import re

import pytest
from helpers import field_refusal, web_refusal

pytestmark = pytest.mark.usefixtures("time_box")  # conftest: a hang fails the case, not the suite

ASK = {"model": "llama-3-8b", "gpu": "h100"}


# ---- (a) formats a vLLM release does not serve ----------------------------------------------------------------------

@pytest.mark.parametrize("field, value, release, first", [("kv_dtype", "fp8", "vllm==0.2.7", "0.3.0"),
                                                          ("quantization", "fp8", "vllm==0.4.0", "0.4.1"),
                                                          ("quantization", "int8", "vllm==0.4.2", "0.4.3")])
def test_a_format_a_vllm_release_does_not_serve_is_refused_at_every_door(run_cli, client, field, value, release, first):
    """The 0.2.7 wheel's engine/arg_utils.py has no --kv-cache-dtype (0.3.0's: choices ['auto', 'fp8_e5m2']); the
    0.4.0 wheel has no quantization/fp8.py (0.4.1's does); compressed-tensors' W8A8 INT8 scheme is first in 0.4.3's.
    Each was answered as if the release ran it."""
    from gpuplan import InferenceInputs, InputError, estimate_inference

    flag = field_refusal(run_cli("infer", "--model", "llama-3-8b", "--gpu", "h100", "--engine", release,
                                 f"--{field.replace('_', '-')}", value), field, f"from {first}")
    web = web_refusal(client.post("/api/inference", json={**ASK, "engine": release, field: value}), field)
    with pytest.raises(InputError) as api:
        estimate_inference(InferenceInputs(**ASK, engine=release, **{field: value}))
    assert flag.strip() == f"error: {web}" == f"error: {api.value}"


@pytest.mark.parametrize("field, value, release", [("kv_dtype", "fp8", "vllm==0.3.0"),
                                                   ("quantization", "fp8", "vllm==0.4.1"),
                                                   ("quantization", "int8", "vllm==0.4.3")])
def test_the_first_release_with_the_format_answers(field, value, release):
    from gpuplan import InferenceInputs, estimate_inference

    report = estimate_inference(InferenceInputs(**ASK, engine=release, **{field: value}))
    assert report.value("weights_per_gpu") > 0


def test_a_checkpoints_fp8_format_is_gated_as_the_flag_is(run_cli, tmp_path):
    """--quantization auto reads the checkpoint's quantization_config: its fp8 on vllm==0.4.0 is the flag's refusal,
    quoting the format read."""
    from gpuplan.catalog.paths import CATALOG

    config = json.loads((CATALOG / "models" / "llama-3-8b.json").read_text())["config"]
    config["quantization_config"] = {"quant_method": "fp8", "activation_scheme": "dynamic"}
    (tmp_path / "config.json").write_text(json.dumps(config))
    ask = ("infer", "--model", str(tmp_path / "config.json"), "--gpu", "h100", "--engine")
    field_refusal(run_cli(*ask, "vllm==0.4.0"), "quantization", "got 'fp8'; vllm==0.4 serves no fp8 weights")
    assert run_cli(*ask, "vllm==0.4.1")[0] == 0


# ---- (b) a latency target no configuration meets -------------------------------------------------------------------

SIZE = ("infer", "--model", "llama-3-8b", "--rps", "1")


def _floor(err: str) -> str:
    """The '25.3 ms' a refusal gives as the fastest reachable, as a flag value ('25.3ms')."""
    return re.search(r"(?:is|within that TTFT is) ([0-9.,]+) ms", err).group(1) + "ms"  # as printed: no comma


@pytest.mark.parametrize("args, field", [(("--ttft-p99", "1ms", "--tpot", "1ms"), "ttft_p99"),
                                         (("--ttft-p99", "0.001ms", "--tpot", "0.001ms", "--disaggregate"), "ttft_p99"),
                                         (("--tpot", "0.5ms"), "tpot")])
def test_a_latency_target_no_configuration_meets_is_refused_at_every_door(run_cli, client, args, field):
    """'configuration: none meets the target' was an answer, exit status 0 (web 200), where `plan` refuses a deadline
    no layout meets with the fastest. Now one line naming the target and the fastest any catalog GPU reaches."""
    from gpuplan import InferenceInputs, InputError, estimate_inference

    flag = field_refusal(run_cli(*SIZE, *args), field, "no configuration (a replica within one NVLink domain")
    pairs = [a for a in args if a != "--disaggregate"]
    body = {"model": "llama-3-8b", "rps": 1, **{a[2:].replace("-", "_"): v for a, v in zip(pairs[::2], pairs[1::2])},
            **({"disaggregate": True} if "--disaggregate" in args else {})}
    web = web_refusal(client.post("/api/inference", json=body), field)
    with pytest.raises(InputError) as api:
        estimate_inference(InferenceInputs(**body))
    assert flag.strip() == f"error: {web}" == f"error: {api.value}"


def test_the_fastest_the_refusal_names_is_met():
    """The floors the refusals give back (rounded up) are answered together: the fastest TTFT, then the fastest TPOT
    within it (the joint refusal, after TPOT's own floor)."""
    from gpuplan import InferenceInputs, InputError, estimate_inference

    def told(**target) -> str:
        with pytest.raises(InputError) as refused:
            estimate_inference(InferenceInputs(model="llama-3-8b", rps=1, **target))
        return _floor(str(refused.value))

    ttft = told(ttft_p99="1ms")
    tpot = told(ttft_p99=ttft, tpot=told(tpot="0.5ms"))
    report = estimate_inference(InferenceInputs(model="llama-3-8b", rps=1, ttft_p99=ttft, tpot=tpot))
    assert report.value("sized_config")["replicas"] >= 1


# ---- (c) Megatron's sequence parallelism splits each rank's tokens over TP -------------------------------------------

def test_a_sequence_tp_does_not_divide_under_megatron_sequence_parallelism_is_refused_at_every_door(run_cli, client):
    """Megatron asserts 'First dimension of the tensor should be divisible by tensor parallel size' when sequence
    parallelism scatters [s, b, h] over TP (tensor_parallel/mappings.py@00caa53 L67-70): `memory --tp 8 --seq-len
    4100` answered. On a context-parallel rank the tokens are seq_len / cp."""
    from gpuplan import InputError, MemoryInputs, estimate_memory

    ask = {"model": "llama-3-8b", "gpu": "h100", "gpus": 8, "tp": 8, "seq_len": 4100}
    flag = field_refusal(run_cli("memory", "--model", "llama-3-8b", "--gpu", "h100", "--gpus", "8", "--tp", "8",
                                 "--seq-len", "4100"), "tp", "must divide the sequence length 4,100")
    web = web_refusal(client.post("/api/memory", json=ask), "tp")
    with pytest.raises(InputError) as api:
        estimate_memory(MemoryInputs(**ask))
    assert flag.strip() == f"error: {web}" == f"error: {api.value}"
    with pytest.raises(InputError, match="the 2,052 tokens a context-parallel rank holds"):
        estimate_memory(MemoryInputs(**{**ask, "gpus": 16, "cp": 2, "seq_len": 4104}))  # 2 x cp divides 4,104


@pytest.mark.parametrize("other", [{"sequence_parallel": False}, {"framework": "torchtitan", "micro_batch": 2},
                                   {"seq_len": 4096}])
def test_the_neighbours_without_megatrons_split_answer(other):
    """--no-sequence-parallel, torchtitan with a micro-batch whose tokens tp divides (2 x 4,100 = 8,200: its
    trainer.py@b5bcd76 L296-308 counts micro_batch x seq_len; micro-batch 1 is refused, tests/test_mend_w14_a.py) and
    a sequence the TP ranks divide answer."""
    from gpuplan import MemoryInputs, estimate_memory

    report = estimate_memory(MemoryInputs(**{"model": "llama-3-8b", "gpu": "h100", "gpus": 8, "tp": 8,
                                             "seq_len": 4100, **other}))
    assert report.value("model_states_total") > 0


# ---- (d) memory of a pipeline schedule that cannot run the step's micro-batches --------------------------------------

@pytest.mark.parametrize("framework, vpp", [("megatron", 2), ("torchtitan", 1)])
def test_a_pipeline_its_schedule_cannot_run_is_refused_by_memory_as_by_plan(run_cli, client, framework, vpp):
    """`memory --pp 8 --vpp 2 --global-batch 4` (4 micro-batches on 8 stages) answered while plan / train / budget
    leave the layout out: Megatron-Core's interleaved schedule needs at least pp micro-batches, torchtitan's 1F1B
    (torch.distributed.pipelining) too. A plain Megatron 1F1B runs them (warm-up of min(pp - rank - 1, m))."""
    from gpuplan import InputError, MemoryInputs, estimate_memory

    ask = {"model": "llama-3-8b", "gpu": "h100", "compare": "h100", "gpus": 2, "pp": 2, "vpp": vpp,
           "global_batch": 1, "micro_batch": 1, "framework": framework}
    flag = field_refusal(run_cli("memory", *[f"--{k.replace('_', '-')}={v}" for k, v in ask.items()]), "global_batch",
                         "give a global batch of at least 2")
    web = web_refusal(client.post("/api/memory", json=ask), "global_batch")
    with pytest.raises(InputError) as api:
        estimate_memory(MemoryInputs(**ask))
    assert flag.strip() == f"error: {web}" == f"error: {api.value}"
    assert estimate_memory(MemoryInputs(**{**ask, "global_batch": 2})).value("model_states_total") > 0
    assert estimate_memory(MemoryInputs(**{**ask, "framework": "megatron", "vpp": 1})).value("model_states_total") > 0


# ---- (e) the planner's free search under Megatron's sequence parallelism ---------------------------------------------

def test_the_free_search_offers_no_tp_megatron_cannot_split_the_sequence_over():
    """`plan --model llama-3-70b --gpus 64 --seq-len 4097` chose dp4 tp4 pp4 (4,097 tokens over 4 TP ranks: Megatron
    asserts, (c)); the search now keeps tp dividing seq_len / cp under Megatron with sequence parallelism, and every
    tp where sequence parallelism is off. (torchtitan's form counts the micro-batch, so the search applies it where it
    picks one: tests/test_mend_w14_a.py.)"""
    from gpuplan import PlanInputs
    from gpuplan.jobs.plan.search import space_limits
    from gpuplan.planner.space import structures

    ask = {"model": "llama-3-70b", "gpu": "h100", "gpus": 64, "seq_len": 4097, "tokens": 1e12}
    spec = PlanInputs(**ask).spec()
    tps = {tp for tp, cp, *_ in structures(spec, 64, 4097, 8, space_limits(PlanInputs(**ask)))}
    assert tps == {1}  # 4,097 = 17 x 241: no TP degree up to 8 divides it
    for other in ({"sequence_parallel": False}, {"seq_len": 4096}):
        inputs = PlanInputs(**{**ask, **other})
        assert {tp for tp, *_ in structures(spec, 64, inputs.seq_len, 8, space_limits(inputs))} == {1, 2, 4, 8}


# ---- (f) report quotes a refusal after parsing as the job's own command does -------------------------------------

@pytest.mark.parametrize("text, field, typed", [("context: 1K\noutput_tokens: 2K\n", "output_tokens", "'2K'"),
                                                ("rps: 1\nttft_p99: 1ms\n", "ttft_p99", "'1ms'")])
def test_report_quotes_a_refusal_after_parsing_as_written(run_cli, tmp_path, text, field, typed):
    """`report` ran each section's job without errors.as_typed: `output_tokens: 2K` was told 'got 2048' there and
    'got '2K'' by `infer` on the same plan file."""
    plan = tmp_path / "p.yaml"
    plan.write_text("model: llama-3-8b\ngpu: h100\n" + text, encoding="utf-8")
    told = field_refusal(run_cli("report", str(plan), "--sections", "inference", "--no-plots"), f"{plan}: {field}",
                         f"got {typed}")
    assert told == field_refusal(run_cli("infer", str(plan)), f"{plan}: {field}")


def test_a_serving_tp_past_the_scale_up_domain_is_answered_with_a_note():
    """Questionable, not impossible (vLLM and SGLang run TP across nodes): tp 16 on 8-GPU H100 nodes was timed on
    NVLink without a word; now a note says so. 16 of GB200's 72-GPU NVLink domain needs none, only the launch over
    its 4-GPU trays (review w15 R2 S3)."""
    from gpuplan import InferenceInputs, estimate_inference

    def spans(gpu: str) -> list[str]:
        return [n for n in estimate_inference(InferenceInputs(model="llama-3-8b", gpu=gpu, tp=16)).notes if "spans" in n]

    h100 = spans("h100")
    assert len(h100) == 1 and "2 scale-up domains of 8" in h100[0]
    gb200 = spans("gb200")
    assert len(gb200) == 1 and gb200[0].startswith("launch across trays: tp 16 spans 4 compute trays of 4 ")


# ---- timing: a valid ask past 2 s ------------------------------------------------------------------------------------

def test_the_largest_micro_batch_is_bisected_not_walked_down(monkeypatch):
    """`memory --gpus 8 --pp 8 --global-batch 8 --framework torchtitan` took 2.3-3.2 s: the verdict table walked
    each GPU's largest micro-batch down one at a time, 4,663 fit checks. Bisected, over the micro-batches the layout
    accepts (the divisors of 8: review w14 R2 M2, which found 41 printed, above the batch): a few dozen. The table
    equals a linear scan of the divisors (tests/test_mend_w14_b.py, which also scans the gb-60 cases)."""
    import gpuplan.jobs.memory.estimate as E
    from gpuplan import MemoryInputs, estimate_memory

    calls = []
    fits = E._fits
    monkeypatch.setattr(E, "_fits", lambda *a, **k: calls.append(1) or fits(*a, **k))
    report = estimate_memory(MemoryInputs(model="llama-3-8b", gpu="h100", gpus=8, pp=8, global_batch=8,
                                          framework="torchtitan"))
    # worked bound: 6 GPU rows x (1 check of the layout as given + the largest divisor alone + a bisection of the other
    # three divisors, at most 2) = 24 (11 at 4464eebf); the walk-down made 4,663
    assert len(calls) <= 24, len(calls)
    assert [(row[0], row[-1]) for row in report.tables[0].rows] == [  # linear scan over 1, 2, 4, 8 (w14 mender MB)
        ("h100-sxm", 8), ("a100-sxm4-40gb", 0), ("a100-sxm4-80gb", 8), ("h200-sxm", 8), ("b200", 8), ("mi300x", 8)]
