"""Hostile inputs, wave 13 (2026-12-06): two schema leftovers of wave 12 and what the wave-13 sweep found, each fixed
at its cause. Each refusal is one line naming the field and what is valid (exit status 2, 4xx on the web).

Leftovers: (a) units.parse_count / parse_duration report a number that overflowed in reading as its own case
(units.Overflowed, a NotPositive), so schema.types no longer compares the message's text to tell it; (b) the plan
files' float readers (adapters.plan_formats._lost) and schema.types._no_underflow share units.overflowed /
units.lost_to_zero instead of writing the underflow test twice.
"""

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
    assert flag.strip().removeprefix("error: tokens: got '-1e20'") == web.removeprefix("tokens: got -1e+20"), (flag, web)
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
