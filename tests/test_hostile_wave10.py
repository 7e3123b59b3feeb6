"""Hostile inputs, wave 10 (2026-12-06): what a fresh sweep of the doors found, each refusal one line naming the
field and what is valid (exit status 2, 422 on the web, no traceback, no hang). The sweep: ~10,000 seeded random
combinations of `infer` options (the engine releases, --endpoint, speculative decoding, disaggregation, --rps /
--ttft-p99 / --tpot sizing, LoRA serving) with numeric edge values, every numeric option of budget / memory / infer
alone at 22 edge values, 2,000 inputs sent through the four doors (CLI flags, a plan file, the web API, the Python
API) and compared, plan files and logs of odd shapes. The invariant grid is tests/test_invariants_wave10.py.
"""

from pathlib import Path

import pytest
from helpers import field_refusal, web_refusal

pytestmark = pytest.mark.usefixtures("time_box")  # conftest: a hang fails the case, not the suite
ROOT = Path(__file__).resolve().parents[1]


# ---- a duration past its bound names the bound with its unit ------------------------------------------------

DURATION_BOUNDS = [
    (("infer", "llama-3.1-8b", "--rps", "1"), "--ttft-p99", "2h", "ttft_p99", "at most 1h (3,600 s)"),
    (("infer", "llama-3.1-8b", "--rps", "1"), "--tpot", "2min", "tpot", "at most 1min (60 s)"),
    (("budget", "llama-3.1-8b", "--gpus", "64"), "--restart", "30d", "restart", "at most 7d (604,800 s)"),
    (("budget", "llama-3.1-8b", "--gpus", "64"), "--step-time", "1000d", "step_time", "at most 7d (604,800 s)"),
    (("budget", "llama-3.1-8b", "--gpus", "64"), "--checkpoint-interval", "1000d", "checkpoint_interval",
     "at most 365d (31,536,000 s)"),
]


@pytest.mark.parametrize("base, option, typed, field, bound", DURATION_BOUNDS, ids=lambda v: str(v)[:20])
def test_a_duration_past_its_bound_names_the_bound_with_its_unit(run_cli, base, option, typed, field, bound):
    """`--ttft-p99 2h` was refused 'must be >= 0 and <= 3600' and `--restart 30d` '<= 604800': a bound in seconds
    with no unit, for a value typed in hours or days (and '>= 0' where 0 is refused). Now the line names the bound
    in the unit that writes it whole, with its seconds (schema.types.seconds)."""
    line = field_refusal(run_cli(*base, option, typed), field, bound)
    assert "<=" not in line and ">=" not in line, line


@pytest.mark.parametrize("job, body, field", [("inference", {"model": "llama-3.1-8b", "rps": 1, "ttft_p99": 7200},
                                               "ttft_p99"),
                                              ("budget", {"model": "llama-3.1-8b", "restart": "30d"}, "restart")])
def test_a_duration_past_its_bound_is_a_422_naming_the_bound(client, job, body, field):
    """The web API's JSON number is seconds: 7,200 is 2h, past the 1h bound."""
    web_refusal(client.post(f"/api/{job}", json=body), field, "must be at most ")


@pytest.mark.parametrize("typed", ["7d", "604800s", "1w"])
def test_a_duration_at_its_bound_is_answered(run_json, typed):
    assert run_json("budget", "llama-3.1-8b", "--gpus", "64", "--restart", typed)["results"]["gpus"] == 64


# ---- a format the default GPU cannot run says the GPU was not named ----------------------------------------

@pytest.mark.parametrize("extra", [(), ("--rps", "5", "--ttft-p99", "2s", "--tpot", "50ms")])
def test_a_format_the_default_gpu_cannot_run_offers_another_gpu(run_cli, extra):
    """`infer llama-3.1-8b --quantization fp8` (no --gpu; with --rps the sizing even answers over every GPU type) was
    refused 'NVIDIA A100 80GB SXM4 has no fp8 compute path ...; choose a format it runs', a GPU the user never
    named. The line now says the A100 is the default and that --gpu names one that runs it; `--gpu h100` answers.
    (Issue 38: vLLM from 0.5.1 serves FP8 on the A100 weight-only through FP8 Marlin, so the refusal is asked of a
    release before it, vllm==0.5.0: core/serving/fp8_marlin.py.)"""
    old = ("--engine", "vllm==0.5.0")
    line = field_refusal(run_cli("infer", "llama-3.1-8b", "--quantization", "fp8", *old, *extra), "quantization",
                         "has no FP8 tensor cores")
    assert "--gpu (a100 is the default: --gpu was not given)" in line, line
    code, _, err = run_cli("infer", "llama-3.1-8b", "--quantization", "fp8", "--gpu", "h100", *old, *extra)
    assert code == 0, err


def test_a_format_the_named_gpu_cannot_run_keeps_its_line(run_cli, client):
    """--gpu a100 given: the user chose the GPU, so the line offers only the formats it runs (unchanged), at the
    CLI and the web API alike. (Issue 38: the A100 serves FP8 weight-only through FP8 Marlin from vLLM 0.5.1, so the
    part asked is a V100, sm70, below Marlin's sm80.)"""
    line = field_refusal(run_cli("infer", "llama-3.1-8b", "--quantization", "fp8", "--gpu", "v100"), "quantization",
                         "choose a format it runs: --quantization fp32, fp16 or int4\n")
    web = web_refusal(client.post("/api/inference", json={"model": "llama-3.1-8b", "quantization": "fp8",
                                                          "gpu": "v100"}), "quantization")
    assert f"error: {web}\n" == line
    web_refusal(client.post("/api/inference", json={"model": "llama-3.1-8b", "quantization": "fp8",
                                                    "engine": "vllm==0.5.0"}), "quantization", "--gpu was not given")


# ---- a spot price above on-demand is a negative discount -----------------------------------------------------

@pytest.mark.parametrize("command", ["budget", "train", "plan"])
def test_a_spot_price_above_on_demand_is_refused(run_cli, command):
    """`budget --spot-price 1e6 --price 1` answered 'spot saving vs on-demand -100205448.6%' (exit 0), while the same
    spot price written as a discount (--spot-discount -50%) is refused (0 to 99.9%): spot is sold at a discount off
    on-demand (AWS, GCP and Azure cap it at the on-demand price). Now refused naming the on-demand price."""
    line = field_refusal(run_cli(command, "llama-3.1-8b", "--gpu", "h100", "--gpus", "64", "--spot-price", "1e6",
                                 "--price", "1"), "spot_price", "must be at most the on-demand price, $1.00/GPU-h")
    assert "(--price)" in line, line


def test_a_spot_price_above_the_catalog_price_names_it_and_price(run_cli, client):
    """No --price: the bound is the price catalog's on-demand median for the GPU ($3.99 for the H100), which --price
    replaces; the web API refuses alike, and a spot price at or under it answers. The line says it is the median
    and names the dearest provider and --provider (tests/test_w3_mend_r2_spot_bound)."""
    line = field_refusal(run_cli("budget", "llama-3.1-8b", "--gpu", "h100", "--gpus", "64", "--spot-price", "5"),
                         "spot_price", "$3.99/GPU-h (the median of 9 providers' on-demand prices, which this answer "
                         "uses; the dearest is Azure at $12.29: --provider or --price prices yours)")
    web = web_refusal(client.post("/api/budget", json={"model": "llama-3.1-8b", "gpu": "h100", "gpus": 64,
                                                       "spot_price": "5"}), "spot_price")
    assert f"error: {web}\n" == line
    for spot, price in (("3.99", ()), ("5", ("--price", "6"))):
        code, out, err = run_cli("budget", "llama-3.1-8b", "--gpu", "h100", "--gpus", "64", "--spot-price", spot,
                                 *price)
        assert code == 0, err


# ---- non-ASCII number text names the character -----------------------------------------------------------------

@pytest.mark.parametrize("option, typed, said", [
    ("--tpot", "5µs", "'µ' (U+00B5) is not one"),
    ("--context", "8Ｋ", "'Ｋ' (U+FF2B) is not one"),
    ("--price", "2€", "'€' (U+20AC) is not one"),
    ("--prefix-hit", "40٪", "'٪' (U+066A) is not one"),
    ("--batch", "٣", "'٣' (U+0663) is the digit 3; write 3"),
    ("--gpus", "８", "'８' (U+FF18) is the digit 8; write 8"),
    ("--batch", "8²", "'²' (U+00B2) is not one"),
])
def test_non_ascii_number_text_names_the_character(run_cli, option, typed, said):
    """Every non-ASCII number text but a dash (wave 6c) was refused 'must be written with ASCII digits', also
    `--tpot 5µs`, `--context 8Ｋ` (a full-width K) and `--price 2€`, whose digits were ASCII. The line now names the
    first non-ASCII character, and for another script's digit the ASCII one to write."""
    extra = ("--rps", "1") if option == "--tpot" else ("--no-search",)
    field = option[2:].replace("-", "_")
    line = field_refusal(run_cli("infer", "llama-3.1-8b", *extra, option, typed), field, said)
    assert ("ASCII digits" in line) == ("digit" in said), line


def test_non_ascii_is_refused_alike_on_the_web(run_cli, client):
    line = field_refusal(run_cli("infer", "llama-3.1-8b", "--no-search", "--context", "8Ｋ"), "context")
    web = web_refusal(client.post("/api/inference", json={"model": "llama-3.1-8b", "search": False,
                                                          "context": "8Ｋ"}), "context")
    assert f"error: {web}\n" == line


# ---- a latency target's unknown unit is told the latency units ----------------------------------------------

@pytest.mark.parametrize("option, typed", [("--tpot", "1us"), ("--ttft-p99", "500msec"), ("--tpot", "50x")])
def test_a_latency_with_an_unknown_unit_is_told_latency_units(run_cli, option, typed):
    """`--tpot 1us` was refused 'expected a duration such as 7d, 36h, 90min or 2w' (days and weeks, for a time per
    token whose floor is 0.001ms). The latency targets now name latency units and that 1us is 0.001ms."""
    field = option[2:].replace("-", "_")
    examples = {"tpot": "50ms or 0.2s (ms, s or min;", "ttft_p99": "500ms or 2s (ms, s, min or h;"}[field]
    line = field_refusal(run_cli("infer", "llama-3.1-8b", "--rps", "1", option, typed), field,
                         f"expected a latency with a unit, e.g. {examples}")  # tests/test_w3_mend_r2_latency_units
    assert "7d" not in line and "1us is 0.001ms" in line, line
    # 0.001ms reads (no unit refusal); no configuration reaches it (tests/test_hostile_w15)
    field_refusal(run_cli("infer", "llama-3.1-8b", "--rps", "1", option, "0.001ms"), field, "no configuration")


# ---- LoRA serving on a vLLM release that had none ------------------------------------------------------------

@pytest.mark.parametrize("engine, lora, field", [("vllm==0.2.6", ("--enable-lora",), "enable_lora"),
                                                 ("vllm==0.2.7", ("--max-loras", "2"), "max_loras")])
def test_lora_on_a_vllm_release_before_0_3_is_refused(run_cli, client, engine, lora, field):
    """vLLM's multi-LoRA serving (vllm PR 1804) shipped in 0.3.0; `--engine vllm==0.2.6 --enable-lora` sized adapter
    slots on a release without them (exit 0). Refused naming the release that has them, at every door."""
    line = field_refusal(run_cli("infer", "llama-3.1-8b", "--gpu", "h100", "--no-search", "--engine", engine, *lora),
                         field, "vLLM has them from 0.3.0")
    body = {"model": "llama-3.1-8b", "gpu": "h100", "search": False, "engine": engine,
            **({"enable_lora": True} if field == "enable_lora" else {"max_loras": 2})}
    web = web_refusal(client.post("/api/inference", json=body), field)
    assert f"error: {web}\n" == line


def test_lora_on_vllm_0_3_answers(run_json):
    assert run_json("infer", "llama-3.1-8b", "--gpu", "h100", "--no-search", "--engine", "vllm==0.3",
                    "--enable-lora")["results"]["fits"]


# ---- speculative decoding on a vLLM release that had none --------------------------------------------------------

@pytest.mark.parametrize("engine, method", [("vllm==0.2.6", ("eagle",)), ("vllm==0.4", ("ngram", "--spec-acceptance",
                                                                                         "0.5")),
                                            ("vllm==0.3.3", ("draft", "--draft-model", "llama-3.2-1b"))])
def test_speculative_decoding_on_a_vllm_release_before_0_4_1_is_refused(run_cli, client, engine, method):
    """vLLM's --speculative-model flags arrived with vllm PR 3706 (after v0.4.0), which ran nothing (its executor
    raised); decoding ran with PRs 3894 (LLMEngine) and 3951 (correctness), in v0.4.1 (review w10 r2 S1: the line
    cited 3706). `--engine vllm==0.2.6 --speculative eagle` answered a speed-up that release cannot give (exit 0).
    Refused naming the method's own first release (review w10 r3 M1: ngram 0.4.2, EAGLE 0.5.5, read in the
    wheels), and for a draft model the PRs that made it run."""
    since = {"eagle": "0.5.5", "ngram": "0.4.2", "draft": "0.4.1"}[method[0]]
    line = field_refusal(run_cli("infer", "llama-3.1-8b", "--gpu", "h100", "--no-search", "--engine", engine,
                                 "--speculative", *method), "speculative", f"vLLM runs it from {since}")
    assert ("vllm PRs 3894 and 3951" in line) == (method[0] == "draft") and "3706" not in line, line
    web = web_refusal(client.post("/api/inference", json={"model": "llama-3.1-8b", "gpu": "h100", "search": False,
                                                          "engine": engine, "speculative": method[0],
                                                          **dict(zip(["spec_acceptance" if "ngram" in method else
                                                                      "draft_model"], method[2:3]))}),
                      "speculative")
    assert f"error: {web}\n" == line


@pytest.mark.parametrize("engine", ["vllm==0.5.5", "vllm", "sglang", "trtllm"])
def test_speculative_decoding_on_a_release_with_it_answers(run_json, engine):
    """EAGLE from vLLM 0.5.5 (its first release, review w10 r3 M1; 0.4.1 answered before)."""
    assert run_json("infer", "llama-3.1-8b", "--gpu", "h100", "--no-search", "--engine", engine, "--speculative",
                    "eagle")["results"]["tpot"] > 0


# ---- a printed Trainer dict with a malformed number prints no Python warning -----------------------------------

def test_a_printed_trainer_dict_with_a_malformed_number_prints_no_warning(tmp_path):
    """A Hugging Face printed log whose line reads `'learning_rate': 6.66666666666inf` (a mutated fixture line): the
    dict is not a literal and is skipped, but ast.literal_eval's compile step printed '<unknown>:1: SyntaxWarning:
    invalid decimal literal' on stderr before the answer or refusal. Run as a user runs it (a fresh process: pytest
    would catch the warning itself), stderr holds only the one refusal line."""
    import subprocess
    import sys

    fixture = (ROOT / "tests" / "fixtures" / "logs" / "hf_printed.log").read_text().splitlines()
    mutated = [line.replace("'learning_rate': 6.666666666666667e-06", "'learning_rate': 6.66666666666inf")
               for line in fixture]
    assert mutated != fixture  # the fixture holds the line mutated
    log = tmp_path / "trainer.log"
    log.write_text("\n".join(mutated) + "\n")
    done = subprocess.run([sys.executable, "-m", "gpuplan", "calibrate", str(log), "--model", "llama-3.2-1b", "--gpu",
                           "h100", "--gpus", "8", "--seq-len", "2048"], capture_output=True, text=True, timeout=120)
    assert "Warning" not in done.stderr, done.stderr
    assert done.returncode == 0 or (done.returncode == 2 and done.stderr.count("\n") == 1), done.stderr


# ---- a logged memory size the pattern took but no number reads ----------------------------------------------

LOGS = ROOT / "tests" / "fixtures" / "logs"


@pytest.mark.parametrize("fixture, old, new, field, args", [
    ("torchtitan_rank0.log", "memory:  9.46GiB", "memory:  ９.46GiB", "memory",
     ("--model", "llama-3.2-1b", "--gpu", "h100", "--gpus", "1", "--seq-len", "2048")),
    ("megatron_mixtral.log", "max allocated: 54250.98583984375", "max allocated: 54250.9.8", "max allocated",
     ("--model", "mixtral-8x7b", "--gpu", "h100", "--gpus", "16", "--seq-len", "2048")),
    ("megatron_mixtral.log", "max reserved: 61480.0", "max reserved: ６1480.0", "max reserved",
     ("--model", "mixtral-8x7b", "--gpu", "h100", "--gpus", "16", "--seq-len", "2048")),
])
def test_a_logged_memory_size_that_is_no_number_is_named(run_cli, tmp_path, fixture, old, new, field, args):
    """The logs' memory patterns take digits as '\\d' (a full-width '９' too) and Megatron's as '[\\d.]+' ('1.2.3'),
    which adapters.training_logs._num reads as None: 'internal error: TypeError: unsupported operand type(s) for
    *: NoneType and int' (exit 70), found by mutating the fixtures. Now one line naming the size."""
    text = (LOGS / fixture).read_text()
    assert old in text
    log = tmp_path / fixture
    log.write_text(text.replace(old, new))
    field_refusal(run_cli("calibrate", str(log), *args), field, "a size written as an ASCII number")


# ---- profile --sweep-budget without --sweep ----------------------------------------------------------------------

def test_a_sweep_budget_without_the_sweep_is_refused(run_cli, tmp_path):
    """`gpuplan profile pythia-70m --sweep-budget 100` ran one trial and never read the budget (exit 0): refused
    before anything is built, naming --sweep."""
    field_refusal(run_cli("profile", "pythia-70m", "--sweep-budget", "100", "--out", str(tmp_path / "t.json")),
                  "sweep_budget", "got 100; is the seconds the sweep may take: give --sweep with it")
    assert not (tmp_path / "t.json").exists()
