"""Hostile inputs to `gpuplan profile` and `gpuplan measure` (a sweep's reproducers): each is
refused with one stderr line naming the field, exit 2, before any long work; a valid neighbour
is still accepted. The help offers only what the command runs. Large --gpus costs no more than
small (FSDP2's per-rank chunks made on demand), and a percentage against a nearly empty
measured category prints n/a."""

import importlib.util
import time

import pytest

from gpuplan.errors import InputError
from gpuplan.jobs.measure.schema import MeasureInputs
from gpuplan.profile.schema import TrialInputs

HAVE_BACKEND = all(importlib.util.find_spec(m) is not None for m in ("torch", "transformers"))
needs_backend = pytest.mark.skipif(not HAVE_BACKEND, reason="needs the profile extra (torch, transformers)")

P = ("pythia-70m", "--device", "cpu", "--steps", "2", "--warmup", "1", "--seq-len", "32")
FAST_S = 1.0  # a pre-check: no torch import, no model built

REFUSED = [
    # (args, field named, what the line says is valid)
    (("profile", *P, "--layers", "100"), "layers", "at most the model's 6 layers (pythia-70m)"),
    (("profile", *P, "--recompute", "partial"), "recompute", "must be one of none, selective, full"),
    (("profile", *P, "--optimizer", "lion"), "optimizer", "must be one of adamw, sgd"),
    (("profile", *P, "--optimizer", "adafactor"), "optimizer", "must be one of adamw, sgd"),
    (("profile", "pythia-70m", "--model-type", "banana"), "--model-type", "not an option of gpuplan profile"),
    (("profile", "--params", "100M"), "--params", "not an option of gpuplan profile"),
    (("measure", "--params", "100M"), "--params", "not an option of gpuplan measure"),
    (("profile",), "model", "give a model"),
    (("measure",), "model", "give a model"),
    (("measure", "pythia-70m", "--model-type", "banana"), "model_type", "must be one of dbrx,"),
    (("measure", "pythia-70m", "--precision", "fp32"), "precision", "must be one of bf16, fp32-autocast"),
    (("measure", "pythia-70m", "--recompute", "selective"), "recompute", "must be one of none, full"),
    (("measure", "pythia-70m", "--optimizer-impl", "fused"), "optimizer_impl", "must be one of foreach, forloop"),
    (("measure", "pythia-70m", "--seq-len", "32", "--depths", "2,6"), "depths", "below the model's 6 layers"),
]


@pytest.mark.parametrize("args,field,valid", REFUSED, ids=lambda a: " ".join(a) if isinstance(a, tuple) else None)
def test_refused_in_one_line_before_any_work(run_cli, args, field, valid):
    t0 = time.perf_counter()
    code, out, err = run_cli(*args)
    wall = time.perf_counter() - t0
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert field in lines[0] and valid in lines[0], lines[0]
    assert wall < FAST_S, f"{wall:.2f} s: the refusal came after work"


@pytest.mark.parametrize("schema,raw,read", [
    (TrialInputs, {"model": "pythia-70m", "recompute": "full", "optimizer": "sgd", "layers": "6"}, {"layers": 6}),
    (TrialInputs, {"model": "pythia-70m", "recompute": "none", "optimizer": "adamw"}, {}),
    (MeasureInputs, {"model": "pythia-70m", "model_type": "gpt_neox", "precision": "fp32-autocast",
                     "recompute": "full", "optimizer_impl": "forloop", "gpus": "100000", "depths": "2,4"},
     {"gpus": 100000, "depths": (2, 4)}),
    (MeasureInputs, {"model": "pythia-70m", "model_type": "LLAMA", "optimizer_impl": "foreach"}, {"model_type": "llama"}),
])
def test_valid_neighbours_are_accepted(schema, raw, read):
    """Accepted and read as given: each field as typed, or as ``read`` says its text converts (counts to
    integers, a list to a tuple, a model type to lower case)."""
    parsed = schema.parse(raw)
    assert {key: getattr(parsed, key) for key in raw} == raw | read


def test_layers_up_to_the_model_depth_pass_the_check(monkeypatch):
    """--layers 6 of a 6-layer model is not refused: the trial goes on to import torch."""
    from gpuplan.profile import _trial_runtime, trial

    class Reached(Exception):
        pass

    def stop():
        raise Reached

    monkeypatch.setattr(_trial_runtime, "import_backends", stop)
    settings = TrialInputs.parse({"model": "pythia-70m", "layers": "6", "device": "cpu"}).settings()
    with pytest.raises(Reached):
        trial.run_trial(settings)
    with pytest.raises(InputError) as err:
        trial.run_trial(TrialInputs.parse({"model": "pythia-70m", "layers": "7"}).settings())
    assert err.value.field == "layers"


def test_help_offers_only_what_the_command_runs(run_cli):
    code, out, _ = run_cli("profile", "--help")
    assert code == 0
    assert "--params TEXT" not in out and "--model-type" not in out  # (--model's shared help still names it)
    assert "[none|selective|full]" in out and "[adamw|sgd]" in out and "[full|lora]" in out  # what a trial runs
    code, out, _ = run_cli("measure", "--help")
    assert code == 0
    assert "--params TEXT" not in out and "--model-type" in out
    assert "[none|full]" in out and "[foreach|forloop]" in out and "[bf16|fp32-autocast]" in out


def test_a_percentage_against_a_nearly_empty_measurement_is_na():
    from gpuplan.jobs.measure.estimate import comparison

    gib = 2**30
    measured = {"peak_bytes": 2 * gib, "peak_phase": "optimizer_step",
                "at_peak": {"param": gib, "grad": 0, "optimizer_state": gib, "activation": 35_328, "temp": 0}}
    estimated = {"param": gib, "grad": 0, "optimizer_state": gib, "activation": 0, "temp": 0.012 * gib,
                 "peak": 2 * gib, "phase": "optimizer step"}
    rows = {r[0]: r for r in comparison(measured, estimated).rows}
    assert rows["activation"][1:] == ("0.000", "0.000", "n/a")  # not -100.0%
    assert rows["temp"][3] == "n/a"  # measured 0, estimated 0.012: no percentage either
    assert rows["grad"][3] == "0" and rows["param"][3] == "+0.0%"
    assert rows["peak"][3] == "+0.0%"


@needs_backend
def test_lazy_chunks_equal_fsdp2s_chunks():
    import torch
    from torch.distributed.fsdp._fully_shard._fsdp_common import _chunk_with_empty

    from gpuplan.profile.fake_distributed import LazyChunks

    for shape in ((7, 3), (0, 4), (1,), (100, 2), (8,)):
        for n in (1, 2, 3, 8, 200):
            tensor = torch.arange(torch.Size(shape).numel()).reshape(shape)
            want, got = _chunk_with_empty(tensor, n, 0), LazyChunks(tensor, n, 0)
            assert len(got) == len(want)
            for a, b in zip(want, got):
                assert a.shape == b.shape and a.stride() == b.stride() and torch.equal(a, b)


@needs_backend
def test_measure_cost_does_not_grow_with_the_world_size():
    """Before: FSDP2 built every rank's chunk of every parameter, ~6 ms per rank for pythia-70m
    (--gpus 100000: > 120 s). Now a world of 100,000 takes about as long as one of 2."""
    from gpuplan.profile import measure_training_memory

    tiny = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 176, "num_attention_heads": 4,
            "num_key_value_heads": 2, "vocab_size": 256, "num_hidden_layers": 2, "max_position_embeddings": 64}
    measure_training_memory(tiny, seq_len=8, world_size=2)  # lazy imports out of the timing
    t0 = time.perf_counter()
    measure_training_memory(tiny, seq_len=8, world_size=2)
    small = time.perf_counter() - t0
    t0 = time.perf_counter()
    m = measure_training_memory(tiny, seq_len=8, world_size=100_000)
    large = time.perf_counter() - t0
    assert m.settings["world_size"] == 100_000
    assert large < 5 * small + 5, (small, large)
