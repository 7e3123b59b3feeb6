"""SGLang's chunked prefill (request_path.chunk_budget, issue 38): a prompt longer than chunked_prefill_size is
prefilled in chunks of it, one extend forward each (managers/schedule_policy.py@v0.5.6:616-651 cuts a request
to the chunk; add_chunked_req, L545-566, gives each later round the next one), and each eager forward pays its own
host time, F + max(I, G) (first_token_path). The chunk is SGLang's default for the GPU's memory
(server_args.py@v0.5.6:725-806; engines.sglang_defaults): 16,384 on a B200, 8,192 on an 80 GB A100, 4,096 on a
40 GB A100. The validation rows (prompts <= 7,936 tokens) are under every chunk their GPUs take, so none moves.
"""

import pytest

from gpuplan.core.serving import request_path as RP
from gpuplan.jobs.validation import inference as VI

ROW = {"id": "chunk", "model": "qwen3-235b-a22b", "quantization": "bf16", "kv_dtype": "bf16", "tp": 8,
       "gpu": "b200", "concurrency": 1}


def _setup(release: str):
    row = {**ROW, "release": release}
    return VI._setup_of(row, VI._format(row))


def load_gpu(name: str):
    return VI._gpu(name)


def test_chunk_is_the_default_for_the_gpus_memory():
    sglang = _setup("sglang==0.5.6")
    assert RP.chunk_budget(sglang, load_gpu("b200")) == 16384
    assert RP.chunk_budget(sglang, load_gpu("a100-sxm4-80gb")) == 8192
    assert RP.chunk_budget(sglang, load_gpu("a100-sxm4-40gb")) == 4096
    # releases before 0.5.3: 8,192 (server_args.py@0.4.0 L171-175), 2,048 under 25,000 MiB from 0.3.6 (L173-174 there),
    # a flat 8,192 in 0.3.0-0.3.5 (review w11 r3 M4; None on the parent). No GPU or a static batch: no split modelled
    assert RP.chunk_budget(_setup("sglang==0.4.9"), load_gpu("b200")) == 8192
    assert RP.chunk_budget(_setup("sglang==0.4.9"), load_gpu("a100-sxm4-40gb")) == 8192
    for release, small in (("sglang==0.4.9", 2048), ("sglang==0.3.6", 2048), ("sglang==0.3.5", 8192)):
        assert RP.sglang_chunk_size(_setup(release).runtime.release, 24 * 2**30) == small  # a 24 GB L4 / A10
    assert RP.sglang_chunk_size(_setup("sglang==0.4.9").runtime.release, 25_000 * 2**20) == 8192
    # 20,000 tokens on sglang 0.4.9 are three forwards (8,192, 8,192, 3,616), as SGLang runs them
    assert RP.prefill_chunks(20000, 0, RP.split_budget(_setup("sglang==0.4.9"), load_gpu("b200"), 20000)) == (
        (0, 8192), (8192, 8192), (16384, 3616))
    assert RP.chunk_budget(sglang, None) is None
    assert RP.chunk_budget(sglang, load_gpu("b200"), batch=4) is None
    # the B200 rows' longest prompt, 7,936 tokens, is one forward; 19,000 are two: 16,384 then 2,616 after them
    assert RP.split_budget(sglang, load_gpu("b200"), 7936) is None
    assert RP.prefill_chunks(19000, 0, RP.split_budget(sglang, load_gpu("b200"), 19000)) == ((0, 16384), (16384, 2616))


def test_door_pays_the_host_time_of_each_chunk(run_json):
    """gpuplan infer --engine sglang==0.5.6, Qwen3-235B-A22B BF16 TP 8 on 8 B200, a 19,000-token prompt: two
    forwards, each issuing 94 layers x 20 launches (the q reshape's copy included: layer_kernels.qk_reshape_copies)
    x 41.957 us = 78.88 ms + 16.6 ms outside the layers, so the prefill's host issue time is 2 x 95.479 = 190.96 ms
    (one forward's, 95.5 ms, at 7,936 tokens)."""
    def issue(prompt: int) -> tuple[float, str]:
        report = run_json("infer", "--model", "qwen3-235b-a22b", "--gpu", "b200", "--gpus", "8", "--tp", "8",
                          "--engine", "sglang==0.5.6", "--quantization", "bf16", "--context", str(prompt + 1000),
                          "--output-tokens", "1000", "--batch", "1", "--no-search")
        line = next(x for s in report["sections"] for x in s["lines"] if x["key"] == "ttft_host_issue")
        return line["value"], line["formula"]

    one, _ = issue(7936)
    two, formula = issue(19000)
    assert one == pytest.approx(94 * 20 * 41.957e-6 + 16.6e-3, rel=1e-4)
    assert two == pytest.approx(2 * (94 * 20 * 41.957e-6 + 16.6e-3), rel=1e-4)
    assert formula.startswith("2 forwards (chunks) x 94 layers x 20.0 launches")
