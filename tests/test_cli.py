"""The CLI: defaults, formats, plan files, and one-line errors with exit status 2."""

import subprocess
import sys

import pytest


def test_builtin_defaults_are_the_article_example(run_json):
    data = run_json("train")
    assert data["results"]["flops_6nd"] == pytest.approx(8.4e22)
    assert data["results"]["gpus_compute_only"] == pytest.approx(1112.9, abs=0.1)
    assert data["inputs"]["gpu"] == "a100-sxm4-80gb"
    assert any("built-in defaults" in n for n in data["notes"])


def test_table_and_markdown_render(run_cli):
    code, out, _ = run_cli("train", "--params", "7B", "--tokens", "2T", "--gpu", "a100", "--days", "7")
    assert code == 0 and "GPU-days" in out and "1,112.9" in out
    code, out, _ = run_cli("train", "--format", "markdown")
    assert code == 0 and out.startswith("# Training budget") and "| GPUs to finish in 7 days (solved) |" in out
    for section in ("## Compute", "## Layout and memory per GPU", "## Data loading", "## Checkpoints", "## Failures and goodput",
                    "## Cost (on-demand vs spot)", "## Contingency budget"):
        assert section in out  # one view: the budget report of issue #5


def test_positional_model_name(run_json):
    data = run_json("train", "llama-2-7b", "--tokens", "2T", "--gpus", "1024")
    assert data["results"]["params_total"] == 6_738_415_616


def test_yaml_and_toml_plan_files_with_flag_override(run_json, tmp_path):
    yaml_plan = tmp_path / "plan.yaml"
    yaml_plan.write_text("params: 7B\ntokens: 2T\ngpu: a100\ndays: 7\nmfu: 40%\n")
    assert run_json("train", str(yaml_plan))["results"]["gpus_compute_only"] == pytest.approx(1112.9, abs=0.1)
    toml_plan = tmp_path / "plan.toml"
    toml_plan.write_text('params = "7B"\ntokens = "2T"\ngpu = "a100"\ndays = 7\n')
    # --days 14 overrides the file: half the GPUs
    assert run_json("train", str(toml_plan), "--days", "14")["results"]["gpus_compute_only"] == pytest.approx(556.5, abs=0.1)


@pytest.mark.parametrize("args, fragment", [
    (("train", "--gpu", "a1000"), "gpu: got 'a1000'; not in the catalog; did you mean"),
    (("train", "--model", "llama-2-8b"), "model: got 'llama-2-8b'; not in the catalog; did you mean"),
    (("train", "--tokens", "-2T"), "tokens: got '-2T'"),
    (("train", "--tokens", "lots"), "tokens: got 'lots'"),
    (("train", "--mfu", "1.4"), "mfu: got '1.4'"),
    (("train", "--gpus", "8", "--days", "7", "--mfu", "0.4"), "gpus/days/mfu"),
    (("train", "--nonsense"), "--nonsense: not an option of gpuplan train (gpuplan train --help lists them)"),
    (("train", "--recompute", "most"), "recompute: got 'most'"),
])
def test_bad_input_one_line_exit_2(run_cli, args, fragment):
    code, out, err = run_cli(*args)
    assert code == 2
    assert fragment in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert out == ""


def test_bad_plan_files(run_cli, tmp_path):
    unknown = tmp_path / "a.yaml"
    unknown.write_text("tokns: 2T\n")
    code, _, err = run_cli("train", str(unknown))
    assert code == 2 and "tokns" in err and "valid fields" in err
    broken = tmp_path / "b.yaml"
    broken.write_text("tokens: [2T\n")
    code, _, err = run_cli("train", str(broken))
    assert code == 2 and "not valid YAML" in err and err.count("\n") == 1
    missing = tmp_path / "missing.toml"
    code, _, err = run_cli("train", str(missing))
    assert code == 2 and "no such file" in err


def test_config_json_model(run_json, tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text('{"model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008, '
                   '"num_hidden_layers": 32, "num_attention_heads": 32, "vocab_size": 32000, '
                   '"tie_word_embeddings": false}')
    assert run_json("train", "--model", str(cfg))["results"]["params_total"] == 6_738_415_616
    assert run_json("train", "--model", str(tmp_path))["results"]["params_total"] == 6_738_415_616


def test_malformed_config_json(run_cli, tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text('{"model_type": "llama", "hidden_size": 4096}')
    code, _, err = run_cli("train", "--model", str(cfg))
    assert code == 2 and "config.json: num_hidden_layers" in err and "got no value; need one of num_hidden_layers" in err
    cfg.write_text("{not json")
    code, _, err = run_cli("train", "--model", str(cfg))
    assert code == 2 and "not valid JSON" in err


def test_catalog_listings(run_json):
    models = run_json("catalog", "models")["tables"]["models"]
    assert len(models) >= 40
    gpus = run_json("catalog", "gpus", "--filter", "h100")["tables"]["accelerators"]
    assert {g["id"] for g in gpus} >= {"h100-sxm", "h100-pcie"}


def test_console_script_runs_without_traceback():
    proc = subprocess.run([sys.executable, "-m", "gpuplan.cli", "train", "--gpu", "nope"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr.startswith("error: gpu:") and "Traceback" not in proc.stderr


def test_memory_command_article_example(run_json):
    data = run_json("memory", "--params", "7B", "--recipe", "article", "--gpu", "a100")
    assert data["results"]["model_states_total"] == pytest.approx(98e9)
    assert data["results"]["fits"] is False
    fixes = [k for k in data["results"] if k.startswith("fix_")]
    assert fixes, "a shortfall comes with changes that would fit"
    verdicts = {row["gpu"]: row["verdict"] for row in data["tables"]["verdict per GPU type"]}
    assert verdicts["a100-sxm4-80gb"] == "does not fit"


def test_memory_plan_file_and_flags(run_json, tmp_path):
    plan = tmp_path / "mem.yaml"
    plan.write_text("model: llama-2-7b\ngpu: h100\ngpus: 8\nzero: 3\nrecipe: bf16\nseq_len: 4096\n"
                    "framework: hf\noptimizer_impl: foreach\n")  # what measure runs: HF modules, foreach AdamW
    data = run_json("memory", str(plan))
    # gpuplan measure (FSDP2, fake process group of 8, logits kept through backward): 30.175 GiB
    assert data["results"]["peak_allocated"] / 2**30 == pytest.approx(30.175, rel=0.005)
    more = run_json("memory", str(plan), "--micro-batch", "2")
    assert more["results"]["peak_allocated"] > data["results"]["peak_allocated"]


@pytest.mark.parametrize("args, fragment", [
    (("memory", "--model", "llama-2-7b", "--tp", "3"), "tp: got 3; must divide the 32 attention heads"),
    (("memory", "--model", "llama-3.1-8b", "--gpus", "10", "--tp", "4"), "gpus: got 10"),
    (("memory", "--model", "mixtral-8x7b", "--gpus", "8", "--ep", "3"), "ep: got 3"),
    (("memory", "--model", "llama-2-7b", "--pp", "40"), "pp: got 40"),
    (("memory", "--model", "llama-2-7b", "--dp", "4", "--micro-batch", "3", "--global-batch", "16"), "global_batch"),
    (("memory", "--recipe", "fp64"), "recipe: got 'fp64'"),
    (("memory", "--zero", "5"), "zero: got '5'"),
])
def test_memory_bad_layouts(run_cli, args, fragment):
    code, out, err = run_cli(*args)
    assert code == 2 and fragment in err and err.count("\n") == 1 and out == ""


def test_train_has_a_memory_section(run_json):
    data = run_json("train")
    assert data["results"]["mem_fits"] is True  # 7B, ZeRO-1 over 1,113 A100s, mixed precision, s=4096


def test_measure_without_the_profile_extra_says_which_install(run_cli, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "torch", None)  # import torch -> ImportError
    code, out, err = run_cli("measure", "gpt2", "--seq-len", "128")
    assert code == 2 and "pip install 'gpuplan[profile]'" in err and err.count("\n") == 1


def test_measure_command_side_by_side(run_json):
    pytest.importorskip("torch", reason="needs the profile extra")
    pytest.importorskip("transformers", reason="needs the profile extra")
    data = run_json("measure", "pythia-70m", "--seq-len", "256", "--micro-batch", "2")
    # the estimate and the measurement of the same step agree within the memory goal (8%)
    assert abs(data["results"]["error"]) < 0.08
    categories = {row["category"] for row in data["tables"]["measured vs estimated (GiB, allocated)"]}
    assert {"param", "grad", "optimizer_state", "activation", "temp", "peak"} <= categories
