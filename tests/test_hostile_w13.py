"""Hostile inputs, wave 13 (2026-12-06): two schema leftovers of wave 12 and what the wave-13 sweep found, each fixed
at its cause. Each refusal is one line naming the field and what is valid (exit status 2, 4xx on the web).

Leftovers: (a) units.parse_count / parse_duration report a number that overflowed in reading as its own case
(units.Overflowed, a NotPositive), so schema.types no longer compares the message's text to tell it; (b) the plan
files' float readers (adapters.plan_formats._lost) and schema.types._no_underflow share units.overflowed /
units.lost_to_zero instead of writing the underflow test twice.

The sweep (scripts outside the suite, in-process `gpuplan.cli.main` under a SIGALRM time box of 20-60 s, the web app
through its TestClient; 2026-12-06), about 20,000 cases: 1,584 --fsdp-float8-all-gather x 6 frameworks x 6 dtypes x
5 layouts x 4 GPUs (train / memory / plan) and --fp8-recipe tensorwise / rowwise / mxfp8 / nvfp4 / '' on 8 GPUs;
1,485 infer cases (--group-size -1 / 0 / 3 / 32 ... 256 / 1e9 / nan / fullwidth x 5 formats x 4 models with MoE,
7 engine names x 22 release spellings and 6 separators, --speculative x 8 releases x 3 models, --rps / --ttft-p99 /
--tpot and 20 other numbers x 29 values with units); 1,920 numeric flags of train / plan / budget / memory x 20
values; 688 layouts (tp / pp / cp / ep / vpp / etp not dividing heads, layers, experts or GPUs, micro-batch past the
global batch, --seq-len past the positions); 270 hostile plan files (54 files x 5 commands: alias bombs, 5,000-deep
nesting, duplicate keys, 3 MiB, Latin-1, UTF-16, BOM, NUL, python tags, a directory, a FIFO, /dev/zero, symlink
loops); 472 `report` runs (the same files x 8 --out targets: nothing written on a refusal); 160 config.json
mutations (no vocab_size, 0, -5, '32000', 1e30, NaN, heads, MoE, quantization_config) x 5 commands; 3,600 infer
weight formats x 15 GPUs x 5 engines x KV dtypes; 1,335 web bodies (the same values, raw bodies, content types,
paths named in model / calibration / draft_model / gpu / provider, with open() spied: none opened) and their CLI
twins; 943 values x 3 doors (flag, plan file, Python API) and 288 fsdp flag / web pairs; 7,500 random option
combinations. No traceback, hang or refusal over one line; the slowest case took 22.8 s (`infer --prefill-tokens
1`: 3,840 one-token chunks x 105 searched setups, one roofline a chunk then; one numpy pass a run of chunks since
c6dcb938, under 1 s: tests/test_slow_inputs_w13.py, MAX_PREFILL_CHUNKS' docstring). The defects it found are
(c)-(f) below and the --tp / --tp nan wording of (d).
"""

import json

import pytest
from helpers import field_refusal, web_refusal

from gpuplan.adapters import plan_formats
from gpuplan.core import units
from gpuplan.errors import InputError

pytestmark = pytest.mark.usefixtures("time_box")  # conftest: a hang fails the case, not the suite


# ---- (a) overflow is its own case -------------------------------------------------------------------------------

@pytest.mark.parametrize("parse, text", [(units.parse_count, "1e400"), (units.parse_count, "-1e400"),
                                         (units.parse_count, "1e300T"), (units.parse_duration, "1e308"),
                                         (units.parse_duration, 1e308), (units.parse_duration, "1e308h"),
                                         (units.parse_bytes, "1e300PiB")])
def test_a_number_written_finite_that_reads_as_an_infinity_is_an_overflow(parse, text):
    with pytest.raises(units.Overflowed) as caught:
        parse(text, "f")
    assert isinstance(caught.value, units.NotPositive) and caught.value.expected == units.NOT_POSITIVE


@pytest.mark.parametrize("parse, value", [(units.parse_count, "-5"), (units.parse_count, "0"),
                                          (units.parse_count, float("inf")), (units.parse_count, "-1e20"),
                                          (units.parse_duration, float("inf")), (units.parse_duration, "-3d")])
def test_zero_negative_and_a_given_infinity_are_not_an_overflow(parse, value):
    with pytest.raises(units.NotPositive) as caught:
        parse(value, "f")
    assert not isinstance(caught.value, units.Overflowed)


def test_a_negative_count_past_the_bound_reads_as_every_negative_at_every_door(run_cli, client):
    """'--tokens=-1e20' was told the bound ('must be >= 1000 and <= 1e+18', the overflow case's words, matched by
    the message text) while the web's JSON -1e20 and '--tokens=-5' were told 'must be a positive, finite number';
    only an overflow ('-1e400') names the bound now, so the flag and the JSON number agree."""
    flag = field_refusal(run_cli("budget", "--model", "llama-3-8b", "--tokens=-1e20"), "tokens", units.NOT_POSITIVE)
    web = web_refusal(client.post("/api/budget", json={"model": "llama-3-8b", "gpu": "h100", "tokens": -1e20}),
                      "tokens", units.NOT_POSITIVE)
    same = flag.strip().removeprefix("error: tokens: got '-1e20'") == web.removeprefix("tokens: got -1e+20")
    assert same, (flag, web)
    field_refusal(run_cli("budget", "--model", "llama-3-8b", "--tokens=-1e400"), "tokens", "<= 1e+18")


# ---- (b) one test of a lost float -------------------------------------------------------------------------------

@pytest.mark.parametrize("text, number, lost", [("1e400", float("inf"), True), ("-1e400", float("-inf"), True),
                                                ("inf", float("inf"), False), (".inf", float("inf"), False),
                                                ("1e-400", 0.0, True), ("0e-400", 0.0, False), ("0.0", 0.0, False),
                                                ("5", 5.0, False)])
def test_the_plan_files_and_the_schema_read_a_lost_float_alike(text, number, lost):
    assert plan_formats._lost(text, number) is lost
    assert (units.overflowed(text, number) or units.lost_to_zero(text, number)) is lost


# ---- (c) --group-size: a refusal names -1 ------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["0", "-2", "1e9", "65537", "1e400", "-1e400"])
def test_a_group_size_refusal_names_per_channel_at_both_doors(run_cli, client, text):
    """'--group-size 0' / '-2' said 'must be a positive, finite number' and '1e9' 'must be > 0 and <= 65536', both
    wrong of -1 (per channel), which is valid; the web's JSON number is refused in the same words."""
    valid = "must be -1 (per channel) or a whole number from 1 to 65536, e.g. 32, 64 or 128"
    flag = field_refusal(run_cli("infer", "--model", "llama-3-8b", "--gpu", "h100", "--quantization", "int4",
                                 f"--group-size={text}"), "group_size", valid)
    assert flag.strip().endswith(valid), flag
    if abs(float(text)) < 1e300:
        web_refusal(client.post("/api/inference", json={"model": "llama-3-8b", "gpu": "h100", "quantization": "int4",
                                                        "group_size": int(float(text))}), "group_size", valid)


# ---- (d) a whole count's text: its own forms; 'inf' / 'nan' as a number's ----------------------------------------

@pytest.mark.parametrize("field, text, words", [
    ("tp", "true", "expected a whole number such as 8 or 1K"),
    ("micro_batch", "2%", "expected a whole number such as 8 or 1K"),
    ("seq_len", "lots", "expected a number of tokens, e.g. 4096, 8K or 128K"), ("tp", "nan", "must be a finite number"),
    ("seq_len", "-inf", "must be a finite number"),
    ("tokens", "lots", "expected a number with an optional K/M/B/T suffix, e.g. 7B or 2T")])
def test_a_counts_refused_text_says_what_the_field_takes_at_four_doors(run_cli, client, tmp_path, field, text, words):
    """'--tp true', '--micro-batch 2%' were told 'expected a number with an optional K/M/B/T suffix, e.g. 7B or
    2T' (a parameter count's forms); '--tp nan' too, where a plan file's `.nan`, the Python API's float('nan') and
    `--rps nan` say 'must be a finite number'. The flag, a plan file, the web body and the Python API now agree."""
    from gpuplan import BudgetInputs

    line = f"{field}: got {text!r}; {words}"
    flag = field_refusal(run_cli("budget", "--model", "llama-3-8b", "--gpu", "h100", f"--{field.replace('_', '-')}",
                                 text), field, words)
    assert flag.strip() == f"error: {line}", flag
    plan = tmp_path / "p.yaml"
    plan.write_text(f'model: llama-3-8b\ngpu: h100\n{field}: "{text}"\n')
    code, _, from_file = run_cli("budget", str(plan))
    assert code == 2 and from_file.strip() == f"error: {plan}: {line}", from_file
    assert web_refusal(client.post("/api/budget", json={"model": "llama-3-8b", "gpu": "h100", field: text}),
                       field, words) == line
    with pytest.raises(InputError) as caught:
        BudgetInputs(model="llama-3-8b", gpu="h100", **{field: text})
    assert str(caught.value) == line


# ---- (e) a weight format a GPU cannot run quotes what was typed ----------------------------------------------------

def test_int4_on_a_gpu_without_fp16_quotes_int4_at_both_doors(run_cli, client):
    """'--quantization int4 --gpu gaudi3' was refused as "got 'int4-g128'; Intel Gaudi 3 (OAM) has no fp16 compute
    path": a format name nobody typed, and fp16 unexplained (int4 weights are dequantised to fp16 for the matmuls,
    core.serving.weights FORMATS). Gaudi 3's catalog peaks are bf16 and fp8 only."""
    words = ("int4-g128 weights run their matmuls in fp16: Intel Gaudi 3 (OAM) has no fp16 compute path (it has bf16, "
             "fp8); choose a format it runs: --quantization bf16 or fp8")
    flag = field_refusal(run_cli("infer", "--model", "llama-3-8b", "--gpu", "gaudi3", "--quantization", "int4"),
                         "quantization", words)
    assert flag.strip() == f"error: quantization: got 'int4'; {words}", flag
    body = {"model": "llama-3-8b", "gpu": "gaudi3", "quantization": "int4"}
    web = web_refusal(client.post("/api/inference", json=body), "quantization", words)
    assert web == flag.strip().removeprefix("error: ")


# ---- (f) --engine's help names the default releases the code uses -------------------------------------------------

def test_the_engine_help_names_the_newest_modelled_releases(run_cli):
    """The help said the default was 'sglang==0.5.3' while a bare --engine sglang ran 0.5.6 (releases.NEWEST, the
    answer's 'default: the newest release modelled'); the text is now built from NEWEST."""
    from gpuplan.core.serving import releases as REL
    from gpuplan.jobs.inference.schema import InferenceInputs

    described = InferenceInputs.model_fields["engine"].description
    assert "vllm==0.29, sglang==0.5.6, trtllm==1.0" in described, described
    assert all(REL.release_of(e).label in described for e in REL.NEWEST)
    code, out, _ = run_cli("infer", "--help")
    assert code == 0 and "sglang==0.5.6" in out and "sglang==0.5.3" not in out


# ---- review w13 r4 -----------------------------------------------------------------------------------------------

INT4 = ("infer", "--model", "llama-3-8b", "--gpu", "h100", "--quantization", "int4", "--json")
INT4_BODY = {"model": "llama-3-8b", "gpu": "h100", "quantization": "int4"}


@pytest.mark.parametrize("text", ["-1.0", "-1.", " -1 ", "-1e0", "-01", "-1.0e0", "none"])
def test_every_spelling_of_minus_one_answers_as_group_size_minus_one_at_every_door(run_cli, client, text):
    """M1: the flag's regex of spellings refused '-1e0' and '-01', which the plan files and the web's JSON number
    read as -1; the text is now read as a number. M2: the answer equals --group-size -1's (per channel), not only
    exit 0: a group size of 1 divides every matrix and would pass a status check, and differs from -1's answer."""
    code, minus_one, err = run_cli(*INT4, "--group-size=-1")
    assert code == 0, err
    assert run_cli(*INT4, "--group-size=1")[1] != minus_one  # the comparison below can tell 1 from -1
    code, out, err = run_cli(*INT4, f"--group-size={text}")
    assert code == 0 and out == minus_one, err
    web = client.post("/api/inference", json=INT4_BODY | {"group_size": -1}).json()
    assert client.post("/api/inference", json=INT4_BODY | {"group_size": text}).json() == web
    if text in {"-1.0", "-1e0", "-1.0e0"}:  # also as a JSON number (JSON has no '-1.' or '-01')
        raw = json.dumps(INT4_BODY)[:-1] + f', "group_size": {text}}}'
        assert client.post("/api/inference", content=raw, headers={"content-type": "application/json"}).json() == web


@pytest.mark.parametrize("text", ["abc", "0x80", "+-1", "-1.0.0", "- 1"])
def test_a_group_size_that_is_not_a_number_is_told_minus_one_and_none(run_cli, client, text):
    """S1: text that is not a number was told 'expected a whole number such as 8 or 1K' (no -1 / none, and 1K =
    1,000 divides no model's matrices); it is told the group sizes at the flag and the web alike."""
    from gpuplan.jobs.inference.inputs_group import GROUP_SIZE_FORMS

    flag = field_refusal(run_cli(*INT4, f"--group-size={text}"), "group_size", GROUP_SIZE_FORMS)
    assert flag.strip() == f"error: group_size: got {text!r}; {GROUP_SIZE_FORMS}" and "1K" not in flag
    assert "-1 or none" in GROUP_SIZE_FORMS
    web = web_refusal(client.post("/api/inference", json=INT4_BODY | {"group_size": text}), "group_size")
    assert web == flag.strip().removeprefix("error: ")


def test_the_group_size_reader_tells_a_form_refusal_by_its_type(monkeypatch):
    """review_w13_r5 S3: inputs_group told T.count's form refusal by comparing its message to count_forms' words, so a
    change of those words would silently stop the retelling; it now catches schema.types.NotACount. With the words
    changed, 'abc' is still told the group sizes (the parent's comparison let the new words through)."""
    from gpuplan.jobs.inference.inputs_group import GROUP_SIZE_FORMS, group_size
    from gpuplan.schema import types as T

    with pytest.raises(T.NotACount):
        T.count(8, whole=True)("abc", None)
    for refused in ("nan", "-5", "1_0"):  # not-finite, not positive, '_': their own words, not the forms'
        with pytest.raises(InputError) as caught:
            T.count(8, whole=True)(refused, None)
        assert not isinstance(caught.value, T.NotACount)
    monkeypatch.setattr(T, "count_forms", lambda whole, suffix_base: "expected other words")
    with pytest.raises(InputError) as caught:
        group_size("abc", None)
    assert caught.value.expected == GROUP_SIZE_FORMS


@pytest.mark.parametrize("text", ["0.5", "1.5", "128.5"])
def test_a_fractional_group_size_is_told_minus_one_at_both_doors(run_cli, client, text):
    """review_w13_r5 S3: '0.5' and '1.5' were refused 'must be a whole number', naming no -1 where '-0.5' and '1e5'
    did; every door now says the group sizes (the flag's text, the web's string and its JSON number)."""
    valid = "must be -1 (per channel) or a whole number from 1 to 65536, e.g. 32, 64 or 128"
    flag = field_refusal(run_cli(*INT4, f"--group-size={text}"), "group_size", valid)
    assert flag.strip() == f"error: group_size: got {text!r}; {valid}", flag
    assert web_refusal(client.post("/api/inference", json=INT4_BODY | {"group_size": text}), "group_size") == \
        flag.strip().removeprefix("error: ")
    web_refusal(client.post("/api/inference", json=INT4_BODY | {"group_size": float(text)}), "group_size", valid)


@pytest.mark.parametrize("command, field, text", [("budget", "tp", ".nan"), ("budget", "seq_len", "-.inf"),
                                                  ("budget", "tp", ".Inf"), ("infer", "rps", ".nan"),
                                                  ("infer", "rps", ".inf")])
def test_a_plan_files_unquoted_yaml_nan_and_inf_are_not_finite_as_the_flags_nan(run_cli, tmp_path, command, field,
                                                                               text):
    """S2: the plan loader keeps YAML's `.nan` / `.inf` as text (plan_formats), which the counts refused by their
    form ('expected a whole number such as 8 or 1K') and number() as 'expected a number between 1e-06 and 1e+07',
    while `--tp nan` and `--rps nan` say 'must be a finite number'. Written unquoted, as YAML's own values."""
    plan = tmp_path / "p.yaml"
    plan.write_text(f"model: llama-3-8b\ngpu: h100\n{field}: {text}\n")
    code, _, err = run_cli(command, str(plan))
    assert code == 2 and err.strip() == f"error: {plan}: {field}: got {text!r}; must be a finite number", err
    field_refusal(run_cli(command, "--model", "llama-3-8b", "--gpu", "h100", f"--{field.replace('_', '-')}",
                          text.replace(".", "")), field, "must be a finite number")


@pytest.mark.parametrize("text, words", [("1e400ms", "must be at most 1min (60 s)"),
                                         ("1e300h", "must be at most 1min (60 s)"),
                                         ("2h", "must be at most 1min (60 s)"),
                                         ("-1e400ms", units.NOT_POSITIVE), ("-5ms", units.NOT_POSITIVE)])
def test_a_duration_with_a_unit_that_overflows_is_past_the_bound(run_cli, text, words):
    """S3: '--tpot 1e400ms' said 'must be a positive, finite number' (units.Overflowed let through) while '2h' and
    '1e300h' named the bound; an overflow of a positive duration names the bound, a negative one is not
    positive as '-5ms' is."""
    err = field_refusal(run_cli("infer", "--model", "llama-3-8b", "--gpu", "h100", f"--tpot={text}"), "tpot", words)
    assert err.strip() == f"error: tpot: got {text!r}; {words}", err
    if "e400" in text:  # with spaces around it: quoted without them, the positive overflow as the negative one
        # (review_w13_r5 N6: ' 1e400ms ' was quoted with its spaces, ' -1e400ms ' as '-1e400ms')
        spaced = field_refusal(run_cli("infer", "--model", "llama-3-8b", "--gpu", "h100", f"--tpot= {text} "), "tpot")
        assert spaced == err, spaced


@pytest.mark.parametrize("field, text", [("price", "1e-400"), ("group_size", "1e-400"), ("tokens", "5e-999")])
def test_a_web_json_number_that_underflows_is_quoted_as_written_as_at_the_flag(run_cli, client, field, text):
    """S4: the web's JSON 1e-400 was read as 0.0 ('price: got 0.0; must be at least $0.0001/GPU-h ...') while the
    flag and the plan files keep the text ('is too small to tell from 0'); the body reader now keeps it as the
    YAML / TOML readers do (units.lost_to_zero), for a top-level field; a pasted config's number stays 0.0."""
    command, path, extra = (("infer", "/api/inference", ("--quantization", "int4")) if field == "group_size" else
                            ("budget", "/api/budget", ()))
    flag = field_refusal(run_cli(command, "--model", "llama-3-8b", "--gpu", "h100", *extra,
                                 f"--{field.replace('_', '-')}={text}"), field)
    body = '{"model": "llama-3-8b", "gpu": "h100", ' + ('"quantization": "int4", ' if extra else "")
    response = client.post(path, content=f'{body}"{field}": {text}}}', headers={"content-type": "application/json"})
    assert web_refusal(response, field) == flag.strip().removeprefix("error: ")
    from gpuplan.web.body import read_body

    pasted = read_body(b'{"model": "x", "config": {"rms_norm_eps": 1e-400}}', "application/json")
    assert pasted["config"]["rms_norm_eps"] == 0.0


@pytest.mark.parametrize("text, tokens", [("8K", 8192), ("8e0K", 8192), ("+8K", 8192), ("0.5e1K", 5120),
                                          ("0.8e1k", 8192), ("1e1M", 10 * 2**20), ("8000", 8000), ("8e3", 8000)])
def test_a_token_lengths_k_is_1024_after_any_plain_number(text, tokens):
    """N2: '--seq-len 8e0K' read 8,000 (parse_count's K) and '8K' 8,192, silently; K / M after a token length's
    number are 2**10 / 2**20 however the number is written (docs/cli.md, Units); a bare exponent is the number."""
    from gpuplan import TrainingInputs

    assert TrainingInputs(model="llama-3-8b", seq_len=text).seq_len == tokens


def test_a_token_length_whose_k_overflows_names_the_bound(run_cli):
    """'1e308K' overflows in the 1,024 reading; it is left to parse_count's Overflowed, which names the bound."""
    field_refusal(run_cli("train", "--model", "llama-3-8b", "--seq-len=1e308K"), "seq_len", "must be > 0 and <=")


def test_the_cli_docs_quote_the_refusal_the_code_gives(run_cli):
    """M3: docs/cli.md's hand-written example quoted 'expected a number with an optional K/M/B/T suffix' for
    `--seq-len 8KK`, which since d1695c0 says 'expected a number of tokens ...'."""
    import re
    from pathlib import Path

    err = field_refusal(run_cli("train", "--model", "llama-3-8b", "--seq-len", "8KK"), "seq_len")
    doc = re.sub(r"\s+", " ", (Path(__file__).parents[1] / "docs" / "cli.md").read_text(encoding="utf-8"))
    assert f"`{err.strip()}`" in doc, err
