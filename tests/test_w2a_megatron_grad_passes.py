"""H1's small executed terms, charged wherever Megatron-Core runs them (issue 37, wave 12 W2-A): the untied
embedding's dense gradient added into main_grad, the per-token loss's gradient scaling
(core.time.megatron_grad_passes; the unfused bias-dropout-add: tests/test_w2a_unfused_bda.py). Hand-worked numbers."""

import pytest
from helpers import row_step_settings

from gpuplan.adapters.resolve import resolve_model
from gpuplan.catalog import load_accelerator
from gpuplan.core.comm.topology import cluster_for
from gpuplan.core.time import megatron_grad_passes as MG
from gpuplan.core.time.memory_kernels import HBM_STREAM_EFFICIENCY, KERNEL_FIXED_SECONDS
from gpuplan.core.time.step import StepSettings, step_time


@pytest.fixture(scope="module")
def models():
    return {name: resolve_model(name) for name in ("gpt-oss-120b", "llama-3-8b")}


def test_embedding_gradient_bytes_by_hand(models):
    oss = models["gpt-oss-120b"]
    # 201,088 x 2,880 = 579,133,440 elements; zeros 2 + read 2 + main grad read and written 2 x 2 (bf16) = 8 B:
    # 4.63 GB a micro-batch (docs/step.md, GPT-OSS seventh pass: "8 B x 579M = 4.6 GB")
    assert MG.embedding_grad_bytes(oss, 1, 2.0) == 579_133_440 * 8
    assert MG.embedding_grad_bytes(oss, 4, 4.0) == 579_133_440 * 12 / 4  # fp32 main grad, vocabulary over tp 4
    settings = StepSettings(embedding_grad_add=True, grad_comm_bytes=2.0)
    b200 = load_accelerator("b200").memory_bandwidth
    expected = 2 * KERNEL_FIXED_SECONDS + 579_133_440 * 8 / (b200 * HBM_STREAM_EFFICIENCY)
    assert MG.embedding_grad_seconds(oss, settings, 1, b200) == pytest.approx(expected, rel=1e-12)
    assert expected == pytest.approx(0.666e-3, abs=0.001e-3)  # 4.63 GB at 0.89 x 8 TB/s + 2 kernels; x 5 micro-batches: 3.3 ms (H1)
    assert MG.embedding_grad_seconds(oss, StepSettings(), 1, b200) == 0.0  # not Megatron's DDP


def test_loss_scale_by_hand():
    # 1e9 local parameters in a bf16 buffer: read + write 2 x 2 B = 4e9 B, two buffers' kernels
    bw = 8e12
    on = StepSettings(per_token_loss=True, grad_comm_bytes=2.0)
    assert MG.loss_scale_seconds(on, 1e9, bw) == pytest.approx(2 * KERNEL_FIXED_SECONDS + 4e9 / (bw * 0.89))
    assert MG.loss_scale_seconds(StepSettings(), 1e9, bw) == 0.0


def test_step_charges_the_embedding_each_micro_batch(models):
    llama, cluster = models["llama-3-8b"], cluster_for(load_accelerator("b200"))
    kw = dict(dp=8, micro_batch=1, micro_batches=8, zero=1)
    off = step_time(llama, cluster, StepSettings(seq_len=8192, grad_comm_bytes=4.0), **kw)
    on = step_time(llama, cluster, StepSettings(seq_len=8192, grad_comm_bytes=4.0, embedding_grad_add=True), **kw)
    # 128,256 x 4,096 x (2 + 2 + 2 x 4) B = 6.30 GB a micro-batch, eight of them
    one = 2 * KERNEL_FIXED_SECONDS + 128_256 * 4096 * 12 / (cluster.gpu.memory_bandwidth * HBM_STREAM_EFFICIENCY)
    assert on.compute - off.compute == pytest.approx(8 * one, rel=1e-9)
    kw["zero"] = 3  # Megatron FSDP: not this hook
    assert step_time(llama, cluster, StepSettings(seq_len=8192, grad_comm_bytes=4.0, embedding_grad_add=True),
                     **kw).compute == step_time(llama, cluster, StepSettings(seq_len=8192, grad_comm_bytes=4.0), **kw).compute


@pytest.mark.parametrize("row, embedding, per_token", [
    ("mbridge-26.04.01-gpt-oss-120b-b200-64g-bf16", True, True),  # Bridge v0.4.2: gpt_oss.py L193
    ("mbridge-25.11-gpt-oss-120b-b200-64g-bf16", True, False),  # v0.2.2: no per-token loss yet
    ("mbridge-25.09-llama-3-8b-b200-8g-fp8cs", True, False),  # every Megatron DDP row: the embedding's add
    ("nemo2407-llama-2-7b-h100-8g", False, False),  # Apex's optimizer: not Megatron DDP's hook
])
def test_rows_take_the_terms_their_code_runs(monkeypatch, published_rows, row, embedding, per_token):
    s = row_step_settings(monkeypatch, published_rows[row])
    assert (s.embedding_grad_add, s.per_token_loss) == (embedding, per_token)
