"""Hostile inputs, wave 27 (helper HX, session 24): each case is refused in one line naming the field, exit
status 2, at every door that takes it, with nothing started and nothing half-written."""

from __future__ import annotations

import pytest
from helpers import field_refusal

# ---- 1. serve --port: a TCP port is written in decimal digits ----------------------------------------------------


@pytest.fixture
def no_server(monkeypatch):
    """`serve` with uvicorn.run and the bind probe stubbed: a port accepted is recorded, never served on."""
    uvicorn = pytest.importorskip("uvicorn")
    import gpuplan.commands.serve as serve

    started = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: started.append(kw["port"]))
    monkeypatch.setattr(serve, "check_port_free", lambda host, port: None)
    monkeypatch.setenv("GPUPLAN_ALLOWED_HOSTS", "")
    return started


@pytest.mark.parametrize("port", ["1e3", "1000.0", "8e3", "+80", "00080", "0x50", "1_000", "true", "8080.5"])
def test_serve_port_in_another_form_than_digits_is_refused(run_cli, no_server, port):
    """'1e3' and '1000.0' were read as a count (schema.types.number) and served on port 1000, '+80' and '00080'
    on 80 (a leading zero is octal to other tools)."""
    field_refusal(run_cli("serve", "--port", port), "port", "in decimal digits, e.g. 8000")
    assert no_server == []


@pytest.mark.parametrize("port", ["0", "-1", "65536", "70000", "99999999999999999999"])
def test_serve_port_out_of_range_is_refused_with_its_bounds(run_cli, no_server, port):
    field_refusal(run_cli("serve", "--port", port), "port", "must be >= 1 and <= 65535")
    assert no_server == []


@pytest.mark.parametrize("port", ["1", "8000", " 8080 ", "65535"])
def test_serve_port_in_digits_is_served_on(run_cli, no_server, port):
    code, _, err = run_cli("serve", "--port", port)
    assert code == 0 and no_server == [int(port)], err


@pytest.mark.parametrize("port", [8000.0, True, [8000], "1e3"])
def test_serve_schema_refuses_a_port_not_an_int_in_python(port):
    """The schema's own door (ServeInputs): a float or a bool is no port (True was port 1, 8000.0 port 8000)."""
    from gpuplan import InputError
    from gpuplan.commands.serve import serve_schema

    with pytest.raises(InputError) as caught:
        serve_schema()(port=port)
    assert caught.value.field == "port" and "decimal digits" in caught.value.expected


# ---- 2. a YAML plan file with a line break only YAML 1.1 sees (NEL, LS, PS) ------------------------------------------


@pytest.mark.parametrize("brk", ["\x85", "\u2028", "\u2029"])
@pytest.mark.parametrize("text", [
    "model: llama-3.1-8b\ngpu: h100\n# the usual 8 GPUs{brk}gpus: 4096\n",  # a key hidden in a comment
    "model: llama-3.1-8b\ngpu: h100\ngpus: 8{brk}tp: 2\n",                    # a second key on the 'same' line
    "model: llama-3.1-8b\ngpu: h100{brk}\n",                                 # at a line's end
])
def test_yaml_plan_file_with_a_unicode_line_break_is_refused(run_cli, tmp_path, brk, text):
    """PyYAML (YAML 1.1) ends a line at U+0085, U+2028 and U+2029, which editors, `cat` and a diff show inside one
    line (YAML 1.2 and TOML do not break there): `# the usual 8 GPUs<U+2028>gpus: 4096` planned 4,096 GPUs from what
    reads as a comment, `gpus: 8<U+2028>tp: 2` set tp 2. Refused naming the file, the line and the character."""
    plan = tmp_path / "p.yaml"
    plan.write_text(text.format(brk=brk), encoding="utf-8")
    line = text.format(brk=brk).split("\n").index(next(s for s in text.format(brk=brk).split("\n") if brk in s)) + 1
    err = field_refusal(run_cli("memory", str(plan)), "plan file", f"(line {line}): U+{ord(brk):04X}")
    assert "ends a line for YAML" in err


def test_yaml_plan_file_with_a_unicode_line_break_is_refused_by_campaign_and_report(run_cli, tmp_path):
    """The one plan-file reader: campaign and report read through it too (nothing written)."""
    plan = tmp_path / "c.yaml"
    plan.write_text("model: llama-3.1-8b\ngpu: h100\nmfu: 0.4\nstages:\n  - {tokens: 1B, gpus: 8}\n"
                    "# 8 GPUs\u2028days: 1\n", encoding="utf-8")
    field_refusal(run_cli("campaign", str(plan)), "plan file", "U+2028")
    out = tmp_path / "r.html"
    field_refusal(run_cli("report", str(plan), "--out", str(out), "--no-plots"), "plan file", "U+2028")
    assert not out.exists()


def test_yaml_line_break_escapes_and_toml_are_not_refused(run_cli, tmp_path):
    """The escape written out (six characters) is no line break; TOML ends no line at U+2028 (a comment keeps it)."""
    plan = tmp_path / "p.yaml"
    plan.write_text('model: llama-3.1-8b\ngpu: h100\ngpus: 8  # see "\\u2028"\n', encoding="utf-8")
    assert run_cli("memory", str(plan))[0] == 0
    toml = tmp_path / "p.toml"
    toml.write_text('model = "llama-3.1-8b"\ngpu = "h100"\n# 8 GPUs\u2028gpus = 4096\ngpus = 8\n', encoding="utf-8")
    assert run_cli("memory", str(toml))[0] == 0


# ---- 3. a switch given a value after '=' -------------------------------------------------------------------------


@pytest.mark.parametrize("args, field, value, forms", [
    (("train", "--sequence-parallel=false"), "sequence_parallel", "false",
     "--sequence-parallel or --no-sequence-parallel"),
    (("train", "--no-sequence-parallel=1"), "sequence_parallel", "1", "--sequence-parallel or --no-sequence-parallel"),
    (("infer", "--model", "llama-3.1-8b", "--p2p=no"), "p2p", "no", "--p2p or --no-p2p"),
    (("memory", "--offload-optimizer=true"), "offload_optimizer", "true", "--offload-optimizer or --no-offload-optimizer"),
    (("train", "--json=1"), "json", "1", "--json alone"),
    (("report", "examples/article-7b.yaml", "--plots=false"), "plots", "false", "--plots or --no-plots"),
])
def test_a_switch_given_a_value_names_the_field_and_its_two_forms(run_cli, args, field, value, forms):
    """`--sequence-parallel=false` was told click's "Option '--sequence-parallel' does not take a value.", naming
    neither the field nor how to say it, where a plan file's `sequence_parallel: false`, the web API and the Python
    API take the same word: the line names the field, quotes the value and gives the switch's forms."""
    err = field_refusal(run_cli(*args), field, forms)
    assert f"got '{value}'" in err


def test_a_switch_is_still_read_without_a_value(run_cli):
    plan = run_cli("memory", "--model", "llama-3.1-8b", "--gpus", "8", "--tp", "8", "--no-sequence-parallel", "--json")
    assert plan[0] == 0, plan[2]


# ---- 4. profile --sweep --out a .json file name ---------------------------------------------------------------------


@pytest.mark.parametrize("out", ["sweep.json", "sweep.JSON", "runs/sweep.json/"])
def test_profile_sweep_out_a_json_file_name_is_refused_before_any_folder(run_cli, monkeypatch, tmp_path, out):
    """With --sweep, --out is a folder: `--out sweep.json` made a folder named sweep.json and filled it with the
    sweep's files (nothing said). Refused before the folder is made and before any run."""
    import gpuplan.profile.sweep as sweep

    ran = []
    monkeypatch.setattr(sweep, "run_sweep", lambda *a, **k: ran.append(a) or [])
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    field_refusal(run_cli("profile", "pythia-70m", "--layers", "1", "--sweep", "--out", out), "out",
                  "with --sweep, --out is the folder")
    assert ran == [] and not (tmp_path / out).exists()


# ---- 5. report --markdown named with bytes that are not UTF-8 ---------------------------------------------------------


def test_report_markdown_name_not_utf8_with_plots_is_refused_before_anything_is_written(run_cli, tmp_path):
    """A Markdown name holding a byte that is not UTF-8 (`m$'\\xff'.md`, which Python reads as the surrogate
    U+DCFF) names its plots folder, which the Markdown links by name: the plots were written to m\\xff-plots, then
    the Markdown's text could not be encoded (internal error, exit 70), leaving the plots and no report. Refused
    first; with --no-plots (nothing linked) it is written."""
    import os

    pytest.importorskip("matplotlib")
    markdown = os.fsdecode(str(tmp_path).encode() + b"/m\xff.md")
    html = tmp_path / "r.html"
    err = field_refusal(run_cli("report", "examples/article-7b.yaml", "--out", str(html), "--markdown", markdown),
                        "markdown", "--no-plots")
    assert "UTF-8" in err and sorted(os.listdir(tmp_path)) == []


# ---- 6. a file name that is not UTF-8 printed on a strict UTF-8 stdout ----------------------------------------------


def test_a_file_name_not_utf8_is_printed_not_an_internal_error(run_cli, tmp_path):
    """Python reads a name's byte that is not UTF-8 as a surrogate (0xff: U+DCFF); a UTF-8 locale other than C gives
    stdout errors='strict' (pytest's capture too), so printing such a name ended the command with 'internal error:
    UnicodeEncodeError', exit 70: `calibrate m<0xff>.json` (its sources), `report --no-plots --markdown m<0xff>.md`
    after both files were written. The name is printed with the byte escaped, as the refusals on stderr print it."""
    import os
    import shutil

    measured = os.fsdecode(str(tmp_path).encode() + b"/meas\xff.json")
    shutil.copy("tests/fixtures/h200/profile_llama-3.2-1b_bf16_mb2_s2048.json", measured)
    for fmt in ("table", "markdown", "csv"):
        code, out, err = run_cli("calibrate", measured, "--format", fmt, "--full")
        assert code == 0 and "meas\\udcff.json" in out, (fmt, err)
    markdown = os.fsdecode(str(tmp_path).encode() + b"/m\xff.md")
    code, out, err = run_cli("report", "examples/article-7b.yaml", "--out", str(tmp_path / "r.html"),
                             "--markdown", markdown, "--no-plots")
    assert code == 0 and os.path.exists(markdown) and "m\\udcff.md" in out, err


# ---- 7. the Python API: a mapping with a key that is not text -------------------------------------------------------


@pytest.mark.parametrize("key", [1, ("model",), None, b"model", 2.5])
@pytest.mark.parametrize("estimate", ["estimate_training", "estimate_budget", "estimate_memory", "estimate_inference",
                                      "plan_report"])
def test_python_api_mapping_with_a_key_not_text_is_refused_naming_it(estimate, key):
    """`estimate_memory({1: 2, 'model': ...})` ended in pydantic's bare "TypeError: keywords must be strings"; a plan
    file refuses such a key ('keys must be names (text)') and a JSON body cannot hold one."""
    import gpuplan
    from gpuplan import InputError

    with pytest.raises(InputError) as caught:
        getattr(gpuplan, estimate)({"model": "llama-3.1-8b", key: 2})
    assert caught.value.field == repr(key) and "field names are text" in caught.value.expected


# ---- 8. --json beside an explicit --format table --------------------------------------------------------------------


@pytest.mark.parametrize("args", [("train", "--tokens", "1B"), ("catalog", "gpus"), ("campaign", "examples/olmo3-7b-campaign.yaml")])
@pytest.mark.parametrize("order", ["json first", "format first"])
def test_json_beside_an_explicit_format_table_is_refused(run_cli, args, order):
    """`--json --format table` printed JSON, nothing said, where `--json --format csv` / `markdown` are refused as
    two answers asked for: table is the default, so the check could not tell it was typed. Typed, it is refused as
    the others are; `--json` alone and `--json --format json` still print JSON."""
    flags = ("--json", "--format", "table") if order == "json first" else ("-f", "table", "--json")
    field_refusal(run_cli(*args, *flags), "format", "--json asks for JSON; give --json or --format table, not both")
    for same in (("--json",), ("--json", "--format", "json")):
        code, out, err = run_cli(*args, *same)
        assert code == 0 and out.lstrip().startswith("{"), err


# ---- 9. a YAML plan file written as JSON: a character past U+FFFF as a surrogate pair --------------------------------


def test_yaml_surrogate_pair_escape_reads_as_json_reads_it(run_cli, client, tmp_path):
    """json.dumps writes '🚀' as "\\ud83d\\ude80"; JSON is YAML, but PyYAML kept two lone surrogates, so a campaign
    file written as JSON refused the stage name ('must be text of 1 to 64 printable characters') that POST
    /api/campaign took. Read as one character at both doors; a lone surrogate is still refused at both."""
    import json

    doc = {"model": "llama-3.1-8b", "gpu": "h100", "mfu": 0.4, "stages": [{"name": "🚀", "tokens": "1B", "gpus": 8}]}
    plan = tmp_path / "c.yaml"
    plan.write_text(json.dumps(doc), encoding="utf-8")
    assert "\\ud83d\\ude80" in plan.read_text(encoding="utf-8")
    code, out, err = run_cli("campaign", str(plan), "--json")
    assert code == 0 and json.loads(out)["stages"][0]["name"] == "🚀", err
    assert client.post("/api/campaign", json=doc).json()["stages"][0]["name"] == "🚀"
    plan.write_text(json.dumps(doc).replace("\\ud83d\\ude80", "\\ud83d"), encoding="utf-8")
    field_refusal(run_cli("campaign", str(plan)), f"{plan}: stages[0].name", "printable characters")


# ---- 10. an option's value forgotten: the next option taken as its value --------------------------------------------


@pytest.mark.parametrize("args, field, taken", [
    (("serve", "--host", "--port", "8000"), "host", "--port"),
    (("report", "examples/article-7b.yaml", "--markdown", "--out", "x.html"), "markdown", "--out"),
    (("catalog", "models", "--filter", "--json"), "filter", "--json"),
    (("train", "--model", "--json"), "model", "--json"),
    (("train", "--gpus", "--no-compile"), "gpus", "--no-compile"),
    (("infer", "--model", "llama-3.1-8b", "--rps", "-h"), "rps", "-h"),
])
def test_an_option_taken_as_the_value_of_the_one_before_is_named(run_cli, args, field, taken):
    """An option written with its value forgotten takes the next option as its value: `serve --host --port 8000` was
    told "arguments: got '8000'; not expected", `catalog models --filter --json` listed 0 models (exit 0), `report
    ... --markdown --out x.html` "arguments: got 'x.html'". The line names the option whose value is missing."""
    err = field_refusal(run_cli(*args), field, f"is an option of `gpuplan")
    assert f"got '{taken}'" in err and "give " in err


def test_a_value_that_only_looks_like_an_option_is_still_read(run_cli):
    """A negative number or a word with dashes is no option name: refused by the field as before."""
    field_refusal(run_cli("train", "--gpus", "-8"), "gpus", "must be a positive")


# ---- 11. report's inference: mapping: a null, a serving-only field given twice ----------------------------------------


@pytest.mark.parametrize("text, field, fragment", [
    ("inference: {tp: null}\n", "inference.tp", "give a value, or leave the key out"),
    ("inference:\n  batch:\n", "inference.batch", "give a value, or leave the key out"),
    ("batch: 4\ninference: {batch: 8}\n", "inference.batch", "given twice"),
    ("quantization: fp8\ninference: {quantization: fp8}\n", "inference.quantization", "given twice"),
])
def test_report_inference_mapping_null_or_twice_is_refused(run_cli, tmp_path, text, field, fragment):
    """`inference: {tp: null}` was the default in disguise (a top-level `tp: null` is refused); `batch: 4` beside
    `inference: {batch: 8}` served 8, nothing said: a serving-only field belongs in one place. Nothing is written."""
    plan = tmp_path / "p.yaml"
    plan.write_text("model: llama-3.1-8b\ngpu: h100\ntokens: 1B\ngpus: 8\ncontext: 4096\n" + text, encoding="utf-8")
    out = tmp_path / "r.html"
    field_refusal(run_cli("report", str(plan), "--no-plots", "--out", str(out), "--sections", "inference"),
                  f"{plan}: {field}", fragment)
    assert not out.exists()


def test_report_inference_mapping_still_sets_the_serving_layout(run_cli, tmp_path):
    plan = tmp_path / "p.yaml"
    plan.write_text("model: llama-3.1-8b\ngpu: h100\ntokens: 1B\ngpus: 8\nbatch: 4\ninference: {tp: 2}\n",
                    encoding="utf-8")
    code, _, err = run_cli("report", str(plan), "--no-plots", "--out", str(tmp_path / "r.html"),
                           "--sections", "inference")
    assert code == 0, err


# ---- 12. a campaign's name: null ---------------------------------------------------------------------------------


@pytest.mark.parametrize("doc, field", [
    ({"name": None, "stages": [{"tokens": "1B", "gpus": 8}]}, "name"),
    ({"stages": [{"name": None, "tokens": "1B", "gpus": 8}]}, "stages[0].name"),
])
def test_campaign_name_null_is_refused_at_every_door(run_cli, client, tmp_path, doc, field):
    """A stage's `name: null` was the default name in disguise at all three doors, and the campaign's own at the
    Python API, where every other null of the document is refused ('give a value, or leave the key out')."""
    import json

    import gpuplan
    from gpuplan import InputError

    doc = {"model": "llama-3.1-8b", "gpu": "h100", "mfu": 0.4} | doc
    plan = tmp_path / "c.yaml"
    plan.write_text(json.dumps(doc), encoding="utf-8")
    field_refusal(run_cli("campaign", str(plan)), f"{plan}: {field}", "give a value, or leave the key out")
    web = client.post("/api/campaign", json=doc)
    assert web.status_code == 422 and web.json()["message"].startswith(f"{field}: got 'null'; give a value"), web.text
    with pytest.raises(InputError) as caught:
        gpuplan.estimate_campaign(doc)
    assert caught.value.field == field and "give a value" in caught.value.expected


# ---- 13. ?lang= read as --lang reads it -----------------------------------------------------------------------------


@pytest.mark.parametrize("lang", ["ZH", " zh ", "Zh"])
def test_web_lang_is_read_as_the_cli_lang_is(run_cli, client, tmp_path, lang):
    """`gpuplan report --lang ZH` is Chinese (a choice is read case-insensitively, schema.types.choice), where
    `?lang=ZH` was refused 'must be one of en, zh': one word, read one way at both doors."""
    out = tmp_path / "r.html"
    assert run_cli("report", "examples/article-7b.yaml", "--no-plots", "--out", str(out), "--lang", lang)[0] == 0
    body = {"model": "llama-3.1-8b", "gpu": "h100", "gpus": 8}
    zh = client.post("/api/memory?lang=zh", json=body).json()
    assert client.post(f"/api/memory?lang={lang}", json=body).json()["title"] == zh["title"] != \
        client.post("/api/memory", json=body).json()["title"]
    assert client.get(f"/api/catalog/gpus?lang={lang}").json()["title"] == \
        client.get("/api/catalog/gpus?lang=zh").json()["title"]


def test_web_lang_not_a_language_is_refused_as_the_cli_refuses_it(run_cli, client, tmp_path):
    from helpers import web_refusal

    cli = field_refusal(run_cli("report", "examples/article-7b.yaml", "--out", str(tmp_path / "r.html"),
                                "--lang", "fr"), "lang")
    web = web_refusal(client.post("/api/memory?lang=fr", json={"model": "llama-3.1-8b"}), "lang")
    assert cli == f"error: {web}\n"
