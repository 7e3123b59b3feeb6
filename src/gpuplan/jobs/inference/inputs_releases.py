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
"""The first vLLM release with speculative decoding: --speculative-model / --num-speculative-tokens came with
SpeculativeConfig (vllm PR 3706, merged 2024-04-02, after v0.4.0 of 2024-03-30) and were usable once the correctness
PR 3951 landed (vllm issue 4266, 2024-04-22), in v0.4.1 (2024-04-24). Each method's own first release (ngram, EAGLE,
MTP, EAGLE-3 came later) is not checked."""


def check_speculative(speculative: str, release) -> None:
    """InputError naming ``speculative`` where the vLLM ``release`` (core.serving.releases.EngineRelease) has none."""
    if speculative != "none" and release.engine == "vllm" and release.version < VLLM_SPECULATIVE_SINCE:
        raise InputError("speculative", speculative, f"{release.label} has no speculative decoding: vLLM has it from "
                         "0.4.1 (--speculative-model, vllm PR 3706); give --engine vllm==0.4.1 or later, or leave "
                         "--speculative out")


def check_lora(field: str, value: object, release) -> None:
    """InputError naming ``field`` (enable_lora or max_loras, whichever turned LoRA on) where the vLLM ``release``
    serves no adapters."""
    if release.engine == "vllm" and release.version < VLLM_LORA_SINCE:
        raise InputError(field, value, f"{release.label} serves no LoRA adapters: vLLM has them from 0.3.0 (vllm PR "
                         "1804, 'Add multi-LoRA support', --enable-lora); give --engine vllm==0.3 or later")
