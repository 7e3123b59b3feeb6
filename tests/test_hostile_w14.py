"""Hostile inputs, wave 14 (2026-12-06): the surfaces wave 13 changed, swept by scripts outside the suite (in-process
`gpuplan.cli.main` under a SIGALRM time box, the web app through its TestClient, the Python API), and the defects the
sweep found, each fixed at its cause. A refusal is one line naming the field and what is valid (exit status 2, 4xx).

The sweep, about 2,700 cases: 839 numeric flags of infer / train x 47 forms (exponent, sign, K/M/G/k/Ki suffixes,
whitespace, fullwidth and Arabic-Indic digits, thousands separators, overflow, durations with units); 440 token
length / group / block size values x 3 doors (flag, YAML plan file, web body), answers compared; 306 refusals x 3 doors,
messages compared; 131 plan files with odd names (spaces, tab, newline, BEL, ESC, RTL override, zero-width, emoji,
200 characters, leading '-', quotes, '%s', '{x}') and UTF-16 / UTF-32 / Latin-1 / BOM encodings; 468 raw web JSON
bodies (numbers huge, tiny, subnormal, underflowing, as strings, arrays, objects, null, true); 217 Python API values
beside their flags; 66 extreme asks of plan / train / budget / memory / infer x (table, --json, --full), each timed
(the slowest 0.26 s); 162 --seq-len forms x 3 doors of memory / budget / train. No traceback, hang, refusal over
one line or answer that differed between doors. Found:
(a) a token length's '8.K' read as 8,192 while '8.' and every count's '8.K' are refused; (b) `plan --explain`'s link
column said 'NVLink' for an MI355X, a TPU, a PCIe card and a Gaudi; (c) `--tpot 1e-400ms` (0 once read) was told
'must be a positive, finite number' while '0' and '1e-20h' were told the floor, and --tpot's floor offered 'e.g. 500ms';
(d) `infer -lead.yaml` was told "No such option '-l'.", naming neither the file nor how to give it; (e) `report`
refused a plan file named with a tab that train reads; (f) a .json that is no config was refused as 'config.json';
(g) `--gpus 8-` and '8,,16' were told only 'must not be empty'; (h) the explain table's algorithm column said NCCL on
AMD and TPU parts.
"""

import pytest
from helpers import field_refusal, web_refusal

from gpuplan.jobs.plan.explain import scale_up_name

pytestmark = pytest.mark.usefixtures("time_box")  # conftest: a hang fails the case, not the suite

ASK = ("infer", "--model", "llama-3-8b", "--gpu", "h100")


# ---- (a) a token length reads the number before its K as every count does ----------------------------------------

@pytest.mark.parametrize("text", ["8.K", "8.e0K", "1.M"])
def test_a_token_length_with_a_bare_trailing_point_is_refused_as_the_plain_number_is(run_cli, client, text):
    """'8.K' and '8.e0K' were 8,192 tokens (the token-length pattern took '8.') while '--context 8.' and
    '--batch 8.K' are refused by their form: now every door refuses them in the token length's words."""
    words = "expected a number of tokens, e.g. 4096, 8K or 128K"
    flag = field_refusal(run_cli(*ASK, f"--context={text}"), "context", words)
    assert field_refusal(run_cli(*ASK, "--context=8."), "context", words).replace("'8.'", f"'{text}'") == flag
    web = web_refusal(client.post("/api/inference", json={"model": "llama-3-8b", "gpu": "h100", "context": text}),
                      "context", words)
    assert flag.strip() == f"error: {web}"


@pytest.mark.parametrize("text, tokens", [("8K", 8192), ("+8K", 8192), ("8e0K", 8192), (".5K", 512), ("8 k", 8192),
                                          ("1e1M", 10 * 2**20)])
def test_the_token_length_forms_units_reads_keep_k_as_1024(run_json, text, tokens):
    assert run_json(*ASK, f"--context={text}", "--engine", "sglang")["inputs"]["context"] == tokens  # vLLM: <= 8K


# ---- (b) the communication table names the GPU's own scale-up link ------------------------------------------------

@pytest.mark.parametrize("gpu, link", [("mi355x", "Infinity Fabric (8 GPUs)"), ("tpu-v5p", "ICI (16 chips)"),
                                       ("h100", "NVLink (")])
def test_plan_explain_names_the_scale_up_link_of_the_gpu_asked(run_cli, gpu, link):
    """`plan --explain` printed 'NVLink (8 GPUs)' for an MI355X (catalog scale_up.kind 'Infinity Fabric 4th gen
    (xGMI)'), 'NVLink (16 GPUs)' for a TPU v5p ('ICI, 3D torus')."""
    code, out, err = run_cli("plan", "--model", "llama-3-8b", "--gpu", gpu, "--gpus", "16" if gpu == "tpu-v5p" else "8",
                             "--explain")
    assert code == 0, err
    table = out[out.index("Communication per step"):]
    assert link in table and (gpu == "h100" or "NVLink" not in table), table


def test_a_pcie_card_and_a_vendor_without_a_name_are_not_called_nvlink():
    from gpuplan.catalog import load_accelerator as get_gpu

    assert scale_up_name(get_gpu("l40s")) == "PCIe" and scale_up_name(get_gpu("gaudi3")) == "RoCE"
    assert scale_up_name(get_gpu("ascend-910b")) == "HCCS / UB"


# ---- (c) a latency target that reads as 0 is told its floor ---------------------------------------------------------

@pytest.mark.parametrize("field, example", [("tpot", "50ms"), ("ttft_p99", "500ms")])
@pytest.mark.parametrize("text", ["0", "0ms", "1e-20h", "1e-400ms", "0.0000001e-400s"])
def test_a_latency_target_that_reads_as_zero_is_told_its_smallest_value(run_cli, client, field, example, text):
    """'1e-400ms' (0 once read) was told 'must be a positive, finite number' while '0' and '1e-20h' were told the
    target's floor; --tpot's floor offered ttft's 'e.g. 500ms', not its own example. A negative latency stays 'not
    positive' (test_hostile_w13: '-5ms' and '-1e400ms')."""
    words = f"must be a positive duration, at least 0.001ms (e.g. {example}); omit it for no limit"
    flag = field_refusal(run_cli(*ASK, "--rps", "1", f"--{field.replace('_', '-')}={text}"), field, words)
    web = web_refusal(client.post("/api/inference", json={"model": "llama-3-8b", "gpu": "h100", "rps": 1,
                                                          field: text}), field, words)
    assert flag.strip() == f"error: {web}"


# ---- (d) a file named with a leading '-' ---------------------------------------------------------------------------

@pytest.mark.parametrize("command, argument", [("infer", "target"), ("train", "target"), ("report", "plan")])
def test_a_plan_file_whose_name_starts_with_a_dash_is_told_how_to_name_it(run_cli, command, argument):
    """`gpuplan infer -lead.yaml` was told "No such option '-l'." (click splits the name into short options); the
    refusal names the file and the two ways to give it. An unknown option beside such a value is named as any unknown
    option is (hostile wave 27b: it was click's "No such option '--nope'.")."""
    err = field_refusal(run_cli(command, "-lead.yaml"), argument, "reads as options")
    assert "write ./-lead.yaml, or put -- before it" in err
    code, _, err = run_cli("train", "--model=-x.json", "--nope")
    assert code == 2 and err == "error: --nope: not an option of gpuplan train (gpuplan train --help " \
                                     "lists them)\n", err


# ---- (e) report reads a plan file named with a tab, as train does --------------------------------------------------

def test_report_reads_a_plan_named_with_a_tab_and_names_it_escaped_once(run_cli, tmp_path, monkeypatch):
    """`gpuplan report 'a<TAB>b.yaml'` was refused 'must not contain control characters' (T.Name) while train read
    it; report writes only --out / --markdown, so it reads the file, shows its name escaped in the document and
    names it escaped in a refusal, the words train uses (adapters.plan_file.refusals_name)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a\tb.yaml").write_text("model: llama-3-8b\ngpus: 8\ntokens: 1e9\n", encoding="utf-8")
    code, out, err = run_cli("report", "a\tb.yaml", "--sections", "budget", "--no-plots", "--out", "r.html")
    assert code == 0, err
    assert "<title>gpuplan report: a\\u0009b.yaml</title>" in (tmp_path / "r.html").read_text(encoding="utf-8")
    (tmp_path / "c\td.yaml").write_text("model: llama-3-8b\ngpus: 8\ntokens: 1e9\nmfu: 2\n", encoding="utf-8")
    told = field_refusal(run_cli("report", "c\td.yaml", "--sections", "budget", "--no-plots"), "c\\u0009d.yaml: mfu")
    assert told == field_refusal(run_cli("train", "c\td.yaml"), "c\\u0009d.yaml: mfu")
    assert not (tmp_path / "report-plots").exists() and sorted(p.name for p in tmp_path.iterdir()) == [
        "a\tb.yaml", "c\td.yaml", "r.html"]  # nothing half-written


def test_report_plan_without_control_characters_reads_as_before():
    from gpuplan.errors import InputError
    from gpuplan.report.schema import ReportInputs

    assert ReportInputs.parse({"plan": " p.yaml "}).plan == "p.yaml"
    assert ReportInputs.parse({"plan": "a\tb.yaml"}).plan == "a\tb.yaml"
    with pytest.raises(InputError, match="must not be empty"):
        ReportInputs.parse({"plan": "\t"})


# ---- (f) a .json that is not a config is refused naming that file ----------------------------------------------------

def test_a_json_that_is_no_config_is_refused_naming_the_file_given(run_cli, client, tmp_path):
    """`gpuplan train p.json` (no model_type) was told 'config.json: model_type: ...', a file it was not given. A file
    called config.json, and the web door's pasted config, keep the name 'config.json'."""
    given = tmp_path / "p.json"
    given.write_text('{"x": 1}', encoding="utf-8")
    words = "got no value; supported: dbrx"
    flag = field_refusal(run_cli("train", str(given), "--tokens", "1e9"), f"{given}: model_type", words)
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text('{"x": 1}', encoding="utf-8")
    named = field_refusal(run_cli("train", str(tmp_path / "m" / "config.json"), "--tokens", "1e9"),
                          "config.json: model_type", words)
    assert named == flag.replace(str(given), "config.json")
    web = web_refusal(client.post("/api/training", json={"config": {"x": 1}, "tokens": "1e9"}),
                      "config.json: model_type", words)
    assert f"error: {web}" == named.strip()


# ---- (g) a GPU range with an end left off says what a range is -------------------------------------------------------

@pytest.mark.parametrize("text, words", [
    ("8-", "a GPU range needs both ends, low-high (e.g. 8-64), or give one count (e.g. 8)"),
    ("8,,16", "entry 2 of 3 is empty; give whole GPU counts, e.g. 1024 or 256,512 or 512-4096")])  # s26: position
def test_a_gpu_range_or_list_with_an_empty_part_says_what_is_valid(run_cli, client, tmp_path, text, words):
    """`plan --gpus 8-` was told only 'must not be empty'. The flag, a plan file and the web body say the same."""
    flag = field_refusal(run_cli("plan", "--model", "llama-3-8b", "--gpus", text), "gpus", words)
    assert flag == f"error: gpus: got {text!r}; {words}\n"
    plan = tmp_path / "p.yaml"
    plan.write_text(f"model: llama-3-8b\ngpus: '{text}'\n", encoding="utf-8")
    field_refusal(run_cli("plan", str(plan)), f"{plan}: gpus", words)
    web = web_refusal(client.post("/api/plan", json={"model": "llama-3-8b", "gpus": text}), "gpus", words)
    assert f"error: {web}" == flag.strip()


# ---- (h) the algorithm column names the collective library of the GPU's vendor --------------------------------------

@pytest.mark.parametrize("gpu, header", [("h100", "NCCL algorithm / protocol"), ("mi300x", "RCCL algorithm / protocol"),
                                         ("tpu-v5p", "XLA collective: timed as NCCL's"),  # w16 A5; ICI or DCN (R4 N2)
                                         ("gaudi3", "algorithm / protocol (NCCL's model)")])
def test_the_explain_algorithm_column_names_the_vendors_library(gpu, header):
    """`plan --explain` headed the column 'NCCL algorithm / protocol' on an MI300X (RCCL) and a TPU (XLA over ICI)."""
    from gpuplan.catalog import load_accelerator
    from gpuplan.jobs.plan.explain import COMMUNICATION_COLUMNS, communication_columns

    columns = communication_columns(load_accelerator(gpu))
    assert columns[4] == header and columns[:4] + columns[5:] == COMMUNICATION_COLUMNS[:4] + COMMUNICATION_COLUMNS[5:]
