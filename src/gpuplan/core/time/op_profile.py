"""What an eager stack dispatches in one training step, as linear functions of the model's shape.

scripts/hf_op_profiles.py reads it from the framework's own code: op censuses of each model
family's transformers modeling file (gpuplan.profile.op_census, FakeTensorMode) at many small
shapes, solved per phase (forward, backward, optimizer) and op class for the coefficients of

  per decoder layer   T*h, T*q, T*kv, T*I, T*d, s*d, T*s, T*heads*s, T, P, 1
                      (MoE: T*k*h, T*k*Ie, T*E; LoRA: T*r, R; MoE under amp: Pc)
  the rest            T*h, T*q, T*kv, T*I, T*V, V*h, Pos*h, sPos*h, s*d, T*s, T, 1 (Pos: learned positions;
                      sPos*h: their s x h rows a micro-batch reads, broadcast over its sequences)

for three quantities: bytes the memory-bound kernels move, kernels launched, and ATen ops
dispatched (host work, core.time.host; 'view' ops launch no kernel). T = tokens of the micro-batch, h hidden,
q / kv = query / key-value width, I MLP width, d head dim, s sequence, P the layer's parameters,
V vocabulary, E experts, k experts per token, Ie expert width, r LoRA rank, R the layer's adapter
parameters, Pc the parameters autocast casts (cast_params). Settings (bf16, amp, LoRA, selective and full
recompute, eager attention) were
measured one at a time on top of bf16 + SDPA; a run that combines them takes the bf16 profile plus
each setting's difference from it (``compose``; docs/step.md checks one combination).

catalog.op_profiles loads the file; this module only evaluates. Units: bytes, counts, seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpuplan.core.model.spec import ModelSpec, attention_params, mlp_params, norm_params

PHASES = ("forward", "backward", "optimizer")
SETTINGS = ("bf16", "amp", "lora", "selective", "full", "eager")


@dataclass(frozen=True, eq=False)
class SettingProfile:
    """One (family, setting): ``part`` ('layer' or 'rest') -> 'phase.class' -> quantity -> {feature: coefficient}."""

    family: str
    setting: str
    counts: dict = field(repr=False)


@dataclass(frozen=True, eq=False)
class EagerOps:
    """A run's profile: signed sums of setting profiles (bf16 + each active setting's difference)."""

    family: str
    terms: tuple[tuple[float, SettingProfile], ...]
    note: str = ""
    recompute_profiles: dict = field(default_factory=dict, repr=False)
    """'selective' / 'full' -> SettingProfile, added by for_recompute (the planner varies recompute)."""
    attention: str = ""
    """'eager' for a family transformers runs with eager attention only (Gemma 2); '' = as asked."""

    @property
    def settings(self) -> tuple[str, ...]:
        return tuple(p.setting for w, p in self.terms if w > 0)

    def for_recompute(self, mode: str) -> EagerOps:
        """This profile with a recompute mode's difference from bf16 added ('none': unchanged)."""
        if mode not in self.recompute_profiles:
            return self
        base = next(p for w, p in self.terms if p.setting == "bf16")
        terms = self.terms + ((1.0, self.recompute_profiles[mode]), (-1.0, base))
        return EagerOps(self.family, terms, self.note, {}, self.attention)

    def value(self, part: str, cell: str, quantity: str, features: dict):
        """Σ coefficient x feature over the terms (0 where a cell is absent)."""
        total = 0.0
        for weight, profile in self.terms:
            coefs = profile.counts.get(part, {}).get(cell, {}).get(quantity, {})
            total = total + weight * sum(c * features.get(name, 0.0) for name, c in coefs.items())
        return total

    def cell_total(self, part: str, phase: str, quantity: str, features: dict, classes=None):
        """Sum over op classes of one phase (all classes, or those named)."""
        names = classes or ("gemm", "attention", "memory", "view", "optimizer")
        return sum((self.value(part, f"{phase}.{c}", quantity, features) for c in names), 0.0)


def compose(family: str, profiles: dict[str, SettingProfile], active: tuple[str, ...]) -> EagerOps:
    """bf16 plus each active setting's difference from bf16 (settings absent for the family are
    left out and named in the note)."""
    base = profiles["bf16"]
    terms: list[tuple[float, SettingProfile]] = [(1.0, base)]
    missing = []
    for name in active:
        if name == "bf16":
            continue
        if name not in profiles:
            missing.append(name)
            continue
        terms += [(1.0, profiles[name]), (-1.0, base)]
    note = f"no {', '.join(missing)} profile for {family}: left out" if missing else ""
    recompute = {m: profiles[m] for m in ("selective", "full") if m in profiles}
    return EagerOps(family, tuple(terms), note, recompute)


def layer_params(spec: ModelSpec, moe_layer: bool = False) -> float:
    """Parameters of one decoder layer (P: the amp weight casts and the optimizer scale with it)."""
    h = spec.hidden_size
    attn = attention_params(spec.attention, h)
    norms = spec.norms_per_layer * norm_params(spec, h)
    if moe_layer and spec.moe is not None:
        m = spec.moe
        experts = m.num_experts * mlp_params(m.expert_intermediate_size, h, gated=True)
        return attn + norms + experts + h * m.num_experts + mlp_params(m.shared_intermediate_size, h, gated=True)
    return attn + norms + mlp_params(spec.mlp.intermediate_size, h, spec.mlp.gated, spec.mlp.bias)


def adapter_params(spec: ModelSpec, lora_rank: int, moe_layer: bool = False) -> float:
    """LoRA parameters of one decoder layer as peft puts them (R): core.model.finetune.lora_layer_params under
    peft (per-token and folded adapters together), the per-layer count lora_params sums for the memory, step,
    DP gradient bytes, MFU numerator and calibrate. A dense layer of a model with MoE layers (DeepSeek's first
    ones) is counted with its MLA linears as peft finds them, as lora_params counts it (the dense rule before)."""
    from gpuplan.core.model.finetune import lora_layer_params

    return lora_layer_params(spec, lora_rank, moe_layer and spec.moe is not None, peft_experts=True)


def layer_features(spec: ModelSpec, tokens, seq_len, lora_rank: int = 0, moe_layer: bool = False) -> dict:
    """The per-layer features of a micro-batch of ``tokens`` tokens in sequences of ``seq_len``."""
    a, h = spec.attention, spec.hidden_size
    d = a.qk_head_dim
    t = tokens
    f = {"T*h": t * h, "T*q": t * a.num_heads * d, "T*kv": t * a.num_kv_heads * d,
         "T*I": t * spec.mlp.intermediate_size, "T*d": t * d, "s*d": seq_len * d, "T*s": t * seq_len,
         "T*heads*s": t * a.num_heads * seq_len, "T": t, "P": layer_params(spec, moe_layer), "1": 1.0,
         "T*r": t * lora_rank, "R": adapter_params(spec, lora_rank, moe_layer) if lora_rank else 0.0}
    f["Pc"] = cast_params(spec, moe_layer)
    if moe_layer and spec.moe is not None:
        m = spec.moe
        f.update({"T*k*h": t * m.experts_per_token * h, "T*k*Ie": t * m.experts_per_token * m.expert_intermediate_size,
                  "T*E": t * m.num_experts})
    return f


def cast_params(spec: ModelSpec, moe_layer: bool = False) -> float:
    """Pc: the layer's parameters autocast casts to bf16 each forward under amp: all of a dense layer's (P); a
    MoE layer's less its routed experts', which stay fp32 (transformers 5.17 casts the tokens to them instead,
    integrations/moe.py@5.17.0 L332). Only the MoE amp profiles use it (scripts/hf_op_profiles.CAST_FEATURES)."""
    p = layer_params(spec, moe_layer)
    if moe_layer and spec.moe is not None:
        m = spec.moe
        p -= m.num_experts * mlp_params(m.expert_intermediate_size, spec.hidden_size, gated=True)
    return p


def rest_features(spec: ModelSpec, tokens, seq_len) -> dict:
    """The features of everything outside the decoder layers (embedding, final norm, LM head, loss)."""
    a, h, t = spec.attention, spec.hidden_size, tokens
    return {"T*h": t * h, "T*q": t * a.num_heads * a.qk_head_dim, "T*kv": t * a.num_kv_heads * a.qk_head_dim,
            "T*I": t * spec.mlp.intermediate_size, "T*V": t * spec.vocab_size, "V*h": spec.vocab_size * h,
            "Pos*h": spec.learned_positions * h,
            "sPos*h": seq_len * h if spec.learned_positions else 0, "s*d": seq_len * a.qk_head_dim, "T*s": t * seq_len, "T": t, "1": 1.0}
