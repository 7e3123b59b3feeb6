"""torchtitan's op-level SAC per release: one wqkv linear (3396a4b37 on, the 0.3.0 profile) or wq, wk, wv
(the published rows' releases, 2024-2025). The policy recomputes every second aten.mm of a layer in forward
order (parallelisms/parallelize_llama.py@9dec370 L253-258; distributed/activation_checkpoint.py@b5bcd76
L258-272), so the form moves which matmuls are re-run (time) and which outputs are saved (memory).

Hand-worked figures (forward order; FLOPs per token / 2 and saved elements per token in units of h):
- Llama-3-8B (h 4096, 32 heads, 8 kv heads, ffn 14336 = 3.5h): q h, k 0.25h, v 0.25h, wo h, w1 w3 w2 3.5h
  each (x h FLOPs). Fused: re-run wo + w3 = 4.5 of 13 = 34.6%; separate: wk + wo + w3 = 4.75 / 13 = 36.5%.
  Saved (bf16): fused wqkv 1.5h + w1 3.5h + w2 h = 6h -> 12h B, separate wq h + wv 0.25h + w1 + w2 = 5.75h
  -> 11.5h B; + attention output 2h B + fp32 logsumexp 4 x 32 B: 14h + 128 and 13.5h + 128.
- Llama-2-13B (h 5120, 40 heads, no GQA, ffn 13824 = 2.7h): q k v wo h each, w1 w3 w2 2.7h.
  Fused: (1 + 2.7) / 12.1 = 30.6%; separate: (1 + 1 + 2.7) / 12.1 = 38.8%.
  Saved: fused 2 x (3 + 2.7 + 1)h + 2h + 160 = 15.4h + 160; separate 2 x (1 + 1 + 2.7 + 1)h + 2h + 160
  = 13.4h + 160.
- Llama-3-70B (h 8192, 64 heads, 8 kv heads, ffn 28672 = 3.5h): q h, k v 0.125h, wo h, MLP 3 x 3.5h.
  Fused: 4.5 / 12.75 = 35.3%; separate: 4.625 / 12.75 = 36.3%.
  Saved: fused 2 x (1.25 + 3.5 + 1)h + 2h + 256 = 13.5h + 256; separate 2 x (1 + 0.125 + 3.5 + 1)h + 2h
  + 256 = 13.25h + 256.
Measured on torchtitan 0.3.0's own code (scripts/measure_frameworks.py's harness with
_build_llama3_layers(fuse_qkv=False), Llama-3.1-8B, s 8192, SelectiveAC; docs/memory.md): FSDP 8, mb 2
13.5·sbh (fused 14.0); FSDP 4 x TP 2, mb 1 9.75·sbh (fused 10.0).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from helpers import published_rows_by_id

from gpuplan.core import frameworks as F
from gpuplan.core.memory.recompute import op_sac_recomputed_share

MIRROR = Path(os.environ.get("GPUPLAN_TORCHTITAN_GIT", "/work/.mirror/pytorch+torchtitan/repo"))
"""A git directory of pytorch/torchtitan (any clone or bare mirror that holds b5bcd76): GPUPLAN_TORCHTITAN_GIT,
else the workstation mirror; absent, the history test skips and core.frameworks' docstrings carry its results."""


def _spec(name: str):
    from gpuplan.adapters.resolve import resolve_model

    return resolve_model(name)


@pytest.mark.parametrize("model, fused, separate", [
    ("llama-3.1-8b", 4.5 / 13, 4.75 / 13),
    ("llama-2-13b", 3.7 / 12.1, 4.7 / 12.1),
    ("llama-3.1-70b", 4.5 / 12.75, 4.625 / 12.75),
])
def test_recomputed_share_by_qkv_form(model, fused, separate):
    spec = _spec(model)
    assert op_sac_recomputed_share(spec, fused_qkv=True) == pytest.approx(fused, rel=1e-9)
    assert op_sac_recomputed_share(spec, fused_qkv=False) == pytest.approx(separate, rel=1e-9)


def test_recomputed_share_rounded_figures():
    """The percentages the docs quote (docs/step.md, the op-level SAC table), to 0.1 point: the rows are read from
    the file, so the test fails when the table and the model part."""
    table = (Path(__file__).resolve().parents[1] / "docs" / "step.md").read_text(encoding="utf-8")
    assert "| Llama-3-8B (h 4096, GQA 32/8, ffn 3.5h) | 4.5 / 13 = 34.6% | 4.75 / 13 = 36.5% |" in table
    assert "| Llama-2-13B (h 5120, no GQA, ffn 2.7h) | 3.7 / 12.1 = 30.6% | 4.7 / 12.1 = 38.8% |" in table
    assert op_sac_recomputed_share(_spec("llama-3.1-8b"), True) == pytest.approx(0.346, abs=5e-4)
    assert op_sac_recomputed_share(_spec("llama-3.1-8b"), False) == pytest.approx(0.365, abs=5e-4)
    assert op_sac_recomputed_share(_spec("llama-2-13b"), True) == pytest.approx(0.306, abs=5e-4)
    assert op_sac_recomputed_share(_spec("llama-2-13b"), False) == pytest.approx(0.388, abs=5e-4)


@pytest.mark.parametrize("model, h, fused_sbh, separate_sbh, lse", [
    ("llama-3.1-8b", 4096, 14.0, 13.5, 4 * 32),
    ("llama-2-13b", 5120, 15.4, 13.4, 4 * 40),
    ("llama-3.1-70b", 8192, 13.5, 13.25, 4 * 64),
])
def test_saved_bytes_by_qkv_form(model, h, fused_sbh, separate_sbh, lse):
    spec = _spec(model)
    assert F.op_sac_bytes_per_token(spec, 2, 1, fused_qkv=True) == pytest.approx(fused_sbh * h + lse, rel=1e-12)
    assert F.op_sac_bytes_per_token(spec, 2, 1, fused_qkv=False) == pytest.approx(separate_sbh * h + lse, rel=1e-12)


def test_saved_bytes_separate_under_tp2():
    """Llama-3-8B, tp 2 with sequence parallel, separate q/k/v: wq 0.5h, wv 0.125h, w1 1.75h (column-
    parallel, sharded) + w2 h (row-parallel partial sum, full size) = 3.375h elements -> 6.75h B; attention
    (2h + 128) / 2; the two reduce-scatter outputs 2 x 2h / 2 = 2h: 9.75h + 64 (fused: 10h + 64)."""
    spec = _spec("llama-3.1-8b")
    assert F.op_sac_bytes_per_token(spec, 2, 2, fused_qkv=False) == pytest.approx(9.75 * 4096 + 64, rel=1e-12)
    assert F.op_sac_bytes_per_token(spec, 2, 2, fused_qkv=True) == pytest.approx(10 * 4096 + 64, rel=1e-12)


def test_framework_default_and_override():
    llama, phi3 = _spec("llama-3.1-8b"), _spec("phi-3-mini-4k")
    assert not llama.fused_qkv and phi3.fused_qkv  # transformers: LlamaAttention q/k/v_proj, Phi3 qkv_proj
    assert F.op_sac_fused_qkv(llama, "torchtitan") is True  # 0.3.0: fuse_qkv=True
    assert F.op_sac_fused_qkv(llama, "hf") is False and F.op_sac_fused_qkv(phi3, "hf") is True
    assert F.op_sac_fused_qkv(llama, "torchtitan", False) is False  # a release's form wins


def test_release_placement():
    assert F.torchtitan_fuses_qkv("") is True  # the profile's release
    assert F.torchtitan_fuses_qkv("torchtitan 0.3.0") is True
    assert F.torchtitan_fuses_qkv("main as of 2025-01-27") is False
    assert F.torchtitan_fuses_qkv("main as of 2026-07-01") is True
    for label in ("torchtitan @9dec370 (torch 1963fc8, torchao eab345c; FSDP2) + torch.compile",
                  "torchtitan 9dec370 (2024-12-26), torch 1963fc8 (2024-12-23), torchao eab345c",
                  "torchtitan @3faaa1a (FSDP2)", "torchtitan e7c0cae (2025-06-13), torch 2.8.0a0",
                  "torchtitan @820504e (AsyncTP)", "torchtitan @1ea476e (FSDP2)"):
        assert F.torchtitan_fuses_qkv(label) is False, label
    assert F.torchtitan_fuses_qkv("torchtitan @b5bcd76") is True
    assert F.torchtitan_fuses_qkv("torchtitan @3396a4b37dc106c2") is True
    with pytest.raises(ValueError, match="3396a4b"):
        F.torchtitan_fuses_qkv("torchtitan @abcdef1 (FSDP2)")


def _published_titan_labels() -> list[str]:
    from gpuplan.jobs.validation.published_memory import published_rows
    from gpuplan.jobs.validation.published_throughput import published_throughput_rows

    labels = [r["framework"] for r in published_throughput_rows() if r["family"].startswith("torchtitan")]
    labels += [r["framework_version"] for r in published_rows() if r["framework"] == "torchtitan"]
    return labels


def test_every_published_torchtitan_row_is_placed():
    """Each published torchtitan row names a commit the release table places (no ValueError), and all of
    them predate 3396a4b37: 35 + 4 throughput and 23 memory rows, at 9dec370, 3faaa1a, 820504e, e7c0cae or
    'main as of' a date before 3396a4b37's (2026-06-24): the 4 IBM / Meta rows (wave 7) name no commit, only
    their blog's date, 2024-11-25."""
    labels = _published_titan_labels()
    dated = sorted(label for label in labels if "main as of" in label)
    commits = {re.search(r"torchtitan @?([0-9a-f]{7})", label).group(1) for label in labels if label not in dated}
    assert commits == {"9dec370", "3faaa1a", "820504e", "e7c0cae"}
    assert dated == [
        "main as of 2025-01-27", "main as of 2025-01-27", "main as of 2025-10-15"] + [  # before 2026-06-24
        "torchtitan main as of 2024-11-25 (the blog's date; commit not stated; FSDP2) + torch.compile"] * 4
    assert len(labels) == 35 + 4 + 23
    assert not any(F.torchtitan_fuses_qkv(label) for label in labels)


@pytest.mark.skipif(not MIRROR.is_dir() or shutil.which("git") is None, reason="pytorch/torchtitan mirror absent (set GPUPLAN_TORCHTITAN_GIT)")
def test_release_table_matches_the_history():
    """git merge-base --is-ancestor 3396a4b37 COMMIT: false for the separate releases, true for the fused."""
    def after(commit: str) -> bool:
        run = subprocess.run(["git", "-C", str(MIRROR), "merge-base", "--is-ancestor", "3396a4b37", commit],
                             capture_output=True)
        assert run.returncode in (0, 1), run.stderr
        return run.returncode == 0

    assert not any(after(c) for c in F.TORCHTITAN_SEPARATE_QKV_RELEASES)
    assert all(after(c) for c in F.TORCHTITAN_FUSED_QKV_RELEASES)


def test_step_recompute_follows_the_setting():
    """recompute_seconds_per_token with 1 s of matmuls and no elementwise work is the share itself; None
    takes the spec's form (HF Llama: separate)."""
    from gpuplan.core.memory.recompute import ForwardRates, recompute_seconds_per_token
    from gpuplan.core.time.step import StepSettings

    spec = _spec("llama-3.1-8b")
    rates = ForwardRates(1.0, 0.0, 0.0, 1.0)

    def seconds(fused):
        settings = StepSettings(recompute="selective", selective="op-sac", op_sac_fused_qkv=fused)
        return recompute_seconds_per_token(spec, settings, rates, forward=2.0, matmuls=1.0, elementwise=0.0,
                                           stage_layers=32)

    assert seconds(True) == pytest.approx(4.5 / 13, rel=1e-9)
    assert seconds(False) == pytest.approx(4.75 / 13, rel=1e-9)
    assert seconds(None) == pytest.approx(4.75 / 13, rel=1e-9)


def test_memory_follows_the_setting():
    """Llama-3.1-8B under torchtitan, seq 8192, one sequence, dp 8 FSDP: the separate form saves 0.5h B a
    token and layer less, 0.5 x 4096 x 8192 x 32 = 536,870,912 B of activations."""
    from gpuplan.core.memory import training as M
    from gpuplan.core.parallel import ParallelLayout

    spec = _spec("llama-3.1-8b")
    layout = ParallelLayout(dp=8, zero=3, micro_batch=1, global_batch=8)
    base = M.MemorySettings(seq_len=8192, recipe="fsdp2", framework="torchtitan", implementation="torchtitan",
                            recompute="selective")
    default = M.stage_memory_parts(spec, layout, base, 0).activations
    fused = M.stage_memory_parts(spec, layout, replace(base, op_sac_fused_qkv=True), 0).activations
    separate = M.stage_memory_parts(spec, layout, replace(base, op_sac_fused_qkv=False), 0).activations
    assert float(default) == float(fused)  # the profile's 0.3.0
    assert float(fused) - float(separate) == pytest.approx(0.5 * 4096 * 8192 * 32, rel=1e-9)


def test_published_rows_run_their_release():
    """A 9dec370 op-SAC row is timed with wq, wk, wv: more recomputed than with one wqkv."""
    from gpuplan.jobs.validation.published_throughput import predicted_step

    run = published_rows_by_id()["torchtitan-2412-llama-3.1-8b-8g-fsdp"]
    assert run["layout"].get("recompute") in ("selective", "op-sac") and "9dec370" in run["framework"]
    as_published = predicted_step(run).total
    assert as_published == pytest.approx(predicted_step(run, op_sac_fused_qkv=False).total, rel=1e-12)
    assert as_published > predicted_step(run, op_sac_fused_qkv=True).total
