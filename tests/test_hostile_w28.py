"""Hostile inputs, wave 28 (helper HX3, session 24): a calibration factor's value at and past its bounds, typed
wrong, or past float range; an option typed with a Unicode dash. Each is refused in one line naming the field, exit
status 2, the same field at every door."""

from __future__ import annotations

import json

import pytest
from helpers import (CALIBRATION_ASK, CALIBRATION_RANGE, calibration_refused_by_flag_and_plan_file, calibration_with,
                     field_refusal, h200_calibration_doc)

# ---- 1. a calibration factor's value: always named by its path, with the range it must lie in ----------------------

RANGE = CALIBRATION_RANGE
ASK = CALIBRATION_ASK


@pytest.fixture(scope="module")
def h200_doc():
    """The calibration the two H200 trials of tests/fixtures/h200 fit (compute_time 0.8635, as test_hostile_w27b)."""
    return h200_calibration_doc()


_with = calibration_with


@pytest.mark.parametrize("name, value, words", [
    ("compute_time", 1e-320, RANGE), ("compute_time", 5e-324, RANGE), ("attention_time", -1e-310, RANGE),
    ("compute_time", "10", "is not a number; a ratio factor"), ("comm_time", True, "is not a number"),
    ("activation_memory", None, "got no value; is not a number"), ("compute_time", [1], "is not a number"),
    ("memory_overhead", "5", "is not a number; a fixed memory overhead in bytes must be within +-1 TiB"),
    ("memory_overhead", 1e-320, "is subnormal"),
])
def test_a_factor_value_of_no_range_is_named_by_its_path_at_every_door(run_cli, client, tmp_path, h200_doc, name,
                                                                       value, words):
    """1e-320 (subnormal), '10', true, null or a list was refused as the whole document ('calibration: got ...; is
    incomplete or malformed (compute_time.value must be a finite number, not 1e-320)'), naming no field and not the
    0.1-10 range a factor must lie in (review R2's note)."""
    import gpuplan
    from gpuplan import InputError

    doc = _with(h200_doc, name, value)
    field = f"calibration: {name}.value"
    calibration_refused_by_flag_and_plan_file(run_cli, tmp_path, doc, field, words)
    response = client.post("/api/training", json={**ASK, "calibration": doc})
    assert response.status_code == 422 and response.json()["field"] == field and words in response.json()["message"]
    with pytest.raises(InputError) as caught:
        gpuplan.estimate_training(gpuplan.TrainingInputs(**ASK, calibration=doc))
    assert caught.value.field == field and words in str(caught.value)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), 10**400, -(10**400)])
def test_a_python_callers_non_finite_or_huge_factor_names_the_factor(h200_doc, value):
    """The CLI and the API read a NaN / Infinity / 1e400 as 'calibration: compute_time.value: ... must be a finite JSON
    number'; a Python caller's dict said 'calibration: ... incomplete or malformed' (NaN, inf) or ended in
    OverflowError: int too large to convert to float (10**400; over the API, an internal failure)."""
    import gpuplan
    from gpuplan import InputError

    with pytest.raises(InputError) as caught:
        gpuplan.TrainingInputs(**ASK, calibration=_with(h200_doc, "compute_time", value))
    assert caught.value.field == "calibration: compute_time.value" and RANGE in str(caught.value)


@pytest.mark.parametrize("where, key", [("reference", "gemm_dim"), ("compute_time", "stderr"),
                                        ("compute_time", "n_measurements")])
def test_a_huge_integer_elsewhere_in_a_calibration_is_refused_not_raised(h200_doc, where, key):
    from gpuplan import InputError
    from gpuplan.calibrate.model import calibration_from_dict

    doc = json.loads(json.dumps(h200_doc))
    doc[where][key] = 10**400  # a Python caller's int: math.isfinite raised OverflowError
    with pytest.raises(InputError, match=f"{key} must be"):
        calibration_from_dict(doc, "doc")


@pytest.mark.parametrize("name, value", [("compute_time", 0.1), ("compute_time", 10), ("activation_memory", 10.0)])
def test_the_bounds_themselves_are_read(h200_doc, name, value):
    from gpuplan.calibrate.model import calibration_from_dict

    assert calibration_from_dict(_with(h200_doc, name, value), "doc").factor(name).value == value


def test_a_cpu_stand_ins_subnormal_time_factor_names_its_own_range(h200_doc):
    from gpuplan import InputError
    from gpuplan.calibrate.model import calibration_from_dict

    cpu = json.loads(json.dumps(h200_doc))
    cpu["reference"]["gpus"] = ["cpu"]
    with pytest.raises(InputError, match="within 0.001 to 1000") as caught:
        calibration_from_dict(_with(cpu, "compute_time", 1e-320), "doc")
    assert caught.value.field == "calibration: compute_time.value"


# ---- 2. an option typed with a Unicode dash (pasted from a document) -------------------------------------------------


@pytest.mark.parametrize("args, shown, dash, fixed", [
    (("train", "\u2014gpus", "8"), "\u2014gpus", "em dash U+2014", "--gpus"),
    (("train", "\u2014gpus"), "\u2014gpus", "em dash U+2014", "--gpus"),
    (("memory", "--model", "llama-3.1-8b", "\u2013\u2013dtype", "fp8"), "\u2013\u2013dtype", "en dash U+2013",
     "--dtype"),
    (("memory", "--model", "llama-3.1-8b", "\u2212\u2212dtype=fp8"), "\u2212\u2212dtype=fp8", "minus sign U+2212",
     "--dtype=fp8"),
    (("train", "--gpus", "8", "\uff0d\uff0dtp", "2"), "\uff0d\uff0dtp", "fullwidth hyphen-minus U+FF0D", "--tp"),
    (("catalog", "models", "\u2013f", "json"), "\u2013f", "en dash U+2013", "-f"),
])
def test_an_option_typed_with_a_unicode_dash_is_named_with_its_ascii_form(run_cli, args, shown, dash, fixed):
    """click read '—gpus' as the command's TARGET: `train —gpus 8` was told "arguments: got '8'; not expected",
    `train —gpus` "model: got '—gpus'; not in the catalog", `memory ... —dtype fp8` "arguments: got 'fp8'"."""
    code, out, err = run_cli(*args)
    assert (code, out) == (2, "") and err == (f"error: {shown}: starts with the {dash}, not the ASCII hyphen-minus an "
                                              f"option is written with; write {fixed} (a file so named: ./{shown})\n")


@pytest.mark.parametrize("args", [("train", "--", "\u2014gpus"), ("train", "\u2014"), ("train", "\u22128")])
def test_a_dash_word_that_names_no_option_is_left_to_its_field(run_cli, args):
    """After a bare '--', a lone dash or a dash before a digit (a minus sign) the word is the TARGET as before."""
    code, out, err = run_cli(*args)
    assert code == 2 and err.startswith("error: model: got ") and "ASCII" not in err, err


# ---- 3. a campaign without prices says where a price goes ------------------------------------------------------

UNPRICED = {"model": "llama-3.2-1b", "gpu": "gb200", "mfu": 0.4, "stages": [{"name": "pretrain", "tokens": "1B",
                                                                                "gpus": 8}]}


def test_an_unpriced_campaign_names_the_stage_field_not_an_option_it_lacks(run_cli, client, tmp_path):
    """The totals, the stage cells and the note said 'give --price' (the note: 'give --price to that stage or at the
    top level'), and `gpuplan campaign FILE --price 3` is refused ('--price: not an option of gpuplan campaign; a
    stage's field goes in FILE'). GB200 has no published price (docs/budget.md section 4)."""
    import yaml

    plan = tmp_path / "c.yaml"
    plan.write_text(yaml.safe_dump(UNPRICED), encoding="utf-8")
    note = "the money totals are n/a (give that stage a price: (USD per GPU-hour), or one at the top level"
    for fmt in ("table", "markdown", "csv"):
        code, out, err = run_cli("campaign", str(plan), "--format", fmt)
        assert code == 0 and "--price" not in out and "n/a (no price)" in out, (fmt, err, out)
        assert fmt == "csv" or note in out, out
    assert run_cli("campaign", str(plan), "--price", "3")[0] == 2
    body = client.post("/api/campaign", json=UNPRICED).json()["report"]  # the campaign's own report, not a stage's
    assert any(note in n for n in body["notes"]) and "--price" not in str(body["notes"]), body["notes"]
    priced = {**UNPRICED, "stages": [{**UNPRICED["stages"][0], "price": 6.0}]}  # the field the note names is read
    plan.write_text(yaml.safe_dump(priced), encoding="utf-8")
    code, out, err = run_cli("campaign", str(plan))
    assert code == 0 and "n/a" not in out.split("Stages")[0], out


@pytest.mark.parametrize("typed", ["--=", "--=8", "---=8", "--=\x1b[31m"])
def test_an_option_with_no_name_is_quoted_as_typed(run_cli, typed):
    """click names '--' for '--=8': the line said '--: not an option of gpuplan train', quoting neither what was typed
    nor how an option is written."""
    from gpuplan.errors import printable

    code, out, err = run_cli("train", typed)
    line = (f"error: {printable(typed)}: not an option of gpuplan train; an option is written --NAME or --NAME=VALUE "
            "(gpuplan train --help lists them)\n")
    assert (code, out, err) == (2, "", line)


# ---- 4. a carriage return that hides nothing -------------------------------------------------------------------------

BODY = "model: llama-3.2-1b\ngpu: h200\ngpus: 8\n"


@pytest.mark.parametrize("text", [BODY.rstrip("\n") + "\r", BODY.replace("gpus: 8\n", "gpus: 8\r\r\n"),
                                  BODY.replace("gpus: 8\n", "gpus: 8\r  \n"), BODY + "\r" * 3])
def test_a_carriage_return_with_nothing_after_it_reads_as_its_lf_twin(run_cli, tmp_path, text):
    """'gpus: 8\\r' at the end of a file (a CRLF whose line feed a tool cut) was refused 'cannot be read safely': an
    editor shows nothing after the ^M, so nothing hides there. Read as the LF file."""
    odd, plain = tmp_path / "odd.yaml", tmp_path / "plain.yaml"
    odd.write_bytes(text.encode())
    plain.write_bytes(BODY.encode())
    code, out, err = run_cli("memory", str(odd), "--json")
    assert code == 0, err
    assert json.loads(out)["results"] == json.loads(run_cli("memory", str(plain), "--json")[1])["results"]


@pytest.mark.parametrize("text, line", [("model: llama-3.2-1b\ngpu: h200\n# 8 GPUs\r  gpus: 4096\n", 3),
                                        ("model: llama-3.2-1b\r\ngpu: h200\r\ngpus: 8\r\rtp: 2\r\n", 3),
                                        ("model: llama-3.2-1b\n" + "\r " * 200_000 + "\rgpus: 9\n", 2)])
def test_a_carriage_return_with_text_after_it_is_still_refused_at_once(run_cli, tmp_path, text, line):
    """The guard is one pass over the lines: a regex lookahead per CR rescans to the line's end (quadratic)."""
    import time

    path = tmp_path / "hidden.yaml"
    path.write_bytes(text.encode())
    start = time.perf_counter()
    field_refusal(run_cli("memory", str(path)), "plan file", f"cannot be read safely (line {line}): a carriage return")
    assert time.perf_counter() - start < 5
