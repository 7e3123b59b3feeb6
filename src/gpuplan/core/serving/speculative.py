"""Speculative decoding: a cheap proposer guesses ``k`` tokens, the target model checks them in
one forward over k + 1 positions per sequence and keeps the longest agreeing prefix plus one
token of its own.

With a per-token acceptance rate ``alpha`` (each proposed token accepted with probability alpha,
independently of the others) the tokens one verify step yields are

    E = (1 - alpha^(k+1)) / (1 - alpha)          (Leviathan, Kalman & Matias 2023, "Fast
                                                  Inference from Transformers via Speculative
                                                  Decoding", ICML, Eq. 1)

and the time per output token is (k x draft step + verify step) / E. The geometric form
matches what engines log: vLLM's EAGLE-3 run in vllm-project/vllm#24243 reports acceptance at
positions 0-2 of 0.58, 0.34, 0.22 (0.58, 0.34, 0.20 geometric) and a mean acceptance length of
2.47 at k = 5 (2.29 geometric: later positions decay slower than geometric, so the model is 7%
on the safe side there).

Proposers (what the draft step costs and what it keeps in memory):
- ``draft``: a separate small model (vLLM ``--speculative-config '{"model": ...}'``): its own
  weights and KV cache, one decode step per proposed token.
- ``eagle`` / ``eagle3``: one extra decoder layer of the target's shape on the target's hidden
  states, sharing its embedding and LM head (Li et al. 2024, EAGLE, arXiv:2401.15077; EAGLE-3,
  arXiv:2503.01840); one layer's weights and KV cache.
- ``mtp``: the model's own multi-token-prediction module (DeepSeek-V3: one extra layer sharing
  embedding and output head, tech. report Sec. 2.2), costed like EAGLE.
- ``ngram``: prompt lookup, no model: no draft time, no memory.
Units: tokens, seconds, bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpuplan.core.model.spec import ModelSpec, count_parameters
from gpuplan.errors import InputError

METHODS = ("none", "draft", "eagle", "eagle3", "mtp", "ngram")

DEFAULT_ACCEPTANCE: dict[str, tuple[float, str]] = {
    # vllm-project/vllm#16035 (ekagra-ranjan, MT-bench, Llama-3-8B-Instruct + EAGLE, batch 1): mean
    # acceptance length 1.89 at k = 2 and 2.08 at k = 4 -> alpha 0.57 and 0.54 in Eq. 1
    "eagle": (0.55, "vllm#16035: EAGLE on Llama-3-8B, MT-bench, acceptance length 1.89 at k=2 (alpha 0.55)"),
    # vllm-project/vllm#24243: EAGLE-3 (MiniCPM3) acceptance at position 0 = 0.58, length 2.47 at k = 5
    "eagle3": (0.58, "vllm#24243: EAGLE-3, acceptance 0.58 at the first position, length 2.47 at k=5"),
    # DeepSeek-V3 technical report (arXiv:2412.19437) Sec. 5.4.3: the second token's acceptance 85-90%
    "mtp": (0.85, "DeepSeek-V3 report Sec. 5.4.3: MTP second-token acceptance 85-90%"),
    # Leviathan et al. 2023, Table 3: alpha 0.61-0.88 for the model drafts measured (T5, GPT-like,
    # LaMDA pairs); 0.6, the low end, is a gpuplan prior for chat traffic
    "draft": (0.6, "gpuplan prior at the low end of Leviathan et al. 2023 Table 3 (alpha 0.61-0.88 for "
                   "model drafts)"),
}


@dataclass(frozen=True)
class Speculation:
    """A speculative-decoding setup: proposer, tokens proposed per step, acceptance rate."""

    method: str
    tokens: int
    acceptance: float
    source: str
    draft: ModelSpec | None = None
    """The proposer's shape: the draft model, or one target-shaped layer for EAGLE / MTP."""
    shares_embeddings: bool = False
    """EAGLE / MTP reuse the target's embedding and LM head: no extra copy in memory."""

    @property
    def mean_accepted_length(self) -> float:
        """Tokens per verify step, Eq. 1 of Leviathan et al. (incl. the target's own token)."""
        a, k = self.acceptance, self.tokens
        if a >= 1.0:
            return k + 1.0
        return (1.0 - a ** (k + 1)) / (1.0 - a)


def one_layer_head(spec: ModelSpec) -> ModelSpec:
    """The EAGLE / MTP proposer as one decoder layer of the target's shape (its last layer's
    kind: MoE for DeepSeek-V3's MTP module), full attention."""
    moe_layers = spec.moe_layers[-1:] if spec.moe_layers else ()
    return replace(spec, name=f"{spec.name} (1-layer draft head)", num_layers=1, moe_layers=moe_layers,
                   layer_types=(), declared_params=None)


def check_smaller(draft: ModelSpec, target: ModelSpec) -> None:
    """A draft model proposes because it is cheaper than the target: one with as many parameters
    or more makes every proposed token cost a target step or more (and holds that much memory)."""
    size, limit = count_parameters(draft).total, count_parameters(target).total
    if size >= limit:
        same = " (the target itself)" if draft.name == target.name else ""
        raise InputError("draft_model", draft.name, f"has {size / 1e9:,.2f}B parameters{same}, not fewer than the "
                         f"target {target.name}'s {limit / 1e9:,.2f}B: a draft model must be smaller than the target "
                         "(a small model of its family sharing its tokenizer)")


def speculation(method: str, tokens: int, acceptance: float | None, target: ModelSpec,
                draft: ModelSpec | None = None) -> Speculation | None:
    """The setup for ``method`` (None for 'none'); InputError when something it needs is missing."""
    if method == "none":
        return None
    if method not in METHODS:
        raise InputError("speculative", method, f"must be one of {', '.join(METHODS)}")
    if acceptance is None:
        if method not in DEFAULT_ACCEPTANCE:
            raise InputError("spec_acceptance", None, f"give the acceptance rate for {method} (0-1): it depends "
                             "on how often the text repeats the prompt, no default is defensible")
        acceptance, source = DEFAULT_ACCEPTANCE[method]
    else:
        source = "--spec-acceptance"
    if method == "draft":
        if draft is None:
            raise InputError("draft_model", None, "speculative 'draft' needs --draft-model (a catalog model or "
                             "Hugging Face id)")
        if draft.vocab_size != target.vocab_size:
            raise InputError("draft_model", draft.name, f"vocabulary {draft.vocab_size:,} differs from the "
                             f"target's {target.vocab_size:,}; a draft model must share the tokenizer")
        check_smaller(draft, target)
        return Speculation(method, tokens, acceptance, source, draft)
    if method == "ngram":
        return Speculation(method, tokens, acceptance, source)
    return Speculation(method, tokens, acceptance, source, one_layer_head(target), shares_embeddings=True)
