"""The serving features an engine release must have for `gpuplan infer`'s options to apply (InferenceInputs checks
them): a vLLM release older than a feature answered as if it had it (wave 10: `--engine vllm==0.2.6 --enable-lora`
sized adapter slots, `--speculative eagle` a speed-up, exit 0). Releases from 0.2.0 are modelled
(core.serving.releases.OLDEST)."""

from __future__ import annotations

from gpuplan.errors import InputError

VLLM_LORA_SINCE = (0, 3, 0)
"""The first vLLM release with --enable-lora: multi-LoRA serving (vllm/lora/, vllm PR 1804 'Add multi-LoRA support',
merged January 2024) shipped in v0.3.0 (2024-01-31; vllm issue 2909 runs --enable-lora on the release of 2024-02);
v0.2.7 (2024-01-03) had no LoRA path."""

VLLM_SPECULATIVE_SINCE = (0, 4, 1)
"""The first vLLM release whose speculative decoding runs and is correct. The flags alone (--speculative-model /
--num-speculative-tokens, SpeculativeConfig: vllm PR 3706, merged 2024-04-02) did not run: that PR's description
says the executor raises when speculation is on. It ran end to end with PR 3894 ('[Speculative decoding 6/9]
Integrate speculative decoding with LLMEngine', opened 2024-04-07: 'the output is garbage' until 7/9) and gave the
target's own tokens with PR 3951 ('[Speculative decoding 7/9] Speculative decoding end-to-end correctness tests',
opened 2024-04-09: the sampler's greedy probabilities, batch-expansion scoring and the bonus token's KV fixed). A
maintainer wrote on vllm issue 4266 (2024-04-22) that 3951 was being merged, after which the two flags 'can be used
and should be correct'; v0.4.1 followed on 2024-04-24, v0.4.0 (2024-03-30) predates all three PRs. That v0.4.1's
tag holds 3951 is read from these dates, not from the tag (the vLLM snapshot is too large to fetch here). Each
method's own first release (ngram: PR 4237, opened 2024-04-21; EAGLE: PR 6830, 2024-08; MTP, EAGLE-3 later) is not
checked, except EAGLE-3 / MTP on 0.8.x (core.serving.spec_runner.unavailable)."""


def check_speculative(speculative: str, release) -> None:
    """InputError naming ``speculative`` where the vLLM ``release`` (core.serving.releases.EngineRelease) has none."""
    if speculative != "none" and release.engine == "vllm" and release.version < VLLM_SPECULATIVE_SINCE:
        raise InputError("speculative", speculative, f"{release.label} has no speculative decoding: vLLM has it from "
                         "0.4.1 (--speculative-model runs from vllm PRs 3894 and 3951); give --engine vllm==0.4.1 or "
                         "later, or leave --speculative out")


def check_lora(field: str, value: object, release) -> None:
    """InputError naming ``field`` (enable_lora or max_loras, whichever turned LoRA on) where the vLLM ``release``
    serves no adapters."""
    if release.engine == "vllm" and release.version < VLLM_LORA_SINCE:
        raise InputError(field, value, f"{release.label} serves no LoRA adapters: vLLM has them from 0.3.0 (vllm PR "
                         "1804, 'Add multi-LoRA support', --enable-lora); give --engine vllm==0.3 or later")
