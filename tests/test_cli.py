"""The CLI: defaults, formats, plan files, and one-line errors with exit status 2."""

import subprocess
import sys

import pytest


def test_builtin_defaults_are_the_article_example(run_json):
    data = run_json("train")
    assert data["results"]["flops_6nd"] == pytest.approx(8.4e22)
    assert data["results"]["gpus"] == pytest.approx(1112.9, abs=0.1)
    assert data["inputs"]["gpu"] == "a100-sxm4-80gb"
    assert any("built-in defaults" in n for n in data["notes"])


def test_table_and_markdown_render(run_cli):
    code, out, _ = run_cli("train", "--params", "7B", "--tokens", "2T", "--gpu", "a100", "--days", "7")
    assert code == 0 and "GPU-days" in out and "1,113" in out
    code, out, _ = run_cli("train", "--format", "markdown")
    assert code == 0 and out.startswith("# Training estimate") and "| GPUs (solved) |" in out


def test_positional_model_name(run_json):
    data = run_json("train", "llama-2-7b", "--tokens", "2T", "--gpus", "1024")
    assert data["results"]["params_total"] == 6_738_415_616


def test_yaml_and_toml_plan_files_with_flag_override(run_json, tmp_path):
    yaml_plan = tmp_path / "plan.yaml"
    yaml_plan.write_text("params: 7B\ntokens: 2T\ngpu: a100\ndays: 7\nmfu: 40%\n")
    assert run_json("train", str(yaml_plan))["results"]["gpus"] == pytest.approx(1112.9, abs=0.1)
    toml_plan = tmp_path / "plan.toml"
    toml_plan.write_text('params = "7B"\ntokens = "2T"\ngpu = "a100"\ndays = 7\n')
    # --days 14 overrides the file: half the GPUs
    assert run_json("train", str(toml_plan), "--days", "14")["results"]["gpus"] == pytest.approx(556.5, abs=0.1)


@pytest.mark.parametrize("args, fragment", [
    (("train", "--gpu", "a1000"), "gpu: got 'a1000'; not in the catalog; did you mean"),
    (("train", "--model", "llama-2-8b"), "model: got 'llama-2-8b'; not in the catalog; did you mean"),
    (("train", "--tokens", "-2T"), "tokens: got '-2T'"),
    (("train", "--tokens", "lots"), "tokens: got 'lots'"),
    (("train", "--mfu", "1.4"), "mfu: got '1.4'"),
    (("train", "--gpus", "8", "--days", "7", "--mfu", "0.4"), "gpus/days/mfu"),
    (("train", "--nonsense"), "No such option"),
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
    assert code == 2 and "config.json: num_hidden_layers" in err and "missing" in err
    cfg.write_text("{not json")
    code, _, err = run_cli("train", "--model", str(cfg))
    assert code == 2 and "not valid JSON" in err


def test_catalog_listings(run_json):
    models = run_json("catalog", "models")["tables"]["models"]
    assert len(models) >= 40
    gpus = run_json("catalog", "gpus", "--search", "h100")["tables"]["accelerators"]
    assert {g["id"] for g in gpus} >= {"h100-sxm", "h100-pcie"}


def test_console_script_runs_without_traceback():
    proc = subprocess.run([sys.executable, "-m", "gpuplan.cli", "train", "--gpu", "nope"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr.startswith("error: gpu:") and "Traceback" not in proc.stderr
