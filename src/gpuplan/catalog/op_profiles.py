"""The eager stack's op profiles (catalog/reference/hf_op_profiles.json, written by
scripts/hf_op_profiles.py from transformers' own modeling code; core.time.op_profile) and the one
a run uses: its model family and the settings it turns on.

Units: see core.time.op_profile.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache

from gpuplan.core.time.attention_core import SDPA_REFUSED, execution_kernel
from gpuplan.core.time.op_profile import EagerOps, SettingProfile, compose

FILE = "hf_op_profiles.json"
FALLBACK_FAMILY = "llama"
PROFILE_OF = {"olmo3": "olmo2"}
"""model_types whose transformers modules are another profiled family's, op for op: Olmo3's decoder layer,
attention and MLP subclass Olmo2's and add only the sliding-window mask (transformers
models/olmo3/modular_olmo3.py: Olmo3Attention(Olmo2Attention), Olmo3DecoderLayer(Olmo2DecoderLayer)), which
changes no op the eager step launches."""
EAGER_ONLY = ("gemma2",)
"""Families transformers runs with eager attention only (scripts/hf_op_profiles.py EAGER_ONLY): their
profiles are eager already. Every SDPA_REFUSED model_type (core.time.attention_core) runs eager; one
without a profile of its own (gpt_oss) takes Llama's with Llama's eager-attention setting."""
AMP_RECIPES = ("amp", "mixed", "fp32", "article", "megatron", "fsdp2")
"""Recipes with fp32 parameters: an eager run of them is torch.autocast over fp32 weights (HF
Trainer's bf16=True); 'bf16' and 'fp8' keep bf16 parameters."""


def _document() -> dict:
    from gpuplan.catalog import reference_json

    return reference_json(FILE)


@cache
def family_profiles(family: str) -> dict[str, SettingProfile]:
    """setting -> SettingProfile of one family (settings the generator could not run are absent)."""
    fam = _document()["families"].get(family, {})
    out = {}
    for name, entry in fam.get("settings", {}).items():
        if "unsupported" in entry:
            continue
        counts = {"layer": entry["layer"], "rest": entry["rest"]}
        out[name] = SettingProfile(family, name, counts)
    return out


def families() -> tuple[str, ...]:
    return tuple(sorted(_document()["families"]))


def provenance() -> str:
    d = _document()
    return (f"{d['generated_by']} on {d['created']}: torch {d['torch']}, transformers {d['transformers']}, "
            f"peft {d['peft']}")


def active_settings(recipe: str, finetune: str, attention_kernel: str) -> tuple[str, ...]:
    """The profiled settings a run turns on (bf16 is the base every run has; recompute is added
    per mode by EagerOps.for_recompute, the planner varies it)."""
    out = ["bf16"]
    if recipe in AMP_RECIPES:
        out.append("amp")
    if finetune != "full":
        out.append("lora")
    if attention_kernel == "eager":
        out.append("eager")
    return tuple(out)


def eager_ops_for(model_type: str, recipe: str, finetune: str, attention_kernel: str) -> EagerOps:
    """The composed op profile of a run of a ``model_type`` model (Llama's where the family was not
    profiled, said in the note)."""
    profiled = PROFILE_OF.get(model_type, model_type)
    family = profiled if profiled in families() else FALLBACK_FAMILY
    kernel = execution_kernel(attention_kernel, model_type, "hf")  # SDPA_REFUSED: eager, as transformers runs it
    ops = compose(family, family_profiles(family),
                  active_settings(recipe, finetune, "flash" if family in EAGER_ONLY else kernel))  # eager base
    if family in EAGER_ONLY or model_type in SDPA_REFUSED:
        ops = replace(ops, attention="eager")
    if family != profiled:
        note = f"no op profile for model_type {model_type or '(bare --params)'}: {FALLBACK_FAMILY}'s used"
        ops = replace(ops, note="; ".join(n for n in (note, ops.note) if n))
    return ops
