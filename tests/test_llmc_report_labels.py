"""review_w11_r1 NOTE (llmc report labels): under --framework llmc the memory lines of memory, train and plan say
what llm.c does (every buffer allocated once with cudaMalloc, train_gpt2.cu@f1e2ace L155, L265, L370-408: reserved
= allocated), not "PyTorch tensors" / "caching allocator" / "allocated x 1.00"; other frameworks keep theirs."""

import pytest

LLMC = ("gpt2-large", "--framework", "llmc", "--gpu", "a100-sxm4-80gb", "--gpus", "8")


@pytest.mark.parametrize("args", [("memory", *LLMC, "--micro-batch", "8", "--full"),
                                  ("train", "--model", *LLMC, "--tokens", "1e10", "--mfu", "predicted", "--full"),
                                  ("plan", *LLMC, "--tokens", "1e10", "--full")])
def test_llmc_reports_say_cudamalloc_once(run_cli, args):
    code, out, err = run_cli(*args)
    assert code == 0, err
    assert "PyTorch tensors" not in out and "peak (caching allocator)" not in out and "allocated x 1.00" not in out
    assert "reserved peak (no caching allocator)" in out and "llm.c cudaMallocs each buffer once" in out


def test_other_frameworks_keep_the_caching_allocator_labels(run_cli):
    code, out, err = run_cli("memory", "gpt2-large", "--framework", "megatron", "--gpus", "8")
    assert "allocated peak (PyTorch tensors)" in out and "reserved peak (caching allocator)" in out
