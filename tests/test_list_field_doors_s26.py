"""Session 26, helper H2: every list-valued field is read by one reader (schema.list_field), by one rule set, with the
same line at every door (flag, plan file, web API, Python API):

* an empty entry ('8,,16', a trailing or a leading comma, a list's '') is refused naming its position;
* an entry given twice is refused naming the value and both positions (plan --gpus 8,8 and report --sections
  budget,budget kept it once silently, memory --compare a100,a100 too; --recompute-modules refused it in other
  words); a ramp's phases are a sequence, where a phase given twice runs twice;
* an empty value ('', [], ' ') is refused, saying what the field takes;
* whitespace around entries is stripped;
* each entry keeps its field's own check (a JSON list's 8 among GPU names is no name).
"""

import shutil
from pathlib import Path

import pytest
from helpers import field_refusal, four_door_refusal, one_line_refusal, web_refusal

import gpuplan
from gpuplan import InputError
from gpuplan.jobs.measure.schema import MeasureInputs
from gpuplan.report.schema import ReportInputs

ROOT = Path(__file__).resolve().parents[1]
GPU_FORMS = "whole GPU counts, e.g. 1024 or 256,512 or 512-4096"
COMPARE_FORMS = "GPU names separated by commas, e.g. h100,b200"
MODULE_FORMS = ("names separated by commas, from: core_attn, moe_act, layernorm, mla_up_proj, mlp, moe, "
                "shared_experts")
RAMP_FORMS = ("TOKENS:BATCH phases separated by commas, the batch in sequences, in tokens with a 'tok' suffix, or "
              "linear FROM-TO, e.g. 469B:3072-15360 or 252M:4Mtok,2.618T:8Mtok")
SECTION_FORMS = "comma-separated names from budget, memory, plan, inference"
DEPTH_FORMS = "two increasing depths separated by a comma, e.g. 2,4"

# field, CLI command, API route, the rest of the ask, two valid entries, what the field takes
LISTS = [
    ("gpus", "plan", "plan", {"model": "llama-3-8b"}, "8", "16", GPU_FORMS),
    ("compare", "memory", "memory", {"model": "llama-3.1-8b"}, "a100", "h100", COMPARE_FORMS),
    ("recompute_modules", "memory", "memory", {"model": "llama-3.1-8b", "framework": "megatron"}, "core_attn", "mlp",
     MODULE_FORMS),
    ("batch_ramp", "plan", "plan", {"model": "llama-3-8b"}, "1B:512", "2B:768", RAMP_FORMS),
]
SETS = [row for row in LISTS if row[0] != "batch_ramp"]  # the lists whose entries are a set (no order)
INPUTS = {"plan": gpuplan.PlanInputs, "memory": gpuplan.MemoryInputs}


def _ids(row) -> str:
    return row[0]


# ---- an empty entry: refused naming its position, at every door ----------------------------------------------------

@pytest.mark.parametrize("row", LISTS, ids=_ids)
@pytest.mark.parametrize("form, position", [("{a},,{b}", "2 of 3"), ("{a},", "2 of 2"), ("{a}, ,{b}", "2 of 3")])
def test_an_empty_entry_is_refused_naming_its_position_at_every_door(run_cli, client, tmp_path, row, form, position):
    """'8,,16' said 'a list of GPU counts has no empty entries', --compare the same of names, --recompute-modules
    'distinct names ...', --batch-ramp its forms alone: none said which entry."""
    field, job, route, ask, a, b, forms = row
    text = form.format(a=a, b=b)
    line = four_door_refusal(run_cli, client, tmp_path, job, route, ask | {field: text}, field, "is empty")
    assert line == f"{field}: got {text!r}; entry {position} is empty; give {forms}"


@pytest.mark.parametrize("row", LISTS, ids=_ids)
def test_a_leading_comma_is_an_empty_first_entry(run_cli, client, row):
    """',8' (a YAML plan file cannot hold it unquoted): the flag, the web API and the Python API."""
    field, job, route, ask, a, _, forms = row
    want = f"{field}: got ',{a}'; entry 1 of 2 is empty; give {forms}"
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in ask.items() if k != "model"]
    assert field_refusal(run_cli(job, "--model", ask["model"], *flags, f"--{field.replace('_', '-')}=,{a}"),
                         field) == f"error: {want}\n"
    assert web_refusal(client.post(f"/api/{route}", json=ask | {field: f",{a}"}), field) == want
    with pytest.raises(InputError) as api:
        INPUTS[route](**ask, **{field: f",{a}"})
    assert str(api.value) == want


@pytest.mark.parametrize("row", LISTS, ids=_ids)
def test_a_list_with_an_empty_entry_is_refused_in_the_same_words(run_cli, client, tmp_path, row):
    """A JSON array, a YAML list and a Python list with '' (or blank) say what the text with ',,' says."""
    field, job, route, ask, a, _, forms = row
    want = f"entry 2 of 2 is empty; give {forms}"
    web = web_refusal(client.post(f"/api/{route}", json=ask | {field: [a, ""]}), field, want)
    assert web == f"{field}: got [{a!r}, '']; {want}"
    plan = tmp_path / "list.yaml"
    plan.write_text("".join(f"{k}: {v}\n" for k, v in ask.items()) + f"{field}: ['{a}', '  ']\n", encoding="utf-8")
    assert field_refusal(run_cli(job, str(plan)), f"{plan}: {field}", want) == \
        f"error: {plan}: {field}: got [{a!r}, '  ']; {want}\n"
    with pytest.raises(InputError) as api:
        INPUTS[route](**ask, **{field: (a, "")})
    assert str(api.value) == f"{field}: got ({a!r}, ''); {want}"


# ---- an entry given twice: refused naming it, at every door --------------------------------------------------------

@pytest.mark.parametrize("row", SETS, ids=_ids)
@pytest.mark.parametrize("upper", [False, True], ids=["same", "other case"])
def test_an_entry_given_twice_is_refused_naming_it_at_every_door(run_cli, client, tmp_path, row, upper):
    """plan --gpus 8,8 and memory --compare a100,a100 were kept once, silently; --recompute-modules core_attn,core_attn
    was refused as 'distinct names separated by commas, from: ...', not naming the name."""
    field, job, route, ask, a, b, forms = row
    again = a.upper() if upper else a
    text = f"{a},{b},{again}"
    shown = int(a) if a.isdigit() else repr(again.lower() if field == "recompute_modules" else again)
    line = four_door_refusal(run_cli, client, tmp_path, job, route, ask | {field: text}, field, "given twice")
    assert line == f"{field}: got {text!r}; {shown} is given twice (entries 1 and 3); give each once: {forms}"


@pytest.mark.parametrize("row", SETS, ids=_ids)
def test_a_list_given_an_entry_twice_is_refused_in_the_same_words(run_cli, client, tmp_path, row):
    """The JSON array, the YAML list and the Python tuple: the entry is the same once read ([8, '8'] is 8 twice)."""
    field, job, route, ask, a, _, forms = row
    first = int(a) if a.isdigit() else a
    shown = repr(first)
    want = f"{shown} is given twice (entries 1 and 2); give each once: {forms}"
    web = web_refusal(client.post(f"/api/{route}", json=ask | {field: [first, a]}), field, want)
    assert web == f"{field}: got [{first!r}, {a!r}]; {want}"
    plan = tmp_path / "twice.yaml"
    plan.write_text("".join(f"{k}: {v}\n" for k, v in ask.items()) + f"{field}:\n  - {a}\n  - ' {a} '\n",
                    encoding="utf-8")
    field_refusal(run_cli(job, str(plan)), f"{plan}: {field}", want)
    with pytest.raises(InputError, match=f"^{field}: got .*; {want}$".replace("(", r"\(").replace(")", r"\)")):
        INPUTS[route](**ask, **{field: (a, f" {a}")})


def test_a_ramp_phase_given_twice_runs_twice():
    """A ramp is a sequence (phases in training order), not a set: its phase given twice is two phases, not refused
    and not merged (schema.list_field's ``distinct`` False)."""
    inputs = gpuplan.PlanInputs(model="llama-3-8b", batch_ramp=" 1B:512 , 1B:512 ")
    assert [(p.tokens, p.start, p.end) for p in inputs.batch_ramp] == [(1e9, 512, 512), (1e9, 512, 512)]


# ---- an empty value, whitespace, an entry of the wrong type -------------------------------------------------------

@pytest.mark.parametrize("row", LISTS, ids=_ids)
@pytest.mark.parametrize("empty", ["", "  ", []], ids=["text", "blank", "list"])
def test_an_empty_value_says_what_the_field_takes(client, row, empty):
    """gpus '' said 'must not be empty' and gpus [] '1 to 256 GPU counts'; compare '' '1 to 64 GPU names ...': now
    one line for the three, with the field's forms."""
    field, _, route, ask, *_, forms = row
    want = f"{field}: got {empty!r}; must not be empty; give {forms}"
    assert web_refusal(client.post(f"/api/{route}", json=ask | {field: empty}), field) == want
    with pytest.raises(InputError) as api:
        INPUTS[route](**ask, **{field: empty})
    assert str(api.value) == want


@pytest.mark.parametrize("row", LISTS, ids=_ids)
def test_spaces_around_entries_are_stripped(row):
    """' a , b ' is a,b, as text and as a list's entries."""
    field, _, route, ask, a, b, _ = row
    plain = getattr(INPUTS[route](**ask, **{field: f"{a},{b}"}), field)
    assert getattr(INPUTS[route](**ask, **{field: f"  {a} ,   {b}  "}), field) == plain
    assert getattr(INPUTS[route](**ask, **{field: [f" {a}", f"{b} "]}), field) == plain


@pytest.mark.parametrize("value", [["a100", 8], ["a100", True], 8, ["a100", ["h100"]]])
def test_compare_takes_names_not_other_json_types(client, value):
    """A JSON number, true or a nested list in --compare's list was read as the text of it ('8', 'True',
    "['h100']"), then looked up as a GPU name; the entry's own check (a name: text) now refuses it."""
    want = f"compare: got {value!r}; expected a name (text)"
    assert web_refusal(client.post("/api/memory", json={"model": "llama-3.1-8b", "compare": value}), "compare") == want
    with pytest.raises(InputError) as api:
        gpuplan.MemoryInputs(model="llama-3.1-8b", compare=value)
    assert str(api.value) == want


@pytest.mark.parametrize("field, value", [("gpus", [8, True]), ("recompute_modules", ["core_attn", 1])])
def test_an_entry_of_another_type_keeps_its_fields_refusal(client, field, value):
    """A count's list refuses true, a module list a number: the field's own words, the whole value quoted."""
    forms = {"gpus": GPU_FORMS, "recompute_modules": MODULE_FORMS}[field]
    ask = {"model": "llama-3.1-8b", field: value}
    assert web_refusal(client.post("/api/plan", json=ask), field) == f"{field}: got {value!r}; {forms}"


# ---- report --sections and measure --depths: the flag and the Python API ------------------------------------------

@pytest.mark.parametrize("text, words", [
    ("budget,,memory", f"entry 2 of 3 is empty; give {SECTION_FORMS}"),
    ("budget,", f"entry 2 of 2 is empty; give {SECTION_FORMS}"),
    ("budget,budget", f"'budget' is given twice (entries 1 and 2); give each once: {SECTION_FORMS}"),
    ("memory,Budget,BUDGET", f"'budget' is given twice (entries 2 and 3); give each once: {SECTION_FORMS}"),
    ("", f"must not be empty; give {SECTION_FORMS}")])
def test_report_sections_follow_the_list_rules(run_cli, tmp_path, text, words):
    """report --sections budget,budget wrote one budget section (the repeat dropped silently); 'budget,' was told the
    names alone. Nothing is written when refused."""
    plan = tmp_path / "p.yaml"
    shutil.copy(ROOT / "examples" / "article-7b.yaml", plan)
    code, _, err = run_cli("report", str(plan), "--sections", text, "--no-plots", "--out", str(tmp_path / "r.html"))
    one_line_refusal(code, err, words)
    assert err == f"error: sections: got {text!r}; {words}\n" and not (tmp_path / "r.html").exists()
    with pytest.raises(InputError) as api:
        ReportInputs(plan=str(plan), sections=text)
    assert f"error: {api.value}\n" == err
    assert ReportInputs(plan=str(plan), sections=" Memory , budget ").sections == ("memory", "budget")


@pytest.mark.parametrize("text, words", [
    ("2,", f"entry 2 of 2 is empty; give {DEPTH_FORMS}"),
    (",4", f"entry 1 of 2 is empty; give {DEPTH_FORMS}"),
    ("2,2", f"2 is given twice (entries 1 and 2); give each once: {DEPTH_FORMS}"),
    ("2,4,6", f"3 entries; give {DEPTH_FORMS}")])
def test_measure_depths_follow_the_list_rules(run_cli, text, words):
    """measure --depths '2,' / '2,2' were told 'two increasing depths ...' only."""
    line = field_refusal(run_cli("measure", "pythia-70m", "--seq-len", "32", "--depths", text), "depths", words)
    assert line == f"error: depths: got {text!r}; {words}\n"
    with pytest.raises(InputError) as api:
        MeasureInputs(model="pythia-70m", depths=text)
    assert f"error: {api.value}\n" == line
    assert MeasureInputs(model="pythia-70m", depths=" 2 , 4 ").depths == (2, 4)


def test_compare_naming_one_gpu_in_two_spellings_is_refused_at_every_door(run_cli, client, tmp_path):
    """'h100,h100-sxm' is the H100 SXM twice: the verdict table showed it once (jobs.memory.estimate's one row a part),
    silently. Now refused naming the second spelling; beside --gpu's own part a compared name stays one row."""
    line = four_door_refusal(run_cli, client, tmp_path, "memory", "memory",
                             {"model": "llama-3.1-8b", "gpu": "a100", "compare": "h100,h100-sxm"}, "compare", "")
    assert line == "compare: got 'h100-sxm'; names the same GPU as 'h100' (h100-sxm); give each GPU once"
    table = gpuplan.estimate_memory(gpuplan.MemoryInputs(model="llama-3.1-8b", gpu="h100", compare="h100-sxm,a100"))
    assert [row["gpu"] for row in table.to_dict()["tables"]["verdict per GPU type"]] == ["h100-sxm", "a100-sxm4-80gb"]


@pytest.mark.parametrize("line, words", [
    ('gpus = [8, 16, 8]', f"gpus: got [8, 16, 8]; 8 is given twice (entries 1 and 3); give each once: {GPU_FORMS}"),
    ('gpus = "8,16,"', f"gpus: got '8,16,'; entry 3 of 3 is empty; give {GPU_FORMS}"),
    ('gpus = []', f"gpus: got []; must not be empty; give {GPU_FORMS}")])
def test_a_toml_plan_file_reads_its_list_by_the_same_rules(run_cli, tmp_path, line, words):
    """A TOML array or string says what the flag says."""
    plan = tmp_path / "ask.toml"
    plan.write_text(f'model = "llama-3-8b"\n{line}\n', encoding="utf-8")
    assert field_refusal(run_cli("plan", str(plan)), f"{plan}: gpus") == f"error: {plan}: {words}\n"
