import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpuplan.core import units
from gpuplan.errors import InputError


@pytest.mark.parametrize("text, expected", [
    ("7B", 7e9), ("2T", 2e12), ("1.5e12", 1.5e12), ("350M", 3.5e8), ("124k", 1.24e5),
    (" 70b ", 7e10), (405e9, 405e9), (8, 8.0),
])
def test_parse_count(text, expected):
    assert units.parse_count(text) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("text, expected", [
    ("80GiB", 80 * 2**30), ("80GB", 80e9), ("98 GB", 98e9), ("512MiB", 512 * 2**20), (1024, 1024.0),
])
def test_parse_bytes_keeps_si_and_binary_apart(text, expected):
    assert units.parse_bytes(text) == expected


@pytest.mark.parametrize("text, seconds", [
    ("7d", 7 * 86400), ("36h", 36 * 3600), ("90min", 5400), ("2w", 14 * 86400), (7, 7 * 86400), ("7", 7 * 86400),
])
def test_parse_duration(text, seconds):
    assert units.parse_duration(text) == seconds


@pytest.mark.parametrize("text, value", [("40%", 0.4), ("0.4", 0.4), (1, 1.0)])
def test_parse_fraction(text, value):
    assert units.parse_fraction(text) == pytest.approx(value)


@pytest.mark.parametrize("bad", ["", "abc", "-5", "0", "7X", "nan", "inf", "1e400", True])
def test_parse_count_rejects_with_field_name(bad):
    with pytest.raises(InputError) as exc:
        units.parse_count(bad, "tokens")
    assert str(exc.value).startswith("tokens:")


@pytest.mark.parametrize("bad", ["0", "1.5", "150%", "x", "-0.1"])
def test_parse_fraction_rejects(bad):
    with pytest.raises(InputError):
        units.parse_fraction(bad, "mfu")


@pytest.mark.parametrize("bad", ["7 fortnights", "-3d", "d"])
def test_parse_duration_rejects(bad):
    with pytest.raises(InputError):
        units.parse_duration(bad, "days")


def test_allowance_accepts_zero_and_more_than_one():
    assert units.parse_allowance("0") == 0.0
    assert units.parse_allowance("20%") == pytest.approx(0.2)
    assert units.parse_allowance("1.5") == 1.5
    with pytest.raises(InputError):
        units.parse_allowance("-0.1")


@given(st.floats(min_value=1e-3, max_value=1e30, allow_nan=False), st.sampled_from(["", "K", "M", "B", "T"]))
def test_parse_count_roundtrips_any_positive_number(value, suffix):
    scale = units.COUNT_SUFFIXES[suffix]
    assert units.parse_count(f"{value!r}{suffix}") == pytest.approx(value * scale, rel=1e-12)


@given(st.text(max_size=12))
def test_parse_count_never_raises_anything_but_input_error(text):
    try:
        value = units.parse_count(text)
    except InputError:
        return
    assert value > 0 and math.isfinite(value)


def test_format_helpers_label_units():
    assert units.format_bytes(98e9, binary=False) == "98.00 GB"
    assert units.format_bytes(80 * 2**30) == "80.00 GiB"
    assert units.format_count(7.24e9) == "7.24B"
    assert units.format_duration(7 * 86400) == "7.00 days"
