"""Mender MB (wave 12, review R3 S3): a number that overflows or underflows in reading is refused as what was
written, with the same words at every door.

- Overflow at the depth of schema.types (count / number / days): '--tokens 1e400' said 'must be a positive, finite
  number' while '--tokens 1e308' said 'must be >= 1000 and <= 1e+18'; both now name the bound.
- Underflow in a plan file: `price: 1e-400` read as 0.0 ('got 0.0; must be at least $0.0001...'); the flag says
  "got '1e-400'; is too small to tell from 0". YAML and TOML now keep such a float's text (adapters/plan_formats).
"""

import pytest

from helpers import field_refusal

TOKENS_BOUND = "must be >= 1000 and <= 1e+18"


@pytest.mark.parametrize("text", ["1e400", "1e308", "-1e400", "1e300T"])
def test_tokens_past_float_range_is_past_the_bound(run_cli, text):
    field_refusal(run_cli("budget", "--model", "llama-3-8b", f"--tokens={text}"), "tokens", TOKENS_BOUND)


def test_inf_and_non_positive_keep_their_own_words(run_cli):
    field_refusal(run_cli("budget", "--model", "llama-3-8b", "--tokens=-5"), "tokens", "positive, finite")
    field_refusal(run_cli("budget", "--model", "llama-3-8b", "--price", "inf"), "price", "must be a finite number")


@pytest.mark.parametrize("name, text", [("p.yaml", "model: llama-3-8b\nprice: 1e-400\n"),
                                        ("p.toml", "model = 'llama-3-8b'\nprice = 1e-400\n")])
def test_a_plan_files_underflowing_price_is_quoted_as_the_flag_quotes_it(run_cli, tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    code, out, from_file = run_cli("budget", str(path))
    from_flag = field_refusal(run_cli("budget", "--model", "llama-3-8b", "--price", "1e-400"), "price",
                              "got '1e-400'; is too small to tell from 0")
    assert code == 2 and from_file == f"error: {path}: {from_flag.removeprefix('error: ')}", from_file
