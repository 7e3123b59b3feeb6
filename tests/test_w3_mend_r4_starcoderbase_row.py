"""Review w10 r4 S1: the starcoderbase-15.5b row kept the generic 15.5e9 shape saying 'GPTBigCode ... is not
readable', false since the gpt_bigcode reader (catalog `starcoder`). The real reason it stays generic: its stated
--tp 4 with one K/V head is refused by core/parallel.check_model_degrees, while bigcode's Megatron fork replicates
the multi-query K/V on every TP rank (megatron/model/transformer.py @c988cf25 L553-566, L686-704)."""

from pathlib import Path

import yaml

import gpuplan

RUNS = Path(gpuplan.__file__).parent / "catalog" / "reference" / "training_runs.yaml"


def _row(text: str) -> dict:
    rows = yaml.safe_load(text)
    rows = rows.get("runs", rows) if isinstance(rows, dict) else rows
    return next(r for r in rows if r["id"] == "starcoderbase-15.5b")


def test_the_row_says_why_it_stays_generic():
    text = RUNS.read_text()
    line = next(x for x in text.splitlines() if x.strip().startswith("params: 15.5e9"))
    assert "not readable" not in line and "check_model_degrees" in line and "@c988cf25" in line, line
    row = _row(text)
    assert float(row["params"]) == 15.5e9 and "model" not in row and row["degrees"]["tp"] == 4
    assert "architecture is not readable" not in row["notes"]
    assert "L553-566, L686-704" in row["notes"] and "check_model_degrees" in row["notes"]


def test_the_catalog_starcoder_at_the_runs_tp_is_refused(run_cli):
    """The reason itself: `starcoder` (one K/V head) on the run's --tp 4 is refused naming tp."""
    code, out, err = run_cli("train", "starcoder", "--gpus", "512", "--tp", "4", "--pp", "4")
    assert code == 2 and out == "" and err.startswith("error: tp: got 4; must divide the 1 key/value heads"), err
