"""What a streamed vLLM request crosses before its first token, beyond one prefill forward.

Units: tokens, seconds. Read from the vLLM sdists of 0.9.1, 0.11.0 and 0.23.0 (PyPI vllm-X.tar.gz).

Modelled here: chunked prefill. The V1 engine (0.8 on, releases.VLLM_V1_SINCE) always chunks
(engine/arg_utils.py@v0.9.1:1522-1523 'V1 always uses chunked prefills'): the scheduler gives a
waiting request min(its uncached tokens, the step's token budget) new tokens
(v1/core/sched/scheduler.py@v0.9.1:396-406; @v0.11.0:423-437; @v0.23.0:684-699) and a running one
the rest the same way, one engine step each (@v0.9.1:185-206). The budget is max_num_batched_tokens;
``vllm serve`` (usage context OPENAI_API_SERVER) defaults it to 8,192 on GPUs of >= 70 GiB that are
not A100s, else 2,048 (@v0.9.1:1554-1566; @v0.23.0:1605-1623; releases.vllm_batch_defaults). A partial
prefill samples nothing, so the first token waits for every chunk: each chunk a forward of its new
tokens attending to the cached prefix plus themselves (the chunk's causal attention = the causal
attention of prefix + chunk less that of the prefix, roofline.causal_attention_flops), with its
own weight read, host and scheduler time. A 16,000-token prompt on an A100 is 8 steps (7 x 2,048 + 1,664).

Modelled here too: the API server's tokeniser batch window (TOKENIZER_BATCH_WAIT_S), a wait the code
sets, from 0.10.0; and vLLM 0.11.0's chat endpoint parsing its chat template again for every request
(CHAT_TEMPLATE_REPARSE_S, chat_template_seconds).

Read and not modelled (no public measurement sizes it for these releases; docs/inference.md 'The
request path outside the forward'):
- the client: ``vllm bench serve`` / benchmark_serving time TTFT to the first streamed chunk that has
  ``choices``, text possibly empty (benchmarks/backend_request_func.py@v0.9.1:309-321; vllm/benchmarks/
  lib/endpoint_request_func.py@v0.11.0:309-319 for the chat endpoint). The chat endpoint's first such
  chunk is the role chunk (delta role 'assistant', content ''), sent on the first engine output
  (entrypoints/openai/serving_chat.py@v0.11.0:574-619), so both endpoints time the first sampled token.
- the API server renders the chat template in its own process, AsyncLLM sends the request to the
  EngineCore process over ZMQ (msgpack), the EngineCore blocks on its input queue when idle and wakes at
  once, the output comes back the same way and the output processor detokenises it incrementally before
  the SSE chunk is written. Public sizes of these stages are each under 1 ms (docs/inference.md); they
  do not add up to the 20-50 ms the concurrency-1 rows leave unexplained. The API server's tokenising of
  the prompt is not among them: it grows with the prompt (1.4 us a token, 11.2 ms at 8,000 tokens) and is
  costed (prompt_tokenize.tokenize_seconds, in server_hold_seconds).
- async scheduling (default from 0.14, kernels.host_step_seconds): the first token is returned once the
  prefill's sampled token is back, after the next step has been queued (v1/engine/core.py@v0.23.0:
  504-560 step_with_batch_queue: queue of 2, block on the oldest), so it adds no GPU time to TTFT.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Sequence

import numpy as np

from gpuplan.core.hardware import Accelerator
from gpuplan.core.serving.engines import sglang_defaults
from gpuplan.core.serving.forward_time import StepTime
from gpuplan.core.serving.prompt_tokenize import tokenize_seconds
from gpuplan.core.serving.releases import VLLM_V1_SINCE, EngineRelease
from gpuplan.core.serving.setup import Runtime, ServingSetup

MICROBATCH_TOKENIZER_SINCE = (0, 10, 0)
"""The first vLLM release whose OpenAI server tokenises through AsyncMicrobatchTokenizer (vllm/utils/
__init__.py@v0.10.0:521; absent from 0.9.2, whose server tokenises in a one-thread pool at once:
entrypoints/openai/serving_engine.py@v0.9.1:223-227 make_async). Read in 0.10.0, 0.10.1(.1), 0.10.2,
0.11.0 (serving_engine.py@v0.11.0:265-274, 553-582: the chat endpoint's text prompt, via
_tokenize_prompt_input_async L692-723; entrypoints/renderer.py@v0.11.0:367-373: the completions
endpoint) and 0.23.0 (renderers/base.py@v0.23.0:149-155, 434-442, reached from render_cmpl_async L954-969
and the chat renderer L1025-1043); later releases taken to keep it."""
TOKENIZER_BATCH_WAIT_S = 0.002
"""AsyncMicrobatchTokenizer's batch_wait_timeout_s default (utils/__init__.py@v0.11.0:477,
utils/async_utils.py@v0.23.0:36), which every reader above keeps: its encode loop takes a prompt, then
waits until the window closes for more prompts to tokenise with it (_batch_encode_loop,
utils/__init__.py@v0.11.0:529-551, async_utils.py@v0.23.0:90-112: asyncio.wait_for(queue.get(), deadline
- now) until TimeoutError) before it tokenises. A request alone (concurrency 1) waits the whole 2 ms;
under load a later arrival closes a batch sooner, so 2 ms is its most."""


VLLM_CACHE_BLOCK_TOKENS = 16
"""vLLM's KV block on CUDA when --block-size is not given (platforms/cuda.py@v0.9.1:139-140): V1's prefix cache
hits whole blocks only (v1/core/kv_cache_manager.py@v0.9.1:163-173 find_longest_cache_hit up to prompt - 1)."""


def warm_first_request_cached(release: EngineRelease, prompt: int) -> int:
    """Tokens of a run's first measured request that its server finds in its prefix cache when the engine's
    own benchmark client drove the run: that client sends the run's first prompt once before it starts the
    clock, and the server keeps it. SGLang: bench_serving's warm-up sends input_requests[0] (bench_serving.py
    @v0.5.6:1886-1940, no /flush_cache unless SGLANG_IS_IN_CI or --flush-cache, L1953-1955) and the radix cache
    is on (server_args.py@v0.5.6:483 disable_radix_cache False); a prompt matches up to its length less one
    (managers/schedule_batch.py@v0.5.6:784-790): prompt - 1 (pages of 1, the default, L1480-1481; a backend's
    pages of 32-128 round the match down by under a page, left out: that step stays host-bound). vLLM V1 (0.8
    on): the client's 'initial single prompt test run' sends input_requests[0] (benchmarks/benchmark_serving.py
    @v0.9.1:299-327; vllm/benchmarks/serve.py@v0.11.0:508-547 and @v0.23.0:675-720, the endpoint ready check)
    and V1 enables prefix caching by default (engine/arg_utils.py@v0.9.1:1525-1527; config/cache.py@v0.23.0:92):
    whole blocks of VLLM_CACHE_BLOCK_TOKENS below the prompt's last token. 0 for other engines and vLLM V0
    (prefix caching off by default)."""
    if prompt <= 1:
        return 0
    if release.engine == "sglang":
        return prompt - 1
    if release.engine == "vllm" and release.version >= VLLM_V1_SINCE:
        return (prompt - 1) // VLLM_CACHE_BLOCK_TOKENS * VLLM_CACHE_BLOCK_TOKENS
    return 0


def prefill_chunks(prompt: int, cached: int, budget: int) -> tuple[tuple[int, int], ...]:
    """(cached prefix, new tokens) of each engine step that prefills a ``prompt``-token request of
    which ``cached`` tokens hit the prefix cache, at ``budget`` tokens a step (max_num_batched_tokens):
    the V1 scheduler's min(remaining, budget) per step. A fully cached prompt still computes its last
    token (one step of 1, as roofline.prefill_step counts it). prefill_chunk_runs' chunks one by one: the one
    chunking rule."""
    return tuple((int(prefix), new) for new, prefixes in prefill_chunk_runs(prompt, cached, budget)
                 for prefix in prefixes)


CHAT_TEMPLATE_REPARSE_RELEASES = ((0, 11, 0), (0, 11, 1))
"""[first, first fixed) vLLM releases whose chat endpoint parses the chat template for every request.
0.11.0 added resolve_chat_template_kwargs (vllm PR 25794, the chat_template_kwargs filter of advisories
GHSA-6fvq-23cw-5628 / GHSA-4hw3-g54f-xfrj): it builds a new jinja2 ImmutableSandboxedEnvironment, parses
the template and runs jinja2.meta.find_undeclared_variables over it (entrypoints/chat_utils.py@v0.11.0:
1575-1599), called by apply_hf_chat_template for every request (L1627-1631; from _preprocess_chat,
entrypoints/openai/serving_engine.py@v0.11.0:791-796, on the server's event loop, before the prompt is
tokenised). 0.10.2 has no such call (its chat_utils.py parses only inside the lru_cached content-format
detection, L392); 0.11.1 caches the parse (_cached_resolve_chat_template_kwargs = lru_cache(...),
entrypoints/chat_utils.py@v0.11.1:1523-1535, 1578), as does 0.23.0 (renderers/hf.py@v0.23.0:606-617, 663).
The completions endpoint renders no template."""
CHAT_TEMPLATE_REPARSE_S = 0.011
"""Seconds one such parse takes: 0.11.0's resolve_chat_template_kwargs run on a 4,169-character
Qwen3-style template (ChatML, tools and <think> branches) in CPython 3.11 with jinja2 3.1.6 on gpuplan's
build host (AMD EPYC, 2 vCPUs): median 11.1 / 11.2 ms, min 10.4-10.7 ms of 60 calls, two runs; 10.8-11.3 ms
median for vLLM's 5,255-character Llama-3.1 tool template (examples/tool_chat_template_llama3.1_json.jinja).
The parse alone is 4.0-4.5 ms of it, find_undeclared_variables (a full code-generation pass) the rest.
Public cross-check, outside the validation rows: vllm PR 20065 (2025-06) measured the parse of the
uncached content-format detection at 6-8 s over 1,000 chat requests (6-8 ms a request, a Llama template,
host not stated), 1.4-1.8x the 4.4 ms the same parse takes here; that host would take ~15-19 ms for the
0.11.0 call. The build host's value is taken (the lower); a server CPU's single-thread speed moves it."""


def chat_template_seconds(release: EngineRelease) -> float:
    """Seconds vLLM's chat endpoint spends re-parsing the chat template of one request, synchronously
    before tokenising it: CHAT_TEMPLATE_REPARSE_S in the releases CHAT_TEMPLATE_REPARSE_RELEASES names
    (0.11.0), 0 in the others and for other engines (the render itself, ~0.05 ms, is left out)."""
    first, fixed = CHAT_TEMPLATE_REPARSE_RELEASES
    if release.engine != "vllm" or not first <= release.version < fixed:
        return 0.0
    return CHAT_TEMPLATE_REPARSE_S


def api_server_seconds(release: EngineRelease, chat: bool = False) -> float:
    """Seconds vLLM's OpenAI server holds a text request before the engine sees it, as its code sets
    them: the tokeniser's batch window from MICROBATCH_TOKENIZER_SINCE (0 before and for other engines),
    plus, for a request to the chat endpoint (``chat``), chat_template_seconds. The tokenising that follows the
    window is added by server_hold_seconds (prompt_tokenize); the ZMQ hops and detokenising are not costed
    (module docstring)."""
    if release.engine != "vllm":
        return 0.0
    window = TOKENIZER_BATCH_WAIT_S if release.version >= MICROBATCH_TOKENIZER_SINCE else 0.0
    return window + (chat_template_seconds(release) if chat else 0.0)


def endpoint_parse_seconds(runtime: Runtime) -> float:
    """The chat-template parse in server_hold_seconds: chat_template_seconds where the setup's requests reach the
    chat endpoint (Runtime.endpoint), else 0; the part the answers' hold lines and validate's basis name."""
    return chat_template_seconds(runtime.release) if runtime.endpoint == "chat" else 0.0


def server_hold_seconds(runtime: Runtime, prompt: int = 0) -> float:
    """api_server_seconds of the setup's engine release at the endpoint its requests reach (Runtime.endpoint),
    plus the server's tokenising of a ``prompt``-token text prompt (SGLang and vLLM:
    prompt_tokenize.tokenize_seconds): the one hold every door reads (infer, the sizing, the web API, validate)."""
    return api_server_seconds(runtime.release, runtime.endpoint == "chat") + tokenize_seconds(runtime.release, prompt)


def disaggregated_hold_seconds(runtime: Runtime, prompt: int = 0) -> float:
    """Seconds a request of a disaggregated deployment (prefill and decode instances, each with its own server) is
    held by the servers before its first token, a ``prompt``-token text prompt: the one hold rule
    (server_hold_seconds, tokenising included), counted per server on the request's critical path.
    vLLM: twice. Its P/D proxies send the client's request, as text, first to a prefill instance (max_tokens 1, not
    streamed) and, once it answers, the same request with its kv_transfer_params to a decode instance, whose stream
    the client reads (tests/v1/kv_connector/nixl_integration/toy_proxy_server.py@v0.11.0:149-225, @v0.23.0:155-252;
    examples/online_serving/disaggregated_serving/disagg_proxy_demo.py@v0.11.0:253-280); the decode instance's
    server parses and tokenises it again (its own tokeniser window and, on 0.11.0's chat endpoint, its own
    template parse: the request path of serving_engine.py@v0.11.0 does not skip them for kv_transfer_params,
    which ride in the request body, entrypoints/openai/protocol.py@v0.11.0:642, 754-756) before the engine loads
    the transferred KV. The two holds are serial (the proxy awaits the prefill's answer).
    SGLang: once. A prefill-mode server tokenises like any other (tokenizer_manager.py@v0.5.6:524-525, 663 have no
    branch on disaggregation_mode, read only at L373 and L1945); its load balancer posts the request to the
    prefill and the decode server at the same time (sglang/srt/disaggregation/mini_lb.py, 0.4.x,
    MiniLoadBalancer.generate_stream: asyncio.gather of both posts; 0.5.x's sgl-router keeps the concurrent
    dispatch), so the decode server's tokenising runs beside the prefill server's, off the critical path."""
    hold = server_hold_seconds(runtime, prompt)
    return 2 * hold if runtime.engine == "vllm" else hold


def served(step: StepTime, runtime: Runtime, prompt: int = 0) -> StepTime:
    """A prefill step (roofline.StepTime) of a ``prompt``-token request as a request served by ``runtime``'s release
    at its endpoint waits for its first token: plus server_hold_seconds, counted as host time (the GPU is idle for it)."""
    wait = server_hold_seconds(runtime, prompt)
    return replace(step, host_s=step.host_s + wait) if wait else step


SGLANG_CHUNK_RULE_SINCE = (0, 5, 3)
"""The first SGLang release whose chunked_prefill_size default follows the device-memory tiers (engines.sglang_defaults,
server_args.py@v0.5.3 and @v0.5.6:725-806)."""
SGLANG_SMALL_GPU_CHUNK_SINCE = (0, 3, 6)
"""The first SGLang release that cuts the chunk on GPUs under 25,000 MiB: 0.3.6's ServerArgs.__post_init__
divides the 8,192 default by 4 where get_nvgpu_memory_capacity() < 25000 (server_args.py@0.3.6 L63, L173-174);
0.4.0 to 0.5.2 set it as 2,048 if gpu_mem < 25_000 else 8,192 (server_args.py@0.4.0 L171-175; the same block
in 0.5.2's __post_init__). 0.3.0 to 0.3.5 chunk at a flat 8,192 (chunked_prefill_size: int = 8192,
server_args.py@0.3.0 L54, @0.3.5 L56). Read in the release wheels (pip download --no-deps sglang==X, 2026-12-06)."""
SGLANG_OLD_CHUNK, SGLANG_OLD_SMALL_GPU_CHUNK, SGLANG_SMALL_GPU_MIB = 8192, 2048, 25_000


def sglang_chunk_size(release: EngineRelease, memory_bytes: float) -> int:
    """Tokens of SGLang's default chunked_prefill_size on a GPU of ``memory_bytes`` for ``release``: the
    memory tiers from SGLANG_CHUNK_RULE_SINCE (engines.sglang_defaults); before it 8,192, or 2,048 below
    25,000 MiB from SGLANG_SMALL_GPU_CHUNK_SINCE (the gpu_mem that nvidia-smi reports, in MiB)."""
    if release.version >= SGLANG_CHUNK_RULE_SINCE:
        return sglang_defaults(memory_bytes, 1)[0]
    small = memory_bytes / 2**20 < SGLANG_SMALL_GPU_MIB and release.version >= SGLANG_SMALL_GPU_CHUNK_SINCE
    return SGLANG_OLD_SMALL_GPU_CHUNK if small else SGLANG_OLD_CHUNK


def chunk_budget(setup: ServingSetup, gpu: Accelerator | None, batch: int = 1) -> int | None:
    """Tokens a prefill step takes of one request's prompt where the server splits it: vLLM V1's
    max_num_batched_tokens, or SGLang's chunked_prefill_size default for the GPU's memory (sglang_chunk_size;
    0.5.3 on: 16,384 on a B200, 8,192 on an 80 GB A100 / H100, 4,096 on a 40 GB A100; before 0.5.3 8,192, 2,048
    under 25,000 MiB from 0.3.6). SGLang's PrefillAdder cuts a request longer than the chunk to the chunk
    (managers/schedule_policy.py@v0.5.6:616-651, pages of 1; @0.4.0 L186 the same truncation),
    and add_chunked_req gives each later round the next chunk (L545-566): one extend forward each, with its own
    host time (first_token_path: F + max(I, G) a forward). None where no split is modelled: other engines,
    vLLM V0 (chunking off by default below 32K contexts), no GPU given, or a static batch of
    several prompts (an offline run, usage context LLM_CLASS: not read here)."""
    release = setup.runtime.release
    if gpu is None or batch != 1:
        return None
    if release.engine == "sglang":
        return sglang_chunk_size(release, gpu.memory_bytes)
    if release.engine != "vllm" or release.version < VLLM_V1_SINCE:
        return None
    return setup.runtime.batch_limits(gpu.memory_bytes, gpu.name)[0]


def split_budget(setup: ServingSetup, gpu: Accelerator | None, prompt: int, batch: int = 1) -> int | None:
    """chunk_budget where the prompt's uncached tokens (the prefix cache's hit taken off, as chunked_prefill
    counts it) exceed it, so the prefill runs as several chunks; None where it is one forward. The one test
    the step timing (roofline.prefill_step) and the answer's chunk line (jobs/inference/estimate) share."""
    budget = chunk_budget(setup, gpu, batch)
    return budget if budget is not None and prompt - int(setup.prefix_hit * prompt) > budget else None


def prefill_chunk_runs(prompt: int, cached: int, budget: int) -> tuple[tuple[int, np.ndarray], ...]:
    """The scheduler's chunks (prefill_chunks) as runs of equal chunks, in order: (new tokens a chunk, the cached
    prefix of each of the run's chunks, an int64 array): the full ``budget`` chunks, then the remainder's one.
    The chunking rule itself, without a Python step per chunk (a 1-token budget makes one chunk per prompt
    token): min(remaining, budget) new tokens a step from the cached prefix on, at least the last token."""
    if budget < 1:
        raise ValueError(f"budget: got {budget}; must be at least 1 token")
    done = min(cached, prompt - 1)
    full, rest = divmod(prompt - done, budget)
    runs = [(budget, done + budget * np.arange(full, dtype=np.int64))] if full else []
    return tuple(runs + ([(rest, np.array([done + full * budget], dtype=np.int64))] if rest else []))


def chunked_prefill(step: Callable[[np.ndarray, int], StepTime], setup: ServingSetup, prompt: int,
                    budget: int) -> StepTime:
    """The prefill of one request split into the scheduler's chunks: ``step(prefixes, new)`` (roofline's
    prefill of a run of ``new``-token chunks at the cached ``prefixes``, one value a chunk where a field differs
    between them: the attention over the prefix) for each run of equal chunks (prefill_chunk_runs, from the
    prompt's tokens the prefix cache holds: ``setup.prefix_hit`` of it), summed chunk by chunk into one
    roofline.StepTime (combine_runs)."""
    cached = int(setup.prefix_hit * prompt)
    return combine_runs([(len(prefixes), step(prefixes, new))
                         for new, prefixes in prefill_chunk_runs(prompt, cached, budget)])


STEP_SUMS = ("memory_s", "compute_s", "comm_s", "attention_s", "other_s", "moe_rows_s", "host_s", "kernel_floor_s",
             "issue_s", "issue_forward_s", "issue_exposed_s")
"""The StepTime fields that add up over steps run one after another (combine_runs); the rest are the first's."""


def combine_runs(runs: Sequence[tuple[int, StepTime]]) -> StepTime:
    """Runs of (count, roofline.StepTime) steps run one after another as one StepTime: every term summed step by
    step in order (a field either one value for the run's steps or an array of one per step; numpy's cumsum adds
    left to right, as Python's sum over the steps did, so the totals are the loop's to the last bit); the GEMM
    time kept exact by choosing the exposed share of the summed shorter bound that gives the sum of the
    parts' gemm_s (each between its longer bound and the sum of both, so the share lies in [0, 1])."""
    def total(values) -> float:
        return float(np.cumsum(np.concatenate([np.broadcast_to(np.asarray(v, dtype=float), (n,))
                                               for n, v in zip(counts, values)]))[-1])
    counts = [n for n, _ in runs]
    sums = {name: total([getattr(p, name) for _, p in runs]) for name in STEP_SUMS}
    memory, compute, gemm = sums["memory_s"], sums["compute_s"], total([p.gemm_s for _, p in runs])
    shorter, longer = min(memory, compute), max(memory, compute)
    exposed = min(1.0, max(0.0, (gemm - longer) / shorter)) if shorter > 0 else 0.0
    return replace(runs[0][1], **sums, exposed=exposed)
