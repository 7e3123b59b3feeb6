"""Hostile inputs, wave 19 (2026-12-07, helper H1): the newer inputs swept through the CLI (in-process, 20 s a case),
plan files, the web app's TestClient and the Python API before these tests were written:

- every option of `infer` added since wave 12 (--spec-tokens / --spec-acceptance / --prefix-hit / LoRA slots / the
  graph and launch floors / engine memory shares) with nan, inf, -1, 0, 1e309, true, '2K', '8x', Arabic and
  full-width digits, blanks, '0x10', '1_0'; --engine vllm==x / == / 0.0.1 / 99 / 0.19==1 / v0.19 / rc1 / '٠.19';
  speculative decoding without its draft, with a larger or other-vocabulary draft, a path as draft, MTP on a model
  without it; --rps / --ttft-p99 / --tpot / --disaggregate alone and beside --gpus / --tp / --batch / --pp;
  --quantization and --kv-dtype on V100, A100, L4, TPU v5p, MI300X, Gaudi 3, Ascend 910B and B200 under each engine;
- train / memory / plan / budget: --partition-activations, --tp-comm-dtype, --tp-overlap, --step-time, --mtp-layers,
  --offload-layers, --recompute-layers / -modules, the budget's failure, restart, checkpoint, storage and spot
  options; `profile` options (layers, steps, warm-up, peak, seed, sweep budget, --out at a folder, /dev/full, a
  missing folder), `validate --out`, `report --sections / --out / --markdown`, `catalog --filter`;
- plan files with YAML dates, octal / hex / binary numbers, .inf / .nan, lists and mappings where names go, a ramp as
  pairs; web bodies with the same (and paths named by model, draft_model, calibration);
- every pair of 50-80 valid-alone options of `train --mfu predicted` (2,816 pairs, mixtral-8x7b on 64 H100s; 1,871
  more under deepspeed / megatron with --partition-activations and --tp-comm-dtype fp32), `plan --explain` (1,628),
  `memory` (1,739) and `infer` (1,368), and each infer option under --rps sizing (with and without --disaggregate),
  each answer's JSON read for a NaN, an inf, a negative count, an MFU > 1 or a value outside its own range;
- model config.json files with hidden 1, vocab 1, 10,000 layers, head_dim 3, NaN rope_theta, bad rope_scaling, MoE
  top-k past the experts, bad quantization_config groups; calibration documents and table logs at their bounds.

No traceback or hang. Found, each fixed where every door passes:

(1) a calibration document whose time factors are within the loader's 0.001-1000 bounds (calibrate.model.MAX_RATIO)
    but faster than the GPU (jobs/calibrated_plan.py, as (2)): `train --mfu predicted` answered llama-3-8b on 8 H200s at 32,849% MFU (GPU-days 3.67,
    its band inverted: '3.84 - 1,204'), exit 0, and `plan` refused it naming --step-time, which nobody gave;
(2) a calibration memory_overhead of -1e12 bytes (within its +-1 TiB bound): `memory` answered -858.09 GiB needed,
    991 GiB of headroom on a 140 GiB part, 'fits: yes'; `train` and `plan` chose a layout on -125.70 GiB;
(3) a checkpoint's GPTQ / AWQ group_size that does not tile its layers (7, or 8,192 on a 4,096 input) was answered,
    though `--group-size 7` is refused for it (jobs/inference/resolve.py);
(4) the web's ?filter= refused 101-256 characters the CLI answers, in pydantic's words (web/routes.py);
(5) `profile --peak-tflops` below what the run computed printed MFU 6,903.5% and wrote it (profile/trial.py); a sweep
    went on through every run, exit 0 (profile/sweep.py); a CPU trial's refusal came with a torch UserWarning line
    (profile/_trial_runtime.py);
(6) on a TPU, --loss te-ce, --finetune qlora and --offload-layers were answered under generic (schema/tpu_rules.py).
"""

import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from helpers import field_refusal, four_door_refusal, web_refusal

pytestmark = pytest.mark.usefixtures("time_box")  # conftest: a hang fails the case, not the suite

ASK = {"model": "llama-3-8b", "gpu": "h200", "gpus": 8, "framework": "hf"}
"""The setup the synthetic calibration was fitted for (tests/test_calibrate_classes.py: Llama-3.2-1B trials on one
H200 under the hf framework), so its time factors carry over (calibrate.compatibility) and are applied."""


@pytest.fixture(scope="module")
def fitted():
    """A calibration fitted by calibrate.fit_calibration on synthetic H200 / hf trials (compute 1.10, attention 0.85,
    memory 1.30: tests/test_calibrate_classes.TRUE)."""
    sys.path.insert(0, str(Path(__file__).parent))
    from test_calibrate_classes import _calibration

    return _calibration()


def _document(cal) -> dict:
    from gpuplan.calibrate.model import calibration_to_dict

    return json.loads(json.dumps(calibration_to_dict(cal)))


def _scaled(cal, **values):
    """``cal`` with the named factors' values replaced (status kept: fitted factors are applied), their bands dropped
    (a band must hold its value: calibrate.model._check_band, wave 21)."""
    return replace(cal, **{name: replace(getattr(cal, name), value=v, stderr=None, low=None, high=None)
                           for name, v in values.items()})


def _doors(run_cli, client, tmp_path, job: str, route: str, ask: dict, cal, fragment: str) -> None:
    """The one refusal naming calibration from the CLI flags, a plan file (the calibration as a path in both: its
    path quoted), the web API and the Python API (the document: its faulty factors quoted), each one line."""
    import gpuplan
    from gpuplan import InputError

    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(_document(cal)), encoding="utf-8")
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in ask.items() if k != "model"]
    flag = field_refusal(run_cli(job, "--model", ask["model"], *flags, f"--calibration={path}"), "calibration",
                         fragment)
    assert f"got '{path}'; " in flag
    plan = tmp_path / "ask.yaml"
    plan.write_text("".join(f"{k}: {v}\n" for k, v in ask.items()) + f"calibration: {path}\n", encoding="utf-8")
    planned = field_refusal(run_cli(job, str(plan)), f"{plan}: calibration", fragment)
    assert planned.replace(f"{plan}: ", "") == flag
    web = web_refusal(client.post(f"/api/{route}", json={**ask, "calibration": _document(cal)}), "calibration",
                      fragment)
    assert web.split("; ", 1)[1] == flag.strip().split("; ", 1)[1]  # the same words after the value quoted
    schema, estimate = {"train": ("TrainingInputs", "estimate_training"), "budget": ("BudgetInputs", "estimate_budget"),
                        "plan": ("PlanInputs", "plan_report"), "memory": ("MemoryInputs", "estimate_memory")}[job]
    with pytest.raises(InputError) as api:
        getattr(gpuplan, estimate)(getattr(gpuplan, schema)(**ask, calibration=_document(cal)))
    assert api.value.field == "calibration" and str(api.value).split("; ", 1)[1] == flag.strip().split("; ", 1)[1]


# ---- (1) time factors faster than the GPU's peak ---------------------------------------------------------------------

FAST = {"compute_time": 0.1, "attention_time": 0.1, "memory_time": 0.1}
"""Each at the loader's lower bound (calibrate.model.FACTOR_RANGE, 0.1 since hostile wave 27b; 0.001 before): the eager
step's GEMM, attention and memory-bound classes 10x faster than the step model times them (calibrate.apply:
eager_factors)."""
TIME_WORDS = "MFU, faster than the bf16 dense peak (989 TFLOP/s a GPU) computes the model's FLOPs"
"""H200's dense bf16 peak: 989 TFLOP/s (catalog/hardware h200-sxm, NVIDIA's H200 datasheet, without sparsity)."""


@pytest.mark.parametrize("job, route, extra", [("train", "training", {"mfu": "predicted"}),
                                               ("budget", "budget", {"mfu": "predicted"}),
                                               ("plan", "plan", {})])
def test_1_time_factors_faster_than_the_peak_are_refused_at_every_door(run_cli, client, tmp_path, fitted, job,
                                                                       route, extra):
    """Before: `train --mfu predicted` answered 32,849% MFU, exit 0; `plan` said 'step_time: got 0.083 s', a field
    nobody gave (jobs.budget.model._check_step_time, the rule for a typed --step-time)."""
    _doors(run_cli, client, tmp_path, job, route, {**ASK, **extra}, _scaled(fitted, **FAST), TIME_WORDS)


def test_1_the_web_and_python_quote_the_factors_at_fault(client, fitted):
    response = client.post("/api/training", json={**ASK, "mfu": "predicted",
                                                  "calibration": _document(_scaled(fitted, **FAST))})
    assert response.status_code == 422 and response.json()["field"] == "calibration", response.text
    assert "'compute_time': 0.1" in response.json()["message"] and "step_time" not in response.json()["message"]


def test_1_the_fitted_calibration_stays_answered_below_the_peak(run_json, tmp_path, fitted):
    """The control: the fitter's own factors (its classes are bounded by their rooflines, calibrate.classes.
    LOWER_BOUND) time the same ask below 100% MFU, and it is answered."""
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(_document(fitted)), encoding="utf-8")
    report = run_json("train", "--model", ASK["model"], "--gpu", "h200", "--gpus", "8", "--framework", "hf",
                      "--mfu", "predicted", f"--calibration={path}")
    assert 0 < report["results"]["mfu"] < 1


# ---- (2) a memory overhead that takes back more than the model over-counted -------------------------------------------

MEM_WORDS = "of model states (weights, gradients, master weights, optimizer states) a GPU holds at its peak"


@pytest.mark.parametrize("job, route, extra", [("memory", "memory", {"zero": 3}), ("train", "training", {}),
                                               ("plan", "plan", {})])
def test_2_a_memory_overhead_below_the_model_states_is_refused_at_every_door(run_cli, client, tmp_path, fitted, job,
                                                                             route, extra):
    """Before: `memory` answered 'device memory needed -858.09 GiB', 'headroom after margin 991.47 GiB' on a
    140.40 GiB H200, fits: yes; train chose dp8 ZeRO-0 mb16 on '-125.70 GiB'."""
    _doors(run_cli, client, tmp_path, job, route, {**ASK, **extra}, _scaled(fitted, memory_overhead=-1e12),
           MEM_WORDS)


def test_2_the_memory_refusal_names_the_overhead_and_the_states(run_cli, tmp_path, fitted):
    """llama-3-8b's 8.03e9 parameters under ZeRO-3 on 8 GPUs, the hf framework's amp recipe: at the backward start,
    where the peak falls, a GPU holds its shard of the fp32 weights (4 B) and of Adam's two fp32 moments (8 B), the
    gradients not yet made: 8.03e9 x 12 B / 8 = 12.05e9 B = 11.22 GiB of states; -1e12 B is -931.32 GiB."""
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(_document(_scaled(fitted, memory_overhead=-1e12))), encoding="utf-8")
    err = field_refusal(run_cli("memory", "--model", "llama-3-8b", "--gpu", "h200", "--gpus", "8", "--framework", "hf",
                                "--zero", "3", f"--calibration={path}"), "calibration")
    assert "its memory_overhead (-931.32 GiB)" in err and "below the 11.22 GiB of model states" in err and "(backward start)" in err


def test_2_a_negative_overhead_above_the_states_stays_answered(run_json, tmp_path, fitted):
    """-1 GiB takes back bytes the model over-counted beyond the states: answered, 1 GiB below the uncalibrated
    need (the overhead is counted with the runtime, core.memory.device_memory.Overheads.measured)."""
    ask = ("memory", "--model", "llama-3-8b", "--gpu", "h200", "--gpus", "8", "--framework", "hf", "--zero", "3")
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(_document(_scaled(fitted, memory_overhead=-2.0**30))), encoding="utf-8")
    needed = run_json(*ask, f"--calibration={path}")["results"]["peak_total"]
    path.write_text(json.dumps(_document(_scaled(fitted, memory_overhead=0.0))), encoding="utf-8")
    assert needed == pytest.approx(run_json(*ask, f"--calibration={path}")["results"]["peak_total"] - 2**30, rel=1e-9)


# ---- (3) a checkpoint's int groups that do not tile its layers ---------------------------------------------------------

GROUP_WORDS = "must divide the input size of every quantised matrix"


def _grouped_config(folder: Path, method: str, group) -> dict:
    """examples/llama-2-7b's config.json (hidden 4,096, intermediate 11,008) as a 4-bit ``method`` checkpoint."""
    config = json.loads((Path(__file__).parents[1] / "examples" / "llama-2-7b" / "config.json").read_text())
    config["quantization_config"] = {"quant_method": method, "bits": 4, "group_size": group}
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return config


@pytest.mark.parametrize("method, group, shown", [("gptq", 7, "hidden_size 4,096, o_proj input 4,096, "
                                                                  "intermediate_size 11,008"),
                                                   ("awq", 7, "hidden_size 4,096"),
                                                   ("gptq", 8192, "intermediate_size 11,008")])
def test_3_a_checkpoint_group_size_that_does_not_tile_its_layers_is_refused_at_every_door(run_cli, client, tmp_path,
                                                                                          method, group, shown):
    """vLLM's GPTQ / AWQ create_weights raise 'The input size is not aligned with the quantized weight shape' where a
    layer's input is not a multiple of group_size: `--quantization int4 --group-size 7` was refused so (jobs.inference.
    resolve.group_size_check), a checkpoint's own group_size 7 (or 8,192 > 4,096) answered, exit 0."""
    from gpuplan import InferenceInputs, InputError, estimate_inference

    config = _grouped_config(tmp_path, method, group)
    flag = field_refusal(run_cli("infer", "--model", str(tmp_path), "--gpu", "h100", "--no-search"),
                         "quantization_config.group_size", GROUP_WORDS)
    assert f"got {group}; " in flag and shown in flag and "the checkpoint does not load" in flag
    plan = tmp_path / "ask.yaml"
    plan.write_text(f"model: {tmp_path}\ngpu: h100\nsearch: false\n", encoding="utf-8")
    field_refusal(run_cli("infer", str(plan)), f"{plan}: quantization_config.group_size", GROUP_WORDS)
    web_refusal(client.post("/api/inference", json={"config": config, "gpu": "h100", "search": False}),
                "quantization_config.group_size", GROUP_WORDS)
    with pytest.raises(InputError) as api:
        estimate_inference(InferenceInputs(model=str(tmp_path), gpu="h100", search=False))
    assert api.value.field == "quantization_config.group_size" and GROUP_WORDS in str(api.value)


@pytest.mark.parametrize("group", [128, -1])
def test_3_a_checkpoint_group_size_that_tiles_its_layers_stays_answered(run_json, tmp_path, group):
    """128 divides 4,096 and 11,008 (= 86 x 128); -1 is one group per output channel (transformers' GPTQConfig)."""
    _grouped_config(tmp_path, "gptq", group)
    report = run_json("infer", "--model", str(tmp_path), "--gpu", "h100", "--no-search")
    assert report["results"]["weights_per_gpu"] > 0


# ---- (4) the web catalog's filter bound is the schema's -------------------------------------------------------------

@pytest.mark.parametrize("kind", ["models", "gpus"])
def test_4_the_web_catalog_filter_takes_what_the_cli_takes(run_cli, client, kind):
    """The route's own Query(max_length=100) refused 101-256 characters that `gpuplan catalog --filter` answers (the
    shared CatalogInputs: schema.types.MAX_TEXT = 256), in pydantic's words 'String should have at most 100
    characters'; both doors now answer 150 characters (no match) and refuse 257 with the one line."""
    long, longer = "x" * 150, "x" * 257
    assert run_cli("catalog", kind, "--filter", long)[0] == 0
    answered = client.get(f"/api/catalog/{kind}", params={"filter": long})
    assert answered.status_code == 200, answered.text
    flag = field_refusal(run_cli("catalog", kind, "--filter", longer), "filter", "is longer than 256 characters")
    web = web_refusal(client.get(f"/api/catalog/{kind}", params={"filter": longer}), "filter",
                      "is longer than 256 characters")
    assert flag.strip() == f"error: {web}"


# ---- (5) a --peak-tflops below what the run computed ------------------------------------------------------------------

def test_5_a_peak_below_the_measured_rate_is_refused_and_nothing_is_written(run_cli, tmp_path):
    """`profile --peak-tflops 0.0001` on a CPU printed 'MFU 6903.5%' and wrote it into the measurement that calibrate
    reads; a device's dense peak bounds every rate it runs at, so a given peak below the model FLOP rate the run
    computed (profile.trial._check_given_peak) is refused, and --out is not written. The rate is this machine's:
    the words are asserted, not the figure."""
    pytest.importorskip("torch")
    from helpers import debugmodel_config

    import subprocess

    out = tmp_path / "trial.json"
    # a process of its own: pytest records warnings in-process, and ModTracker's UserWarning ('module hierarchy
    # tracking maybe be messed up', the debug model's shared rotary) was a second stderr line above the refusal
    # until profile._trial_runtime.tracked_step filtered it as profile.measure does
    done = subprocess.run([sys.executable, "-m", "gpuplan", "profile", "--model", debugmodel_config(tmp_path),
                           "--device", "cpu", "--seq-len", "64", "--steps", "1", "--warmup", "0", "--layers", "1",
                           "--peak-tflops", "1e-9", f"--out={out}"], capture_output=True, text=True, timeout=110)
    err = field_refusal((done.returncode, done.stdout, done.stderr), "peak_tflops",
                        "TFLOP/s a device this run computed (model FLOPs: MFU ")
    assert "got 1e-09; is below the " in err and "or leave it out" in err
    assert not out.exists() and list(tmp_path.iterdir()) == [tmp_path / "config.json"]


def test_5_a_sweep_ends_on_the_peak_refusal(run_cli, tmp_path):
    """profile.sweep.run_sweep records a run the memory estimate refuses as 'skipped' and goes on; the peak is the
    user's and wrong for every run, so the sweep ends on the one line (with no base run timed, its budget never
    stopped the four runs after it, each refused in turn, exit 0). Nothing is written into the folder."""
    pytest.importorskip("torch")
    import warnings

    from helpers import debugmodel_config

    folder = tmp_path / "sweep"
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        field_refusal(run_cli("profile", "--model", debugmodel_config(tmp_path), "--device", "cpu", "--seq-len", "64",
                              "--steps", "1", "--warmup", "0", "--layers", "1", "--peak-tflops", "1e-9", "--sweep",
                              f"--out={folder}"), "peak_tflops", "TFLOP/s a device this run computed")
    assert list(folder.iterdir()) == []


# ---- (6) CUDA-only options on a TPU, answered under its generic framework --------------------------------------------

TPU_ASK = {"model": "llama-3-8b", "gpu": "tpu-v5p", "gpus": 16, "mfu": "predicted"}


@pytest.mark.parametrize("job, route", [("train", "training"), ("memory", "memory")])
@pytest.mark.parametrize("field, value, valid", [("loss", "te-ce", "give fp32-ce, vocab-parallel-ce or chunked"),
                                                 ("finetune", "qlora", "give --finetune lora (a 16-bit base)"),
                                                 ("offload_layers", 2, "leave it out")])
def test_6_a_cuda_only_option_on_a_tpu_is_refused_at_every_door(run_cli, client, tmp_path, job, route, field, value,
                                                                valid):
    """A TPU's ask is modelled under --framework generic, which takes Megatron-Core / Transformer Engine options
    (core.frameworks.MEGATRON_CORE_FRAMEWORKS): TE's fused cross-entropy (Triton kernels), bitsandbytes' NF4 base
    (no XLA backend) and Megatron-Core's CPU offloading (TE's offload context on CUDA streams) were answered on a
    TPU v5p, te-ce and qlora moving the layout chosen (mixtral-8x7b on 64 chips: ZeRO-1 mb2 -> ZeRO-2 mb4 / ZeRO-0
    mb4); now refused as --attention-kernel flash1 and --allocator expandable are (schema.tpu_rules)."""
    ask = {**TPU_ASK, field: value} if job == "train" else {"model": "llama-3-8b", "gpu": "tpu-v5p", field: value}
    four_door_refusal(run_cli, client, tmp_path, job, route, ask, field,
                      f"which a Google Cloud TPU v5p does not run: {valid}")


@pytest.mark.parametrize("extra", [("--loss", "te-ce"), ("--finetune", "qlora"), ("--offload-layers", "2")])
def test_6_the_same_options_stay_answered_on_a_gpu_under_generic(run_cli, extra):
    code, _, err = run_cli("train", "--model", "llama-3-8b", "--gpu", "h100", "--gpus", "16", "--mfu", "predicted",
                           "--framework", "generic", *extra)
    assert code == 0, err


def test_6_offload_layers_at_its_default_is_answered_on_a_tpu(run_json):
    """0, the default, offloads nothing: answered as unstated (the lead's rule, review w16 R5 S3)."""
    ask = ("train", "--model", "llama-3-8b", "--gpu", "tpu-v5p", "--gpus", "16", "--mfu", "predicted")
    assert run_json(*ask, "--offload-layers", "0")["results"] == run_json(*ask)["results"]


def test_memory_compare_names_each_part_once(run_cli):
    """`memory --compare h100,h100-sxm,b200`: h100 and h100-sxm are one catalog part (the alias and its id). Wave 19
    (H1's list) kept one row for them; since session 26 a list names each entry once (schema.list_field: an entry
    given twice is refused, not kept once), and one part in two spellings is refused the same way
    (jobs.memory.estimate), naming the spelling and the entry it repeats."""
    code, out, err = run_cli("memory", "llama-3.1-8b", "--gpu", "h100", "--gpus", "8", "--compare", "h100,h100-sxm,b200",
                             "--json")
    assert code == 2 and out == ""
    assert err.strip().splitlines() == ["error: compare: got 'h100-sxm'; names the same GPU as 'h100' (h100-sxm); give each GPU once"]
    code, out, err = run_cli("memory", "llama-3.1-8b", "--gpu", "h100", "--gpus", "8", "--compare", "h100,b200", "--json")
    assert code == 0, err
    import json

    assert [row["gpu"] for row in json.loads(out)["tables"]["verdict per GPU type"]] == ["h100-sxm", "b200"]
