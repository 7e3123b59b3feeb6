"""Serving options that name something the engine release asked for does not have, or that change nothing where
they are given (hostile wave 20): one line naming the field, at every door (``gpuplan infer`` flags, plan files, the
web API, the Python API: jobs.inference.schema.InferenceInputs runs check_serving_options; the prompt's own rule,
check_prefix_hit, runs where the prompt is known, jobs.inference.resolve).

- ``--sampler``: the sampler steps core.serving.profile models each came with a vLLM release (SAMPLER_SINCE); before
  it, the release's profile ran the PyTorch sort path (core.serving.releases.VLLM_RULES: SORT up to 0.16). vLLM
  0.2.4 was answered with the Triton sampler's 14 B a logit, which no 0.2.x release had.
- ``--endpoint chat``: costed only where the chat endpoint's server differs from the completions one
  (core.serving.request_path.chat_template_seconds: vLLM 0.11.0's per-request template parse). Elsewhere the answer
  was byte for byte the completions one: the prompt gpuplan times is the engine's tokens (--prompt / --context,
  the template's tokens included where the user counts them), and the render itself (~0.05 ms) is not costed.
- ``--speculative`` beside ``--pp`` or LoRA where SGLang refuses the pair (check_speculative_pairs).
- ``--decode-attention`` on a model whose KV cache both kernels read alike: multi-head attention (as many KV heads as
  query heads: one read a head either way) or MLA (its latent cache is read once whatever the heads:
  core.serving.roofline.per_query_head): the answer was the same for either value (check_model_options).
- ``--prefix-hit`` on a prompt too short to hold one cached token: gpuplan caches floor(hit x prompt) tokens
  (core.serving.roofline.prefill_time, jobs.inference.serving.max_sequences), so `--prefix-hit 0.99 --prompt 1`
  cached none and changed only the TTFT line's label ('99% of it cached').
"""

from __future__ import annotations

import math

from gpuplan.core.serving.releases import MRV2, TRITON, VLLM_RULES, Version, version_text
from gpuplan.errors import InputError


def _first_rules(holds) -> Version:
    """The release of the first core.serving.releases.VLLM_RULES row for which ``holds(row)``: a sampler's first
    release is read off the rows that model its profile, not written a second time."""
    return next(rules.since for rules in VLLM_RULES if holds(rules))


SAMPLER_SINCE = {
    # 'triton': vLLM PR 33538 (Triton top-k/top-p kernel, no sort): the first row whose profile holds its 14 B a
    # logit (TRITON), 0.17.0.
    "triton": (_first_rules(lambda r: r.sampler_bytes == TRITON), "the Triton top-k/top-p sampler (vllm PR 33538)"),
    # 'flashinfer': the figure is V1's _dummy_sampler_run through TopKTopPSampler.forward_cuda (releases.py's
    # FLASHINFER note, v0.10.1.1 gpu_model_runner.py:2435-2446); the profile runs a sampler step from V1's first
    # row, 0.8.0 (vllm PR 13594, its 'sampler profiled').
    "flashinfer": (_first_rules(lambda r: r.v1), "the V1 engine's FlashInfer top-k/top-p sampler step (profiled "
                   "from vllm PR 13594)"),
    # 'logits': Model Runner V2's dummy sampler: the first row of its 2 B a logit (MRV2), 0.28.0 for dense models
    # (PR 44443); 0.29.0 for all (PR 53183).
    "logits": (_first_rules(lambda r: r.sampler_bytes == MRV2), "Model Runner V2's sampler (vllm PR 44443)"),
}
"""The first vLLM release of each sampler --sampler names beside torch-sort (every release's) and auto (the
release's own): (version, what it is), derived from releases.VLLM_RULES."""


def check_sampler(sampler: str, release) -> None:
    """InputError naming ``sampler`` where the vLLM ``release`` (core.serving.releases.EngineRelease) predates it."""
    since = SAMPLER_SINCE.get(sampler)
    if since is None or release.engine != "vllm" or release.version >= since[0]:
        return
    raise InputError("sampler", sampler, f"{release.label} predates {since[1]}, which vLLM runs from {version_text(since[0])}: "
                     f"give --sampler torch-sort or auto (the release's), or --engine vllm=={version_text(since[0])} or later")


def check_endpoint(endpoint: str, release) -> None:
    """InputError naming ``endpoint`` where 'chat' is timed exactly as 'completions' (module docstring)."""
    from gpuplan.core.serving import request_path as RP

    if endpoint != "chat" or RP.chat_template_seconds(release):
        return
    first = version_text(RP.CHAT_TEMPLATE_REPARSE_RELEASES[0])
    raise InputError("endpoint", endpoint, f"changes nothing under {release.label}: its chat endpoint is timed as "
                     "the completions one (the prompt is the engine's tokens; the template's render, ~0.05 ms, is not "
                     f"costed); only vLLM {first}'s re-parse of the chat template per request is "
                     f"(core/serving/request_path.py): leave it out, or give --engine vllm=={first}")


SGLANG_LORA_SPECULATIVE_SINCE = (0, 5, 6)
"""The first SGLang build that refuses LoRA beside a speculative method other than ngram: server_args.py@0.5.6
L4141-4146 check_server_args ('Currently LoRA is only compatible with NGRAM speculative decoding.'); the 0.5.2 and
0.5.5 wheels have no such check (read 2026-12-07, pip download --no-deps sglang==X)."""


def check_speculative_pairs(speculative: str, pp: int, lora: bool, release) -> None:
    """InputError naming ``speculative`` where the SGLang ``release`` refuses it beside pipeline parallelism or LoRA
    (wave 20; both were answered). vLLM refuses neither: 0.29.0 runs EAGLE-3 and ngram with pp > 1 on its V1 model
    runner (config/vllm.py@v0.29.0 L2562-2590, L668-675: 'Model Runner V2 does not yet support ...; using the V1 model
    runner instead'), whose speculative config checks no PP or LoRA (config/speculative.py@v0.29.0)."""
    if release.engine != "sglang" or speculative == "none":
        return
    if pp > 1:  # every SGLang build with --pp-size: server_args.py@0.4.6.post2 L1274-1281, @0.5.6 L3977-3982
        raise InputError("speculative", speculative, f"{release.label} refuses speculative decoding with pipeline "
                         "parallelism (server_args.py check_server_args: 'Pipeline parallelism is not compatible with "
                         "overlap schedule, speculative decoding, mixed chunked prefill.'): give --tp instead of --pp, "
                         "or leave --speculative out")
    if lora and speculative != "ngram" and release.version >= SGLANG_LORA_SPECULATIVE_SINCE:
        raise InputError("speculative", speculative, f"{release.label} refuses LoRA beside {speculative} ("
                         "server_args.py@0.5.6 L4141-4146: 'Currently LoRA is only compatible with NGRAM speculative "
                         "decoding.'): give --speculative ngram, or serve without adapters")


def check_serving_options(inputs) -> None:
    """check_sampler and check_endpoint for an infer ask (InferenceInputs): each only where stated (a stated default,
    --sampler auto / --endpoint completions, is answered); check_speculative_pairs."""
    if inputs.stated_otherwise("sampler"):
        check_sampler(inputs.sampler, inputs.release)
    if inputs.stated_otherwise("endpoint"):
        check_endpoint(inputs.endpoint, inputs.release)
    check_speculative_pairs(inputs.speculative, inputs.pp_degree, inputs.lora_enabled, inputs.release)


def check_prefix_hit(prefix_hit: float, prompt: int) -> None:
    """InputError naming ``prefix_hit`` where it caches no token of a ``prompt``-token prompt: floor(hit x prompt)
    is 0 (the cached tokens every door times and stores once; module docstring)."""
    if prefix_hit <= 0 or math.floor(prefix_hit * prompt) > 0:
        return
    least = math.ceil(1 / prefix_hit)
    while math.floor(prefix_hit * least) == 0:  # 1 / hit rounded down in binary
        least += 1
    hit = math.ceil(100 / prompt) / 100  # the smallest hit in hundredths that caches one token
    while math.floor(hit * prompt) == 0:
        hit = round(hit + 0.01, 2)
    larger = f", a --prefix-hit of at least {hit:g}" if hit <= 0.99 else ""  # 0.99 at most: none on 1 token
    raise InputError("prefix_hit", prefix_hit, f"caches no token of a {prompt:,}-token prompt (floor({prefix_hit:g} "
                     f"x {prompt:,}) = 0): give a prompt of at least {least:,} tokens{larger}, or leave it out")


def check_decode_attention(decode_attention: str | None, attention) -> None:
    """InputError naming ``decode_attention`` where ``attention`` (core.model.spec's attention of the model) makes
    both kernels read the cache alike (module docstring)."""
    if decode_attention is None:
        return
    if attention.is_mla:
        why = "an MLA model's latent cache is read once a layer whichever kernel"
    elif attention.num_kv_heads == attention.num_heads:
        why = f"with as many KV heads as query heads ({attention.num_heads}) each head's cache is read once either way"
    else:
        return
    raise InputError("decode_attention", decode_attention, f"changes nothing here: {why}; it applies to GQA / MQA "
                     "models (fewer KV heads than query heads): leave it out")


def check_model_options(inputs, spec, prompt: int) -> None:
    """The rules that need the resolved model and prompt (jobs.inference.resolve): check_prefix_hit and
    check_decode_attention."""
    check_prefix_hit(inputs.prefix_hit, prompt)
    check_decode_attention(inputs.decode_attention, spec.attention)
