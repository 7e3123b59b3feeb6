"""Hostile inputs, wave 22 (2026-12-07, helper H). Probed first (in-process CLI, the web test client, the Python API)
and found answered or refused as the house rule asks:

- `gpuplan campaign FILE` (110 files): `stages` empty / 33 / a mapping / text / a number / nested lists / a plan
  file's name / null entries / generators; a stage of a list, text, null, `{}` (the defaults alone: answered), a name
  that is a number, true, a list, 65 characters, ESC, U+202E, U+200B, a date, a duplicate (also ' A ' against 'A' and a
  stage called 'stage 2' before the default 'stage 2'); unknown / case-variant / non-text / `stages` / `config` keys,
  TOML sub-tables and dotted keys; null values; an inherited default that is nonsense though every stage overrides it;
  gpus / tokens / price / days / mfu at 0, -1, NaN, +-inf, 1e30, 1e400, 2^63, hex, octal; a 100,000-character value;
  paths in a stage (missing, /etc/passwd, /dev/zero, a FIFO, a folder, the plan file itself, `..`); anchors, merge keys,
  3,000-deep nesting, multiple documents, set / binary / python / timestamp tags, Latin-1 and BOM files, duplicate
  keys at both levels; .json / no suffix / '-' / '' / NUL / a directory / a FIFO as FILE; --json with --format / --full;
  names with '|', quotes, commas, '<script>' and '=cmd' in the table, markdown and CSV output (escaped);
- POST /api/campaign (45 bodies): NaN / Infinity / 5,000-digit ints, 100,000-deep arrays and 5,000-deep objects,
  duplicate keys in a stage, non-UTF-8 and UTF-16 bodies, a stage's model as a URL / '~' / a mapping / a list / 7 /
  '', calibration as a mapping / a name with no --calibration-dir, 100,000-character keys and names, full-width keys and
  digits, true for a count, 32 stages of 1e18 tokens on 10,000,000 GPUs, `lang` in the body;
- the Python API's estimate_campaign (40 documents): numpy / Decimal / Fraction / bytes / complex / set / ndarray
  values, a self-containing document, surrogates, non-text keys;
- --eval-interval / --eval-iters (train, budget; 92 values: 0, -1, -0, 1.5, 1e3, 1e9, 1e9 + 1, 1e10, '', ' ', NaN,
  inf, 1K, 1_000, 0x10, true, full-width digits, 10%, 2**10, 1e-9, 100.0, 30 digits), each in a campaign stage and an
  API body too; --eval-iters without an interval (plan, a stage, an inherited interval); an interval past the run's
  steps; 1e6 iterations every step at 1e18 tokens; with --batch-ramp (17 ramps: below a sequence, 1 sequence, linear,
  FROM = TO, tokens, past --tokens), plan / train --days, a solved MFU or GPU count; memory / infer refuse the flags;
- 2,100 random budget / train / plan asks with every budget field at its bounds (storage, checkpoints, failure rate,
  restart 0 to 7 days, prices, spot, contingencies, evaluation; one GPU count, lists, ranges, --days), 400 random
  infer asks (engines and releases, quantization, KV dtype, utilisation, latency targets, --rps, speculative, prefix
  hits, eight models on seven parts), 650 random memory / train layouts (tp / pp / vpp / cp / ep / etp / ZeRO, eight
  frameworks, recipes, optimizers, losses, LoRA, offload, MTP), most under `python -W error::RuntimeWarning` (a numpy
  warning is an extra stderr line) and each answer's JSON read for NaN / Infinity;
- every BudgetInputs field x 15 hostile values through the Python API, POST /api/budget, a campaign stage in Python
  and POST /api/campaign (1,395 cases: one message at each door but (7)); --eval-interval / --eval-iters x 16 values
  through plan and budget plan files, POST /api/plan and /api/budget and the Python API (64 cases, one message);
- olmo3 config.json files (26: sliding_window absent / null / 0 / -1 / 4096.5 / text / 1e30 / true, layer_types
  short / long / unknown / text / a mapping / ints / nulls / empty / all full, max_position_embeddings 1 / 2 / 1e12,
  num_hidden_layers 0 / 33, rope_theta NaN, a negative eps, use_sliding_window false) under memory and infer;
  `report` on plan files with evaluation; POST /api/campaign's ?lang (unknown, twice, empty, mis-cased, NUL, 10,000
  characters), GET / PUT / DELETE / PATCH, text/plain, a 300 KiB body, 32 stages of 7 KB calibrations, 32 deadline
  stages (503 at 20 s, the next request answered at once).

Found, each fixed where every door passes (one line naming the field, exit 2):

(1) a refusal of a run that completes on demand but not on spot capacity printed numpy's 'RuntimeWarning: overflow
    encountered in multiply' and its source line before the error line (three lines on stderr): with --failure-rate
    1e-300 (refused since: (3)) the on-demand MTBI was ~1e300 s and the largest step's tokens overflowed (jobs/plan/
    completes.largest_step_tokens, now under np.errstate: an infinite bound is no bound, as before);
(2) that refusal said 'on 100,000 GPUs failures come faster than a checkpoint period plus a restart (fewer GPUs, a
    lower --failure-rate or a shorter --restart)' where only the spot run fails (--spot-preemption 100, or the default
    0.15 reclaims a node-month on 10,000,000 GPUs with --failure-rate 1e-9, where no lower rate helps): it now says
    the on-demand run completes and offers a lower --spot-preemption (jobs/plan/completes.no_completion, told by
    completing_rows and check_run_completes which plans failed);
(3) --failure-rate 1e-300 (any positive normal float) was taken: `budget llama-3.1-8b --gpus 64 --failure-rate 1e-300`
    printed a checkpoint interval of 464,871,950,...,800.00 days (151 digits), and with a slow --storage-write numpy
    overflow warnings before the refusal; the rate is now at least 1e-9 a GPU-hour, 12,000x below the lowest census
    (core/economics/reliability.MIN_FAILURE_RATE, the schema's bound at every door and BudgetSettings');
(4) a campaign file (or body) given to budget / train / plan / memory / infer / report was refused by whichever key
    came first: `name: got 'OLMo 3 7B base model'; unknown field; valid fields: ...` (some 100 names), `stages: ...
    did you mean storage, storage_read, storage_write?`, or, for plan, `mfu: ... unknown field`: now `stages` is
    named first with what to run instead (schema/base.JobInputs, a before-validator every job schema shares, so the
    web API's POST /api/budget and the Python API say the same; commands/build.raw_inputs and commands/report name
    it before the file's other unknown keys);
(5) --storage-read / --storage-write / --host-copy took any positive GB/s: `--storage-read 1e-300` printed 'DATA
    LOADING (storage): step 2.1e+297 s instead of 9.57 s', `--storage-write 1e-12` (or 1e-300) was refused as
    'failures come faster than a checkpoint period plus a restart (fewer GPUs, a lower --failure-rate or a shorter
    --restart)', none of which shortens a checkpoint write (fewer GPUs write as long a shard each per failure-free
    hour); each now takes at least 1 kB/s a node (1e-6 GB/s, jobs/budget/fields.MIN_GBPS; the wave's first floor,
    1 MB/s, refused a small filer's share of a large cluster: review s20 M3), at every door and in BudgetSettings;
(6) `plan llama-3.1-8b --days 1 --tokens 1T --eval-interval 1 --eval-iters 100` was refused as 'the fastest layout
    needs 21.5 min before failures and checkpoints, 1.04 days with them': the 70x is the in-loop evaluation the
    deadline weighs (jobs.budget.evaluation.work_factors), not failures; the refusal (and the default week's note)
    now say 'before failures, checkpoints and in-loop evaluation' when an interval is given (jobs/plan/deadline.py);
(7) a calibration that is neither a document nor a name, or a name past 128 characters, was refused in two words by
    the web API: POST /api/budget 'give the calibration JSON document (an object) or a file name from the server's
    --calibration-dir' (web/models.py), a campaign stage (and its defaults) 'give the calibration
    JSON document itself, or a file name (letters, ...)' (web/service.calibration_document): both now check
    through web/calibration_value.py, so both say the first;
(8) `campaign FILE --full --format markdown` headed each stage's report with its name as written: a stage named
    '<img src=x onerror=alert(1)>' or 'a | b' put raw HTML in the Markdown (the campaign's title, the table and every
    report's text go through report.render.md_text, which writes '<' as &lt; and escapes '|'); the heading now does
    too (commands/campaign.write);
(9) the Python API quoted a refused value with repr(): a 100,000-deep list (`BudgetInputs(gpus=deep)`, a campaign
    stage's value, an unknown field's, a model) ended in RecursionError, a traceback where every other door (the
    CLI's and the web's nesting limits) refuses; errors.shown now quotes what repr cannot reach with reprlib's depth
    limit; likewise an int of 5,000 digits as `gpu`, `model` or an unknown field (Python's 4,300-digit limit on
    int-to-text raised ValueError out of repr), and an object whose own repr raises, now quoted by size or type.
"""

import pytest
from helpers import field_refusal, four_door_refusal, web_refusal

pytestmark = pytest.mark.usefixtures("time_box")  # conftest: a hang fails the case, not the suite


# ---- (1) + (2) a run that completes on demand but not on spot ----------------------------------------------------

SPOT_ONLY = {"model": "gpt2", "gpu": "b200", "gpus": 100000, "tokens": "1e15", "mfu": 0.4, "failure_rate": "1e-9",
             "spot_preemption": 100}
"""GPT-2 on 100,000 B200s (12,500 nodes of 8): with --failure-rate 1e-9 the on-demand run has no failure to speak of,
while 100 spot reclaims a node-month are 12,500 x 100 / (730 h x 3,600 s) = 0.48 a second, an MTBI of ~2.1 s, so the
15-minute restart is ~430 MTBIs, past reliability.MAX_FAILURE_EXPONENT (50): the spot run never completes."""


@pytest.mark.parametrize("job", ["train", "budget", "plan"])
def test_1_a_spot_only_refusal_is_one_line_on_stderr(job):
    import subprocess
    import sys

    ask = dict(SPOT_ONLY) if job != "plan" else {k: v for k, v in SPOT_ONLY.items() if k != "mfu"}
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in ask.items() if k != "model"]
    done = subprocess.run([sys.executable, "-m", "gpuplan", job, "--model", ask["model"], *flags],
                          capture_output=True, text=True, timeout=120)  # a warning goes to the real stderr
    field_refusal((done.returncode, done.stdout, done.stderr), "gpus", "--spot-preemption")


def test_2_a_spot_only_refusal_offers_a_lower_spot_preemption_at_every_door(run_cli, client, tmp_path):
    message = four_door_refusal(run_cli, client, tmp_path, "budget", "budget", SPOT_ONLY, "gpus",
                                "the on-demand run completes")
    assert "a lower --spot-preemption" in message and "on spot capacity" in message, message


def test_2_the_default_spot_rate_on_ten_million_gpus_names_spot_not_the_failure_rate(run_cli):
    err = field_refusal(run_cli("budget", "--model", "gpt2", "--gpu", "b200", "--gpus", "1e7", "--tokens", "1e9",
                                "--mfu", "0.4", "--failure-rate", "1e-9"), "gpus", "a lower --spot-preemption")
    assert "a lower --failure-rate" not in err, err  # on demand the MTBI is ~2e5 s: the spot reclaims stop it


def test_2_an_on_demand_refusal_keeps_its_words(run_cli):
    err = field_refusal(run_cli("budget", "--model", "gpt2", "--gpu", "b200", "--gpus", "1e7", "--tokens", "1e9",
                                "--mfu", "0.4", "--failure-rate", "0.01"), "gpus", "a lower --failure-rate")
    assert "spot" not in err, err


def test_2_a_spot_rate_the_run_survives_stays_answered(run_json):
    ask = {**SPOT_ONLY, "spot_preemption": 0.15, "gpus": 1024}
    out = run_json("budget", "--model", ask.pop("model"), *(f"--{k.replace('_', '-')}={v}" for k, v in ask.items()))
    assert out["kind"] == "budget"


# ---- (3) a failure rate below any census ---------------------------------------------------------------------------

RATE_ASK = {"model": "llama-3.1-8b", "gpu": "h100", "gpus": 64, "tokens": "1T", "mfu": 0.4}


@pytest.mark.parametrize("rate", ["1e-300", "1e-10"])
def test_3_a_failure_rate_below_any_census_is_refused_at_every_door(run_cli, client, tmp_path, rate):
    import gpuplan

    bound = "must be >= 1e-09 and <= 0.01"
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in RATE_ASK.items() if k != "model"]
    field_refusal(run_cli("budget", "--model", "llama-3.1-8b", *flags, f"--failure-rate={rate}"), "failure_rate", bound)
    plan = tmp_path / "ask.yaml"  # YAML reads the rate as a number: quoted without its quotes, as every plan file's
    plan.write_text("".join(f"{k}: {v}\n" for k, v in {**RATE_ASK, "failure_rate": rate}.items()), encoding="utf-8")
    field_refusal(run_cli("budget", str(plan)), f"{plan}: failure_rate", bound)
    web_refusal(client.post("/api/budget", json={**RATE_ASK, "failure_rate": float(rate)}), "failure_rate", bound)
    with pytest.raises(gpuplan.InputError, match=f"failure_rate: got '{rate}'; {bound}"):
        gpuplan.estimate_budget(gpuplan.BudgetInputs(**RATE_ASK, failure_rate=rate))


def test_3_the_floor_is_answered_with_a_printable_interval(run_json):
    out = run_json("budget", "--model", "llama-3.1-8b", "--gpu", "h100", "--gpus", "64", "--tokens", "1T",
                   "--mfu", "0.4", "--failure-rate", "1e-9")
    lines = {line["key"]: line for section in out["sections"] for line in section["lines"]}
    interval = next(line for key, line in lines.items() if "interval" in key and line.get("unit") == "s")
    # Young / Daly: sqrt(2 x checkpoint cost x MTBI), MTBI = 3,600 / (64 x 1e-9) = 5.6e10 s: a cost of seconds to
    # minutes gives 1e5-1e7 s, far below the 1e146 days 1e-300 gave
    assert 1e4 < interval["value"] < 1e9, interval


def test_3_the_python_api_settings_refuse_it_too():
    from gpuplan.errors import InputError
    from gpuplan.jobs.budget.model import BudgetSettings, validate_settings

    with pytest.raises(InputError, match="failure_rate"):
        validate_settings(BudgetSettings(failure_rate=1e-300))


def test_1_the_largest_step_bound_of_an_endless_mtbi_warns_nothing():
    """largest_step_tokens on a plan whose MTBI is ~1e300 s (what --failure-rate 1e-300 gave before (3)): its bound
    overflows to inf, no bound, without numpy's RuntimeWarning (an error here)."""
    import warnings

    import numpy as np

    from gpuplan.jobs.plan.completes import largest_step_tokens

    endless, spot = (1e300, 900.0, 10.0, 1e6), (2.0, 900.0, 10.0, 1e6)  # (MTBI, restart, stall, interval) s
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plans = [tuple(np.array([v]) for v in plan) for plan in [endless, spot] * 3]  # six plans of one group
        bound = largest_step_tokens(plans, np.zeros(1, np.int64), np.array([1e9]))
    assert bound == 0.0  # the spot plans' 900 s restart outlasts 50 MTBIs of 2 s: no step completes there


# ---- (4) a campaign given to a one-run command ---------------------------------------------------------------------

CAMPAIGN_WORDS = "a `stages:` list makes a campaign"


@pytest.mark.parametrize("job", ["budget", "train", "plan", "memory", "infer", "report"])
def test_4_a_campaign_file_given_to_a_one_run_command_names_stages(run_cli, tmp_path, job):
    from pathlib import Path

    example = Path(__file__).resolve().parents[1] / "examples" / "olmo3-7b-campaign.yaml"
    extra = ("--out", str(tmp_path / "r.html"), "--no-plots") if job == "report" else ()
    err = field_refusal(run_cli(job, str(example), *extra), f"{example}: stages", CAMPAIGN_WORDS)
    assert "gpuplan campaign" in err and "'a list of 3 stages'" in err, err
    assert not (tmp_path / "r.html").exists()


def test_4_a_campaign_body_names_stages_at_the_web_api_and_the_python_api(client):
    import gpuplan

    body = {"model": "llama-3.1-8b", "gpu": "h100", "mfu": 0.4, "stages": [{"tokens": "1B", "gpus": 8}]}
    web = web_refusal(client.post("/api/budget", json=body), "stages", CAMPAIGN_WORDS)
    with pytest.raises(gpuplan.InputError) as api:
        gpuplan.BudgetInputs(**body)
    assert str(api.value) == web
    for route in ("training", "plan", "memory"):
        web_refusal(client.post(f"/api/{route}", json=body), "stages", CAMPAIGN_WORDS)


# ---- (5) a storage or host-copy rate below a megabyte a second ----------------------------------------------------

@pytest.mark.parametrize("field", ["storage_read", "storage_write", "host_copy"])
@pytest.mark.parametrize("rate", [1e-300, 1e-12, 9e-7])
def test_5_a_rate_below_a_kilobyte_a_second_is_refused_at_every_door(run_cli, client, tmp_path, field, rate):
    import gpuplan

    bound = "must be >= 1e-06 and <= 1000000"
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in RATE_ASK.items() if k != "model"]
    field_refusal(run_cli("budget", "--model", "llama-3.1-8b", *flags, f"--{field.replace('_', '-')}={rate!r}"),
                  field, bound)
    web_refusal(client.post("/api/budget", json={**RATE_ASK, field: rate}), field, bound)
    with pytest.raises(gpuplan.InputError, match=f"{field}: got {rate!r}; {bound}"):
        gpuplan.estimate_budget(gpuplan.BudgetInputs(**RATE_ASK, **{field: rate}))


def test_5_a_small_filers_share_is_answered_and_the_settings_refuse_less():
    import gpuplan
    from gpuplan.errors import InputError
    from gpuplan.jobs.budget.model import BudgetSettings, validate_settings

    # review s20 M3: a 4 GB/s filer over 1,024 nodes is ~0.0005-0.004 GB/s a node, refused by the first (1 MB/s) floor
    for rate in (0.0005, 1e-6):
        report = gpuplan.estimate_budget(gpuplan.BudgetInputs(**RATE_ASK, storage_read=rate, storage_write=rate,
                                                              host_copy=rate))
        assert report.value("budget_usd_on_demand") > 0
    for name in ("storage_read", "storage_write", "host_copy"):  # BudgetSettings in bytes/s
        with pytest.raises(InputError, match=name):
            validate_settings(BudgetSettings(**{name: 1e-300}))


# ---- (6) a deadline refusal that weighs evaluations says so --------------------------------------------------------

def test_6_a_deadline_refusal_with_evaluation_names_it(run_cli, client):
    ask = ("plan", "--model", "llama-3.1-8b", "--gpu", "h100", "--days", "1")
    err = field_refusal(run_cli(*ask, "--tokens", "1T", "--eval-interval", "1", "--eval-iters", "100"), "days",
                        "before failures, checkpoints and in-loop evaluation, ")
    body = {"model": "llama-3.1-8b", "gpu": "h100", "days": 1, "tokens": "1T", "eval_interval": 1, "eval_iters": 100}
    assert f"error: {web_refusal(client.post('/api/plan', json=body), 'days')}\n" == err
    plain = field_refusal(run_cli(*ask, "--tokens", "1e14"), "days", "before failures and checkpoints, ")
    assert "evaluation" not in plain, plain


# ---- (7) the web's calibration refusal in one wording -------------------------------------------------------------

@pytest.mark.parametrize("value", [1.5, True, [1], "x" * 129])
def test_7_a_campaign_stage_s_calibration_is_refused_as_the_budget_s(client, value):
    ask = {"model": "llama-3.1-8b", "gpu": "h100", "gpus": 8, "tokens": "1B", "mfu": 0.4}
    budget = web_refusal(client.post("/api/budget", json={**ask, "calibration": value}), "calibration")
    stage = web_refusal(client.post("/api/campaign", json={"stages": [{**ask, "calibration": value}]}),
                        "stages[0].calibration")
    default = web_refusal(client.post("/api/campaign", json={"calibration": value, "stages": [ask]}), "calibration")
    assert stage == f"stages[0].{budget}" and default == budget, (budget, stage, default)


# ---- (8) a stage's name in the --full Markdown heading ------------------------------------------------------------

def test_8_a_stage_name_in_the_full_markdown_heading_is_escaped(run_cli, tmp_path):
    plan = tmp_path / "names.yaml"
    plan.write_text("model: llama-3.1-8b\ngpu: h100\nmfu: 0.4\nstages:\n"
                    "  - {name: '<img src=x onerror=alert(1)>', tokens: 1B, gpus: 8}\n"
                    "  - {name: 'a | b', tokens: 1B, gpus: 8}\n", encoding="utf-8")
    code, out, err = run_cli("campaign", str(plan), "--full", "--format", "markdown")
    assert code == 0, err
    heads = [line for line in out.splitlines() if line.startswith("## stages[")]
    assert heads == ["## stages[0]: &lt;img src=x onerror=alert(1)>", "## stages[1]: a \\| b"], heads
    assert "<img" not in out


# ---- (9) a value nested past the interpreter's recursion limit, through the Python API -----------------------------

def _deep(levels: int = 100_000) -> list:
    top = current = []
    for _ in range(levels):
        current.append([])
        current = current[0]
    return top


@pytest.mark.parametrize("ask", [{"gpus": "deep"}, {"foo": "deep"}, {"model": "deep"}])
def test_9_a_value_nested_past_the_recursion_limit_is_an_input_error(ask):
    import gpuplan

    fields = {"model": "llama-3.1-8b", **{k: _deep() for k in ask}}
    with pytest.raises(gpuplan.InputError) as refused:
        gpuplan.BudgetInputs(**fields)
    assert str(refused.value).startswith(f"{next(iter(ask))}: got [[[") and len(str(refused.value)) < 2000  # the value cut, not 100,000 levels
    with pytest.raises(gpuplan.InputError, match=r"^stages\[0\]\."):
        gpuplan.estimate_campaign({"model": "llama-3.1-8b", "stages": [{"tokens": "1B", **fields}]})


class _Unprintable:
    def __repr__(self):
        raise RuntimeError("no repr")


@pytest.mark.parametrize("field", ["gpu", "model", "foo", "gpus"])
@pytest.mark.parametrize("value, quoted", [(10**5000, "an integer of about 5,001 digits"), (_Unprintable(), "_Unprintable")],
                         ids=["int-5001-digits", "unprintable"])
def test_9_a_value_repr_cannot_print_is_an_input_error(field, value, quoted):
    import gpuplan

    with pytest.raises(gpuplan.InputError, match=f"^{field}: got .*{quoted}"):
        gpuplan.BudgetInputs(**{"model": "llama-3.1-8b", field: value})
