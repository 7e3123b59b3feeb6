"""Money: the price catalog and its look-ups, spot, billed hours and the contingency lines."""

import re
import statistics

import pytest

from gpuplan.catalog import hardware_entries
from gpuplan.catalog.pricing import (
    KINDS,
    lookup_price,
    price_rows,
    price_table,
    priced_gpus,
    provider_info,
    provider_prices,
    providers,
    published_discount,
    spot_discount,
)
from gpuplan.core.economics import cost as K
from gpuplan.errors import InputError

ROWS = price_rows()


@pytest.mark.parametrize("row", ROWS, ids=lambda r: f"{r.provider_id}:{r.gpu}:{r.sku}")
def test_every_price_row_is_dated_sourced_and_names_a_catalog_gpu(row):
    assert row.gpu in hardware_entries()
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", row.as_of)
    assert len(row.source) > 20
    prices = [row.price(k) for k in KINDS if row.price(k) is not None]
    assert prices and all(0.05 < p < 50 for p in prices)
    if row.on_demand is not None:  # discounts are discounts
        for kind in ("spot", "reserved"):
            if row.price(kind) is not None:
                assert row.price(kind) < row.on_demand


def test_aws_h100_is_the_instance_price_over_eight_gpus():
    # p5.48xlarge $55.04 per instance-hour in us-east-1 / 8 GPUs = $6.88
    price, source = lookup_price("h100", "on_demand", "aws")
    assert price == pytest.approx(55.04 / 8)
    assert "p5.48xlarge" in source and "2026" in source


def test_a_provider_price_is_the_median_of_its_rows():
    # RunPod H100 SXM: Community 2.69, Secure 3.49 -> (2.69 + 3.49) / 2 = 3.09
    assert lookup_price("h100-sxm", "on_demand", "runpod")[0] == pytest.approx(3.09)


@pytest.mark.parametrize("gpu", priced_gpus())
def test_no_provider_means_the_median_over_providers(gpu):
    per_provider = provider_prices(gpu)
    price, source = lookup_price(gpu)
    assert price == pytest.approx(statistics.median(v for v, _ in per_provider.values()))
    assert source.startswith("median of") and "catalog/prices" in source


def test_missing_prices_and_bad_names():
    assert lookup_price("tpu-v4") is None                 # known GPU, nothing published
    assert lookup_price("a100", "spot", "lambda") is None  # Lambda publishes no spot tier
    with pytest.raises(InputError, match="gpu"):
        lookup_price("a1000")
    with pytest.raises(InputError, match="provider"):
        lookup_price("h100", provider="ibm")
    with pytest.raises(InputError, match="price kind"):
        lookup_price("h100", "preemptible")


def test_spot_discount_from_published_pairs():
    # GCP a3-highgpu-1g: spot 6.571 vs 10.9791 on demand -> 1 - 6.571 / 10.9791 = 40.2% off
    discount, source = spot_discount("h100")
    assert discount == pytest.approx(1 - 6.571 / 10.9791)
    assert "GCP" in source
    # no pair for the A100 80GB SXM: the median over every published pair in the catalog
    assert "all catalog GPUs" in spot_discount("a100")[1]


def test_published_discount_is_one_rule_for_spot_and_reserved():
    # reserved, A100 80GB SXM: AWS p4de 1 - 2.1752 / 3.4309 = 36.6%, Hyperstack 1 - 1.36 / 1.60 = 15.0%; median of two
    off, pairs = published_discount("a100", "reserved")
    assert off == pytest.approx(((1 - 2.1752 / 3.4309) + (1 - 1.36 / 1.60)) / 2, rel=1e-12)
    assert [r.provider for r, _ in pairs] == ["AWS", "Hyperstack"]
    assert published_discount("a100", "reserved", "aws")[0] == pytest.approx(1 - 2.1752 / 3.4309, rel=1e-12)
    # spot: the same rule, as spot_discount reads it (GCP a3-highgpu-1g 6.571 vs 10.9791)
    assert published_discount("h100", "spot")[0] == pytest.approx(spot_discount("h100")[0], rel=0) == \
        pytest.approx(1 - 6.571 / 10.9791, rel=1e-12)
    assert published_discount("a100", "spot") is None  # no A100 80GB SXM row publishes a spot price


def test_listing_helpers():
    assert {"aws", "gcp", "azure", "lambda", "runpod"} <= set(providers())
    assert provider_info("AWS")["provider"] == "AWS"
    table = price_table("h100")
    assert table.columns[:3] == ("provider", "gpu", "sku") and all(r[1] == "h100-sxm" for r in table.rows)


def test_billed_hours_and_cost_by_hand():
    # 1,113 GPUs x 7 days x 24 h = 186,984 GPU-hours; at $1.71 = $319,742.64
    hours = K.billed_gpu_hours(1113, 7 * 86_400)
    assert hours == 186_984
    assert K.cost_usd(hours, 1.71) == pytest.approx(319_742.64)


def test_spot_price_and_reclaim_rate_by_hand():
    assert K.spot_price(3.99, 0.40) == pytest.approx(2.394)  # 3.99 x 0.6
    # 2,048 nodes x 0.15 reclaims per node-month / 730 h per month = 0.4208 per hour
    assert K.spot_interruptions_per_hour(2048, 0.15) == pytest.approx(0.42082, rel=1e-4)


def test_contingency_lines_are_named_and_failures_can_be_modelled():
    # 100,000 compute GPU-hours: 5% restarts, 5% tuning, failures from the model (1,234), 5% evaluation
    lines = K.contingency_lines(100_000, K.DEFAULT_CONTINGENCY_SHARES[:2] + (("failures", None), ("evaluation", 0.05)),
                                1_234)
    assert [line.name for line in lines] == ["restarts", "tuning", "failures", "evaluation"]
    assert [line.gpu_hours for line in lines] == [5_000, 5_000, 1_234, 5_000]
    assert lines[2].modelled and lines[2].share == pytest.approx(0.01234)
    assert K.contingency_total(lines) == 16_234
    # the article's flat 20% is the default split's sum
    assert sum(share for _, share in K.DEFAULT_CONTINGENCY_SHARES) == pytest.approx(K.ARTICLE_CONTINGENCY)
