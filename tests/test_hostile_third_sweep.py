"""Contradictions and silent no-ops found by a third hostile sweep (2026-12-04): each is refused
with one line naming the field, exit 2, while the valid neighbour still runs."""

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _refused(run_cli, *args, field: str, fragment: str = "") -> str:
    code, _, err = run_cli(*args)
    assert code == 2, (args, err)
    assert err.startswith(f"error: {field}: got ") and err.count("\n") == 1, err
    assert fragment in err, err
    return err


MOE = ("--model", "qwen3-30b-a3b", "--gpu", "h100", "--gpus", "64")


@pytest.mark.parametrize(("refused", "field", "fragment", "accepted"), [
    (("train", "--spot-discount", "60%", "--spot-price", "1"), "spot_discount", "not both",
     ("train", "--spot-discount", "60%")),
    (("train", "--finetune", "full", "--lora-rank", "32"), "lora_rank", "--finetune lora or qlora",  # 16, the
     ("train", "--finetune", "lora", "--lora-rank", "32")),  # default, is answered since wave 18 (test_hostile_w18)
    (("train", "--lora-rank", "64"), "lora_rank", "--finetune lora or qlora", ("train", "--finetune", "qlora")),
    (("train", *MOE, "--framework", "hf", "--ep-a2a-overlap"), "ep_a2a_overlap", "--framework megatron",
     ("train", *MOE, "--framework", "megatron", "--ep-a2a-overlap")),
    (("plan", *MOE, "--framework", "deepspeed", "--ep-dispatcher", "flex"), "ep_dispatcher", "megatron, torchtitan",
     ("plan", *MOE, "--framework", "torchtitan", "--ep-dispatcher", "flex")),
    (("memory", "--model", "llama-3.1-8b", "--moe-capacity-factor", "1.25"), "moe_capacity_factor", "dense",
     ("memory", "--model", "qwen3-30b-a3b", "--gpus", "8", "--ep", "8", "--moe-capacity-factor", "1.25")),
    # Megatron-Core cuts each sequence into 2·cp load-balanced chunks
    (("memory", "--model", "llama-3.1-8b", "--gpus", "8", "--cp", "2", "--seq-len", "4098"), "cp", "2 x cp",
     ("memory", "--model", "llama-3.1-8b", "--gpus", "8", "--cp", "2", "--seq-len", "4100")),
    # --recompute-num-layers counts layers of one virtual chunk: 32 / (4 x 2) = 4
    (("memory", "--model", "llama-3.1-8b", "--gpus", "8", "--pp", "4", "--vpp", "2", "--recompute-layers", "5"),
     "recompute_layers", "the 4 layers of the largest pipeline chunk",
     ("memory", "--model", "llama-3.1-8b", "--gpus", "8", "--pp", "4", "--vpp", "2", "--recompute-layers", "4")),
    # the A100 has no FP8 tensor cores, the V100 no BF16 (catalog peaks)
    (("memory", "--gpu", "a100", "--recipe", "fp8"), "recipe", "no path for", ("memory", "--gpu", "h100", "--recipe", "fp8")),
    (("train", "--gpu", "v100", "--recipe", "bf16", "--dtype", "fp16"), "recipe", "no path for",
     ("train", "--gpu", "v100", "--recipe", "mixed", "--dtype", "fp16")),
])
def test_contradictions_are_refused_and_the_neighbour_runs(run_cli, refused, field, fragment, accepted):
    _refused(run_cli, *refused, field=field, fragment=fragment)
    code, _, err = run_cli(*accepted)
    assert code == 0, err


def test_a_too_short_checkpoint_interval_says_what_is_used(run_cli):
    # the interval is held at one save per step; the article's 7B step is at least
    # 6 x 7e9 x batch tokens / (GPUs x 312e12 x 0.40) before communication (1.27 s on 1,113 GPUs;
    # saving every step, the 7 days take more GPUs, so the step is shorter)
    code, out, err = run_cli("train", "--checkpoint-interval", "1ms", "--json")
    assert code == 0, err
    data = json.loads(out)
    r = data["results"]
    used = r["ckpt_interval_seconds"]
    assert used == r["io_step_seconds"] > 6 * 7e9 * r["io_global_batch_tokens"] / (r["gpus"] * 312e12 * 0.40)
    assert any("--checkpoint-interval 0.001 s is shorter than a step" in note for note in data["notes"])


def test_report_checks_its_outputs_and_serving_fields_before_writing(run_cli, tmp_path):
    plan = tmp_path / "p.yaml"
    plan.write_text((ROOT / "examples/article-7b.yaml").read_text())
    (tmp_path / "m-plots").write_text("not a folder")
    _refused(run_cli, "report", str(plan), "--markdown", str(tmp_path / "m.md"), "--out", str(tmp_path / "m.html"),
             field="markdown", fragment="is not a folder")
    _refused(run_cli, "report", str(plan), "--markdown", str(tmp_path / "x.md"), "--out", str(tmp_path / "x.md"),
             field="markdown", fragment="same file as --out")
    assert not (tmp_path / "m.html").exists() and not (tmp_path / "x.md").exists()
    # serving fields of a report limited to training sections are still checked
    plan.write_text(plan.read_text() + "inference:\n  tp: 3\n")
    _refused(run_cli, "report", str(plan), "--sections", "budget", "--no-plots", "--out", str(tmp_path / "b.html"),
             field=f"{plan}: tp", fragment="must divide the 32 attention heads")  # the file named
    assert not (tmp_path / "b.html").exists()
