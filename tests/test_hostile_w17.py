"""Hostile inputs, wave 17 (2026-12-06, helper A2). Swept by scripts outside the suite (in-process
`gpuplan.cli.main` under a SIGALRM time box, the web app through its TestClient, the Python API), on a snapshot of
HEAD so other helpers' edits in the shared tree did not mix in: every numeric option of train / infer at unit-suffixed
and odd spellings ("2T", "1.5e3", "10%", "2 days", "5ms", "0x10", "1_000", "-0", "1e308", "nan", " 4 ", an Arabic
digit: 1,152 asks), 47 model config.json files (missing keys, heads not dividing hidden, zero / 1e12 layers, negative
vocab, top-k above the experts, strings for ints, 50 MB, a folder, /dev/zero, a FIFO, a symlink loop) through train
and infer, 30 path-like values of every path-carrying field through the five web routes (no file opened), and
every pair of 53 train options on a dense and an MoE Megatron ask (about 2,700 pairs) and of 48 infer options on a
single ask and an --rps sizing, each pair compared with its two halves: an option whose answer is byte-identical
with and without it, where alone it changes the answer, is one the pair ignores.

Found: (1) the refusal of --graph-layer-us on a release that captures no CUDA graph said "sizes CUDA-graph memory"
(the words of --cuda-graph-gib) when the value was 0.
"""

import pytest
from helpers import four_door_refusal

pytestmark = pytest.mark.usefixtures("time_box")  # conftest: a hang fails the case, not the suite

SERVE = {"model": "llama-3-8b", "gpu": "h100"}


# ---- (1) the graph-layer refusal names what its own field does --------------------------------------------------------

@pytest.mark.parametrize("field, value, words", [("graph_layer_us", 0, "times CUDA-graph steps"),
                                                 ("graph_layer_us", 4, "times CUDA-graph steps"),
                                                 ("cuda_graph_gib", 5, "sizes CUDA-graph memory")])
def test_1_graph_refusal_on_an_eager_release_says_what_the_refused_field_does(run_cli, client, tmp_path, field, value,
                                                                              words):
    """jobs/inference/schema.py@2f672342 chose the words by `self.graph_layer_us` being non-zero, so
    `--graph-layer-us 0` on trtllm==0.9 (no CUDA graphs before TensorRT-LLM 1.0) read "sizes CUDA-graph memory",
    --cuda-graph-gib's line; now by the field refused."""
    web = four_door_refusal(run_cli, client, tmp_path, "infer", "inference",
                            {**SERVE, "engine": "trtllm==0.9", field: value}, field,
                            f"{words}, and trtllm==0.9 captures none (every step eager)")
    other = "sizes CUDA-graph memory" if words == "times CUDA-graph steps" else "times CUDA-graph steps"
    assert other not in web
