"""scripts/graph_pages_device_check.py, the prepared GPU check for issue 38's TP rows (docs/inference.md,
'Tensor parallelism, read from the code'): its per-rank GEMM shapes worked by hand from the checkpoints'
config.json and vLLM's parallel linears, and its refusals on a machine without a GPU (it was not run on one)."""

import pytest

from gpuplan.catalog import load_model


@pytest.fixture(scope="module")
def D(load_script):
    return load_script("graph_pages_device_check")


def test_rank_gemms_by_hand(D):
    """Qwen2.5-7B (hidden 3,584, 28 query / 4 KV heads of 128, MLP 18,944) at TP 4: QKV (7 + 2 x 1) x 128 =
    1,152 wide, o_proj K 7 x 128 = 896, gate_up 2 x 4,736 = 9,472, down K 4,736; Llama-3.1-8B (4,096,
    32 / 8, 14,336) at TP 2: QKV (16 + 2 x 4) x 128 = 3,072, o_proj K 2,048, gate_up 14,336, down K 7,168."""
    assert D.rank_gemms("qwen2.5-7b", 4) == [("qkv", 1152, 3584), ("o_proj", 3584, 896),
                                             ("gate_up", 9472, 3584), ("down", 3584, 4736)]
    assert D.rank_gemms("llama-3.1-8b", 2) == [("qkv", 3072, 4096), ("o_proj", 4096, 2048),
                                               ("gate_up", 14336, 4096), ("down", 4096, 7168)]


def test_the_shapes_are_the_catalog_models(D):
    """The script's own shape table (it imports nothing from gpuplan, to run on a bare GPU machine) agrees
    with the catalog's specs."""
    for name, (hidden, heads, kv_heads, head_dim, inter) in D.MODELS.items():
        spec = load_model(name)
        a = spec.attention
        assert (spec.hidden_size, a.num_heads, a.num_kv_heads, a.head_dim, spec.mlp.intermediate_size) == (
            hidden, heads, kv_heads, head_dim, inter)


def test_refusals_without_a_gpu(D, capsys):
    """An unknown step is refused in one line with exit 2; on a machine without CUDA (this one) so is the
    check itself, instead of a traceback."""
    assert D.main(["nodes"]) == 2 and "need pages, lazy or both" in capsys.readouterr().out
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present: the check would run")
    assert D.main(["pages"]) == 2 and "needs a CUDA GPU" in capsys.readouterr().out
