"""`--framework megatron` takes TE's hidden TP share by default (core.frameworks FrameworkProfile.tp_overlap =
core.time.megatron_ops.TE_HIDDEN_TP_SHARE): `gpuplan plan` times a published Megatron-Bridge layout as the
validation mapping does, the share follows the recompute mode, and --tp-overlap goes with --tp-comm-overlap."""

from __future__ import annotations

import pytest

from gpuplan.core.frameworks import FRAMEWORKS

NVFP4 = "mbridge-26.04.01-llama-3-70b-gb200-64g-nvfp4"  # tp 2, no userbuffers (NVFP4 recipes switch them off)
FP8_UB = "mbridge-26.04.01-llama-3-70b-h100-sxm-64g-fp8cs"  # tp 4 with userbuffers (--tp-comm-overlap)


@pytest.fixture
def plan(plan_published_row):
    """`gpuplan plan` (Python API) held to the row's own layout (conftest's plan_published_row), as a user would
    type it: the row's precision, --framework megatron, --tp-comm-overlap where the recipe runs userbuffers."""
    from gpuplan.jobs.validation.published_throughput import PRECISION, recipe_low_precision_weights, tp_comm_overlapped

    def plan_row(run, recompute: str = "none", **extra):
        settings = dict(dtype=PRECISION[run["precision"]], framework="megatron", recompute=recompute,
                        low_precision_weights=recipe_low_precision_weights(run),  # FP8-CS: primary (its gather)
                        grad_dtype=run["recipe_memory"]["grad_dtype"])  # bf16: the recipe's buffer and DP wire
        if tp_comm_overlapped(run):
            settings["tp_comm_overlap"] = True
        return plan_published_row(run, **settings | extra)

    return plan_row


@pytest.mark.parametrize("row", [NVFP4, FP8_UB])
def test_plan_times_a_megatron_row_as_the_validation_does(published_rows, plan, row):
    """Same row, same layout: the plan's tokens/s/GPU is the validation mapping's (it was 0.75x slower
    on TP before: the planner charged all 8 collectives a layer, the mapping 6)."""
    from gpuplan.jobs.validation.published_throughput import predict_tokens_per_gpu_s

    run = published_rows[row]
    planned = plan(run)
    assert planned.tokens_per_second / planned.gpus_asked == pytest.approx(predict_tokens_per_gpu_s(run), rel=1e-9)


EMBEDDING = 1.0
"""Exposed RS + AG pairs a micro-batch of the vocabulary-parallel embedding on the first pipeline stage, in units of
one layer pair (the same [s, b, h] buffer): core/comm/embedding_tp.py, Megatron-Core's own VocabParallelEmbedding,
reduce-scatter forward and its all-gather backward; TE's overlap and userbuffers do not reach it, so it stays exposed
whatever --tp-overlap; at pp > 1 the first stage holds it and not the output layer, so --tp-overlap 0's synchronous
output layer, StepSettings.tp_synchronous, changes nothing here. test_the_embedding_is_one_exposed_pair_a_micro_batch
reads it from the plan's own collectives."""


def _layer_pairs(run, pairs_a_layer: int, exposed_share: float) -> float:
    """The layers' exposed RS + AG pairs a micro-batch on the first pipeline stage, in units of one pair. Llama 3 70B's
    80 layers over pp stages (vpp chunks included): 80 / pp a stage, ``pairs_a_layer`` each, of which
    ``exposed_share`` is exposed."""
    return 80 / run["layout"]["pp"] * pairs_a_layer * exposed_share


@pytest.mark.parametrize("row", [NVFP4, FP8_UB])
@pytest.mark.parametrize("tp_overlap", [None, 0.0])
def test_the_embedding_is_one_exposed_pair_a_micro_batch(published_rows, plan, row, tp_overlap):
    """EMBEDDING read from the step's own rows (core.comm.embedding_tp.embedding_output_costs): the embedding's row
    holds one call a micro-batch (global batch 256 / (dp x micro-batch 1): 256 / 8 = 32 on NVFP4, 256 / 2 = 128 on
    FP8), all exposed, whatever --tp-overlap; each call one RS + AG pair of the layers' buffer, the layers' row's
    seconds a call (4 pairs a layer: 32 x 20 x 4 = 2,560 calls, 128 x 10 x 4 = 5,120); the output layer's row 0 calls
    on this first stage (pp 4, 8). Exact up to float rounding (rel 1e-12)."""
    run = published_rows[row]
    lay = run["layout"]
    costs = plan(run, **({} if tp_overlap is None else {"tp_overlap": tp_overlap})).step.collectives
    layers, = (c for c in costs if c.parallelism == "TP" and c.collective.startswith("RS + AG (SP)"))
    embedding, = (c for c in costs if c.collective.startswith("embedding (vocab-parallel)"))
    output, = (c for c in costs if c.collective.startswith("output layer"))
    micro_batches = {NVFP4: 32, FP8_UB: 128}[row]
    assert micro_batches == lay["global_batch"] // (lay["dp"] * lay["micro_batch"])
    assert layers.calls == micro_batches * 80 / lay["pp"] * 4
    assert embedding.calls == micro_batches * EMBEDDING and output.calls == 0
    assert embedding.exposed == embedding.total > 0
    assert embedding.total / embedding.calls == pytest.approx(layers.total / layers.calls, rel=1e-12)


@pytest.mark.parametrize(("row", "exposed"), [(NVFP4, 0.75), (FP8_UB, 0.75 / 4)])
def test_the_default_leaves_three_quarters_of_the_tp_time_exposed(published_rows, plan, row, exposed):
    """2 of the 8 collectives a layer is charged hidden: 0.75 of the layers' TP time exposed; with userbuffers
    one chunk in tp of that, (1 - 0.25) / 4 at tp 4. The embedding's pair a micro-batch is exposed either way
    (EMBEDDING): NVFP4 (pp 4, 20 layers a stage, no userbuffers) --tp-overlap 0 = 80 + 1 pairs a micro-batch,
    the default 0.75 x 80 + 1 = 61; FP8 (pp 8, 10 layers, tp 4 userbuffers) 40 / 4 + 1 = 11 and 0.1875 x 40 + 1 = 8.5."""
    run = published_rows[row]
    default, all_exposed = plan(run).step.tp_comm, plan(run, tp_overlap=0.0).step.tp_comm
    chunks = run["layout"]["tp"] if row == FP8_UB else 1  # --tp-overlap 0: 1 or 1/tp of the layers' time exposed
    pair = all_exposed / (_layer_pairs(run, 4, 1 / chunks) + EMBEDDING)  # one RS + AG pair's seconds x micro-batches
    assert pair > 0 and default == pytest.approx((_layer_pairs(run, 4, exposed) + EMBEDDING) * pair, rel=1e-9)


def test_full_recompute_keeps_the_same_two_collectives_hidden(published_rows, plan):
    """Full recompute adds the re-run forward's 2 blocking pairs a layer (12 counted, not 8): TE still hides
    the same 2, so 10/12 of the layers' TP time is exposed (a fixed 0.25 would have left 9/12). The embedding's pair
    a micro-batch (core/comm/embedding_tp.py, EMBEDDING) is exposed either way and not re-run by recompute:
    20 layers x 6 pairs + 1 = 121 pairs with --tp-overlap 0, 10/12 x 120 + 1 = 101 by default."""
    run = published_rows[NVFP4]
    full, all_exposed = plan(run, "full").step.tp_comm, plan(run, "full", tp_overlap=0.0).step.tp_comm
    every, default = _layer_pairs(run, 6, 1.0) + EMBEDDING, _layer_pairs(run, 6, 10 / 12) + EMBEDDING
    assert (every, default) == pytest.approx((121, 101))
    assert full == pytest.approx(default / every * all_exposed, rel=1e-9)
    assert FRAMEWORKS["megatron"].tp_overlap_for("full") == pytest.approx(2 / 12)


def test_tp_overlap_goes_with_tp_comm_overlap(published_rows, plan):
    """Both given: (1 - tp_overlap) / tp of the layers' TP time exposed (tp 4: 0.5 / 4), + the embedding's exposed
    pair a micro-batch (core/comm/embedding_tp.py, EMBEDDING): pp 8, 10 layers x 4 pairs: 0.5 x 40 / 4 + 1 = 6
    pairs against 40 / 4 + 1 = 11."""
    run = published_rows[FP8_UB]
    half, none = plan(run, tp_overlap=0.5).step.tp_comm, plan(run, tp_overlap=0.0).step.tp_comm
    pairs_half, pairs_none = _layer_pairs(run, 4, 0.5 / 4) + EMBEDDING, _layer_pairs(run, 4, 1 / 4) + EMBEDDING
    assert (pairs_half, pairs_none) == pytest.approx((6, 11))
    assert half == pytest.approx(pairs_half / pairs_none * none, rel=1e-9)


def test_only_megatron_hides_tp_by_default():
    """TE's async dgrad reduce-scatter is Megatron-Core + TE's (megatron_ops.TE_HIDDEN_TP_SHARE's comment,
    docs/step.md 'TP as Transformer Engine runs it'); the other profiles' code does not run it. Llama 3.1 8B
    on 8 H100, tp 2 dp 4, mb 1 x 4,096 tokens, GBS 64: 16 micro-batches x 32 layers x 4 = 2,048 RS + AG
    pairs of 4,096 x 4,096 x 2 = 33,554,432 B. Every profile is charged all of them; megatron has
    16 x 32 x 2 = 1,024 reduce-scatters (QKV and fc1 dgrad) hidden. A 2-GPU ring RS moves half the buffer:
    at least 0.5 x 33,554,432 / 369e9 s = 45.47 us (h100-sxm.toml ring busbw 0.82 x 450 GB/s).
    Outside the layers (core/comm/embedding_tp.py), a micro-batch, the same buffer: the vocabulary-parallel
    embedding's RS + AG pair and the output layer's AG forward + RS of its input gradient backward, exposed on every
    profile (TE's overlap does not reach them) but megatron (Megatron-Core's output layer, megatron_loss set): there
    the backward re-gathers the input beside the dgrad GEMM and reduce-scatters beside the wgrad GEMM, each one pass
    of 4,096 x 2 x 128,256 x 4,096 / 2 = 2.152e12 FLOPs, >= 2.17 ms at the 989.4 TFLOP/s bf16 peak
    (h100-sxm.toml), far past a 57 us collective: only the forward AG is exposed.
    --framework hf and llmc have no tensor parallelism to hide (they refuse tp 2)."""
    from gpuplan.core.comm import collectives as K
    from gpuplan.core.parallel import ParallelLayout
    from gpuplan.errors import InputError
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.search import evaluator_for
    from gpuplan.planner.plan import evaluate_layout

    exposed = {}
    for name in FRAMEWORKS:
        fields = dict(model="llama-3.1-8b", tokens=1e12, gpu="h100", gpus=8, seq_len=4096, global_batch=64,
                      framework=name, tp=2, pp=1, cp=1, zero=1, micro_batch=1, recompute="none")
        if name in ("hf", "llmc"):  # data parallelism only (framework_rules)
            with pytest.raises(InputError) as err:
                PlanInputs(**fields)
            assert err.value.field == "tp"
            continue
        evaluator = evaluator_for(PlanInputs(**fields))
        layout = ParallelLayout(dp=4, tp=2, zero=1, micro_batch=1, global_batch=64)
        exposed[name] = float(evaluate_layout(evaluator, layout, "none", 64).step.tp_comm)
    group = evaluator.cluster.group(2, 1)
    reduce_scatter, all_gather = (float(K.collective_seconds(kind, 33_554_432.0, group))
                                  for kind in ("reduce_scatter", "all_gather"))
    assert reduce_scatter >= 0.5 * 33_554_432 / 369e9 == pytest.approx(45.47e-6, rel=1e-3)
    output_pass = 4_096 * 2 * 128_256 * 4_096 / 2 / 989.4e12  # a lower bound: the bf16 dense peak
    assert output_pass == pytest.approx(2.175e-3, rel=1e-3) and output_pass > 10 * max(reduce_scatter, all_gather)
    # the layers' 2,048 pairs + the embedding's 16 + the output layer's 16 (core/comm/embedding_tp.py)
    charged = 2_048 * (reduce_scatter + all_gather) + 16 * (reduce_scatter + all_gather) * 2
    megatron = charged - 1_024 * reduce_scatter - 16 * reduce_scatter  # the output layer keeps its forward AG alone
    assert exposed.pop("megatron") == pytest.approx(megatron, rel=1e-9)
    assert exposed == pytest.approx({"generic": charged, "torchtitan": charged, "deepspeed": charged}, rel=1e-9)


def _exposed_communication(run_cli, *flags) -> float:
    """`gpuplan train --full`'s 'exposed communication' seconds (One step by op class) for Llama 3.1 8B
    on 16 H100 at tp 4 with ``flags``."""
    import re

    code, out, err = run_cli("train", "--model", "llama-3.1-8b", "--gpu", "h100", "--gpus", "16", "--tokens", "1e9",
                             "--tp", "4", "--full", *flags)
    assert code == 0, err
    value, unit = re.search(r"^exposed communication\s+([0-9.]+) (m?s)\b", out, re.M).groups()
    return float(value) * (1e-3 if unit == "ms" else 1.0)


def test_the_cli_takes_both_overlaps(run_cli):
    """The layout train prints: dp 4 tp 4 mb 8 x 4,096 tokens, GBS 4,194,304 tokens = 1,024 sequences:
    32 micro-batches x 32 layers x 4 = 4,096 RS + AG pairs of 8 x 4,096 x 4,096 x 2 = 268,435,456 B, each
    RS or AG a 4-GPU ring moving 3/4 of it at 369 GB/s (h100-sxm.toml busbw) = 0.5456 ms at least, so the
    step's TP seconds T >= 4,096 x 2 x 0.5456 ms = 4.470 s (the bytes are 256 sequences a GPU whatever
    micro-batch train picks); NCCL's ring latency (microseconds a step,
    core.comm.collectives) adds well under 10% at 268 MB. Exposed = (1 - tp_overlap) / (tp with userbuffers,
    else 1) x T + the other collectives' D: 0.125 T + D both given, 0.5 T + D with --tp-overlap 0.5 alone,
    0.25 T + D at 0.75, so the first two printed figures differ by 0.375 T, the last two by 0.25 T."""
    both = _exposed_communication(run_cli, "--tp-overlap", "0.5", "--tp-comm-overlap")
    half = _exposed_communication(run_cli, "--tp-overlap", "0.5")
    three_quarters = _exposed_communication(run_cli, "--tp-overlap", "0.75")
    tp_seconds = (half - three_quarters) / 0.25
    assert (half - both) / (half - three_quarters) == pytest.approx(0.375 / 0.25, rel=0.01)  # printed to 4 digits
    assert 4.470 <= tp_seconds < 1.1 * 4.470
    assert both >= 0.125 * 4.470
