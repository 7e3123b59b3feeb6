"""Review w10 r4 S1, then wave 12: the starcoderbase-15.5b row kept the generic 15.5e9 shape because its stated
--tp 4 with one K/V head was refused by core/parallel.check_model_degrees. Megatron-Core 0.16 (gpuplan's
--framework megatron) runs tp a multiple of the K/V heads (core/parallel.check_kv_heads), so the row now names the
catalog's `starcoder`; its notes say how bigcode's fork, the run's code, differs (a replicated K/V linear:
megatron/model/transformer.py @c988cf25 L553-566, L686-704)."""

from pathlib import Path

import yaml

import gpuplan

RUNS = Path(gpuplan.__file__).parent / "catalog" / "reference" / "training_runs.yaml"


def _row(text: str) -> dict:
    rows = yaml.safe_load(text)
    rows = rows.get("runs", rows) if isinstance(rows, dict) else rows
    return next(r for r in rows if r["id"] == "starcoderbase-15.5b")


def test_the_row_names_starcoder_at_the_runs_tp():
    row = _row(RUNS.read_text())
    assert row["model"] == "starcoder" and "params" not in row
    assert row["degrees"]["tp"] == 4 and row["framework"] == "megatron"
    assert "L553-566, L686-704" in row["notes"] and "check_kv_heads" in row["notes"]
    assert "core_v0.16.0 L939-946" in row["notes"]


def test_the_catalog_starcoder_at_the_runs_tp_runs_under_megatron(run_cli):
    """The reason it could not before, now gone under the row's framework."""
    code, out, err = run_cli("train", "starcoder", "--gpus", "512", "--tp", "4", "--pp", "4",
                             "--framework", "megatron")
    assert code == 0, err
