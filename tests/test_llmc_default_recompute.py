"""review_w11_r1 SHOULD: `gpuplan memory --framework llmc` without --recompute takes llm.c's own default, -r 1
(train_gpt2.cu@f1e2ace L1449 `int recompute = 1;`, usage L1406 "(default = 1)"), gpuplan's selective (the GELU output
recomputed in backward), and says so in the recompute assumption; before, it took none (-r 0) silently."""

import json

MEMORY = ("memory", "gpt2-large", "--framework", "llmc", "--gpu", "a100-sxm4-80gb", "--gpus", "8", "--micro-batch", "8",
          "--json")


def _memory(run_cli, *extra):
    code, out, err = run_cli(*MEMORY, *extra)
    assert code == 0, err
    return json.loads(out)


def test_unstated_recompute_is_llmcs_minus_r_1(run_cli):
    default, selective, none = _memory(run_cli), _memory(run_cli, "--recompute", "selective"), _memory(run_cli,
                                                                                                    "--recompute", "none")
    peak = lambda r: r["results"]["peak_allocated"]  # noqa: E731
    assert peak(default) == peak(selective)
    # -r 1 keeps one 4C fch_gelu buffer instead of one a layer: 35 x 8,192 x 5,120 x 2 B less (L243)
    assert peak(none) - peak(default) == 35 * 8 * 1024 * 4 * 1280 * 2
    text = json.dumps(default["assumptions"])
    assert "not given: its default -r 1 (train_gpt2.cu@f1e2ace L1406, L1449)" in text


def test_other_frameworks_keep_none(run_cli):
    code, out, err = run_cli("memory", "gpt2-large", "--framework", "megatron", "--gpus", "8", "--json")
    assumptions = json.loads(out)["assumptions"]
    recompute = next(a for a in assumptions if a.get("key", a.get("name")) == "recompute")
    assert recompute["value"] == "none"
