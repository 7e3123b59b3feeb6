"""GPT-OSS 120B on 64 GB200, s 8,192 x micro-batch 1 (25.11) against s 4,096 x micro-batch 4 (26.02-26.04.01): what
the step model's ~19-31% gain between them is made of, and three explanations the rows rule out (issue 37; docs/step.md,
"GPT-OSS 120B, tenth pass"). Measured figures are the catalog's (published_throughput.yaml, tokens/s/GPU as printed)."""

from __future__ import annotations

import copy

import pytest

from gpuplan.jobs.validation.published_throughput import predicted_step, published_throughput_rows

LONG = "mbridge-25.11-gpt-oss-120b-gb200-64g-bf16"  # s 8,192, micro-batch 1, 20 micro-batches, 163,840 tokens a GPU
SHORT = ("mbridge-26.02-gpt-oss-120b-gb200-64g-bf16", "mbridge-26.02.01-gpt-oss-120b-gb200-64g-bf16",
         "mbridge-26.04-gpt-oss-120b-gb200-64g-bf16", "mbridge-26.04.01-gpt-oss-120b-gb200-64g-bf16")
B200_25_11 = "mbridge-25.11-gpt-oss-120b-b200-64g-bf16"  # s 4,096, micro-batch 4, 2 micro-batches


@pytest.fixture(scope="module")
def rows():
    return {r["id"]: r for r in published_throughput_rows()}


def _tokens(run) -> float:
    return run["layout"]["global_batch"] * run["model"]["seq_len"] / run["gpus"]


def _measured_step(run) -> float:
    return _tokens(run) / run["measured"]["tokens_per_s_per_gpu"]


def test_printed_model_tflops_confirm_the_sequence(rows):
    """The 25.11 row's layout is not a preset at its tag (v0.2.2's GB200 preset is micro-batch 4, GBS 512, s 4,096), so
    check the printed sequence against the printed Model TFLOP/s: 488 / 15,876 and 452 / 16,640 (26.04.01) are 30.74
    and 27.16 GFLOP a token; the pre-v0.5.0 formula's causal attention, 6 x 36 layers x 4,096 (q width) x s, adds
    6 x 36 x 4,096 x 4,096 = 3.62 GFLOP a token from s 4,096 to 8,192: the run did train at 8,192."""
    per_token = {rid: rows[rid]["measured"]["tflops_per_gpu"] * 1e3 / rows[rid]["measured"]["tokens_per_s_per_gpu"]
                 for rid in (LONG, SHORT[3])}
    assert per_token[LONG] == pytest.approx(30.74, abs=0.01)
    assert per_token[SHORT[3]] == pytest.approx(27.16, abs=0.01)
    assert per_token[LONG] - per_token[SHORT[3]] == pytest.approx(6 * 36 * 4096 * 4096 / 1e9, abs=0.1)


def test_micro_batch_one_pays_a_second_set_of_peer_latencies(rows):
    """The model's EP all-to-all per call is bytes x 63/64 / 680.4 GB/s + 63 peers x 5 us (core.comm; docs/step.md, 'The
    expert all-to-all's latency'). Per 163,840 tokens the 8,192 x 1 run makes 20 x 36 x 4 = 2,880 calls, the 4,096 x 4
    runs 2 x 5 x 36 x 4 = 1,440 of twice the bytes: the byte parts cancel and the difference is the latency alone,
    1,440 x 63 x 5 us = 0.4536 s."""
    long_step, short_step = predicted_step(rows[LONG]), predicted_step(rows[SHORT[0]])
    ep = {k: next(c for c in s.collectives if c.parallelism == "EP")
          for k, s in (("long", long_step), ("short", short_step))}
    assert (float(ep["long"].calls), float(ep["short"].calls)) == (2880.0, 720.0)
    assert float(ep["long"].total) - 2 * float(ep["short"].total) == pytest.approx(1440 * 63 * 5e-6, rel=1e-3)


def test_the_contrast_by_term(rows):
    """Per 163,840 tokens the model gives 9.706 s at 8,192 x 1 and 2 x 4.085 = 8.171 s at 4,096 x 4 (1.188x the time
    a token; measured 10.320 against 10.380, 0.994x). Of the 1.535 s: the micro-batch-1 host exposure (0.322 s here,
    none at micro-batch 4) and the peer latencies (0.454 s, above) are the micro-batch-count terms; with 26.04.01's
    combined-1F1B credit (1.240 - 0.446 = 0.794 s of exposed all-to-all) the gap is 2.329 s, 1.316x."""
    long_step = predicted_step(rows[LONG])
    assert long_step.total == pytest.approx(9.706, abs=0.005)
    assert float(long_step.moe_host) == pytest.approx(0.322, abs=0.005)
    short = {rid: predicted_step(rows[rid]) for rid in (SHORT[0], SHORT[3])}
    assert 2 * short[SHORT[0]].total == pytest.approx(8.171, abs=0.01) and float(short[SHORT[0]].moe_host) == 0.0
    assert 2 * (short[SHORT[0]].ep_comm - short[SHORT[3]].ep_comm) == pytest.approx(0.794, abs=0.005)
    assert long_step.total / (2 * short[SHORT[3]].total) == pytest.approx(1.316, abs=0.003)
    measured = _measured_step(rows[LONG]) / (2 * _measured_step(rows[SHORT[0]]))
    assert measured == pytest.approx(15784 / 15876, rel=1e-9)


def test_a_per_step_cost_cannot_carry_the_contrast(rows):
    """A cost X paid once a step (optimizer, gradient exchange, logging) enters the 8,192 step once and two 4,096 steps
    twice: (9.706 + X) / (8.171 + 2X) = 0.994 needs X = (9.706 - 0.994 x 8.171) / (2 x 0.994 - 1) = 1.60 s. The 25.11
    B200 row runs 2 micro-batches a step (GBS 512) at the 4,096 x 4 layout, so it would show all of X: its whole gap is
    3.990 - 3.539 = 0.45 s."""
    t_long, t_short = predicted_step(rows[LONG]).total, 2 * predicted_step(rows[SHORT[0]]).total
    ratio = 15784 / 15876
    x = (t_long - ratio * t_short) / (2 * ratio - 1)
    assert x == pytest.approx(1.60, abs=0.02)
    b200 = rows[B200_25_11]
    assert b200["layout"]["grad_accum"] == 2 and b200["layout"]["micro_batch"] == 4
    gap = _measured_step(b200) - predicted_step(b200).total
    assert gap == pytest.approx(0.45, abs=0.01) and gap < x / 3


def test_the_unread_25_11_recipe_cannot_carry_the_contrast(rows):
    """The 25.11 row's recompute and CUDA graphs are read from a preset of another layout (v0.2.2 had GB200 TE graphs of
    attn / moe_router / moe_preprocess on 2025-11-20, Megatron-Bridge 34641780a, dropped the next day, 4db3ed97d).
    Timed with GB300's recipe (those graphs, no recompute) it reads +12.2%, against +27…+34% for the four 26.x GB200
    rows: whichever recipe it ran, the 8,192 x 1 row stays nearer its measurement."""
    run = copy.deepcopy(rows[LONG])
    run["moe_comm"]["cuda_graph"] = "te:attn,moe_router,moe_preprocess"
    run["recipe_recompute"] = {"granularity": None, "method": None, "num_layers": None, "modules": None}
    error = _measured_step(run) / predicted_step(run).total - 1
    assert error == pytest.approx(0.122, abs=0.005)
    for rid in SHORT:
        assert _measured_step(rows[rid]) / predicted_step(rows[rid]).total - 1 > 0.26
