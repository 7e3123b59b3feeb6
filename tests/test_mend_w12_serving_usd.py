"""Mender MB (wave 12, review R3 S1): one formatter and one cut-off for a price and an amount.

Below one unit of the last decimal place a non-zero amount keeps three significant digits: $0.007 printed '$0.01'
(43% off) as an amount (format_usd, cut at half a cent) and '$0.007/GPU-h' as a price (format_usd_per_gpu_hour,
cut at a cent); format_usd_per_gpu_hour is now format_usd(usd, 2) + '/GPU-h'.
"""

import pytest

from gpuplan.core import units


@pytest.mark.parametrize("usd, amount, price", [
    (0.007, "$0.007", "$0.007/GPU-h"), (0.0017125, "$0.00171", "$0.00171/GPU-h"), (2.494, "$2.49", "$2.49/GPU-h"),
    (1234.5, "$1,234.50", "$1,234.50/GPU-h"), (0.01, "$0.01", "$0.01/GPU-h"), (0, "$0.00", "$0.00/GPU-h")])
def test_a_price_and_an_amount_print_the_same_digits(usd, amount, price):
    assert units.format_usd(usd, 2) == amount and units.format_usd_per_gpu_hour(usd) == price
