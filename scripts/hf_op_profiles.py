#!/usr/bin/env python3
"""Write src/gpuplan/catalog/reference/hf_op_profiles.json: what a Hugging Face training step
executes, per model family and setting, as exact linear functions of the model's dimensions.

For each family (a transformers ``model_type``) and setting (bf16, amp, LoRA, selective and full
recompute, eager attention) the script takes op censuses (gpuplan.profile.op_census: every ATen
op of one training step of the family's own modeling code under FakeTensorMode) of small random
variants of the family's config at 1 and 2 decoder layers, and solves, per phase (forward,
backward, optimizer) and op class (gemm, attention, memory, optimizer, view), the coefficients
that express the step's bytes, kernels and dispatched ops as sums of dimension features:

  per decoder layer: T*h, T*q, T*kv, T*I, T*d, s*d, T*s, T*heads*s, T, P, 1
                     (+ MoE: T*k*h, T*k*Ie, T*E)
                     (+ LoRA: T*r, R)
                     (+ MoE under amp: Pc, the parameters autocast casts: P less the routed experts')
  the rest:          T*h, T*q, T*kv, T*I, T*V, V*h, Pos*h, sPos*h, s*d, T*s, T, 1  (the first layer's differences:
                     with a frozen base its input needs no gradient)

T tokens of the micro-batch, Pos the learned positions (GPT-2's n_positions, else 0), h hidden, q = heads x head_dim, kv = kv_heads x head_dim, I the MLP
width, d the head dim, s the sequence, P the layer's parameters, V the vocabulary, E experts, k
experts per token, Ie the expert width, r the LoRA rank, R the layer's adapter parameters. The
counts are exact (the residual of the solve is written beside each setting and must be ~0), so
the coefficients are a reading of the framework's code, not a fit to timings.

The host time of a step is the count of dispatched ops times a cost per op measured once
(gpuplan.core.time.host): nothing here is timed, so the file is the same on any machine.

Needs the profile extra (torch, transformers) and peft. About 10 minutes on 2 CPU cores.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

OUT = ROOT / "src" / "gpuplan" / "catalog" / "reference" / "hf_op_profiles.json"
MODELS = ROOT / "src" / "gpuplan" / "catalog" / "models"

FAMILIES = {  # model_type -> the catalog model whose config is the family's template
    "llama": "llama-3.2-1b", "mistral": "mistral-7b-v0.1", "qwen2": "qwen2.5-1.5b", "qwen3": "qwen3-1.7b",
    "qwen3_moe": "qwen3-30b-a3b", "mixtral": "mixtral-8x7b", "phi3": "phi-3-mini-4k", "gemma2": "gemma-2-2b",
    "gemma3_text": "gemma-3-1b", "gpt_neox": "pythia-160m", "olmo2": "olmo-2-7b", "gpt2": "gpt2",
    "gpt_bigcode": "santacoder",
}
LEARNED_POSITION_FAMILIES = ("gpt2", "gpt_bigcode")
"""Families with a learned position table (wpe, n_positions x n_embd) and GPT-2's config names."""
EAGER_ONLY = ("gemma2",)
"""Families transformers runs with eager attention only (Gemma 2's logit soft-capping: SDPA is
refused): every setting is profiled with attention='eager' and the 'eager' setting is the base."""
SETTINGS = {
    "bf16": {}, "amp": {"precision": "fp32-autocast"}, "lora": {"lora_rank": 8},
    "selective": {"recompute": "selective"}, "full": {"recompute": "full"}, "eager": {"attention": "eager"},
}
LAYER_FEATURES = ("T*h", "T*q", "T*kv", "T*I", "T*d", "s*d", "T*s", "T*heads*s", "T", "P", "1")
MOE_FEATURES = ("T*k*h", "T*k*Ie", "T*E")
LORA_FEATURES = ("T*r", "R")
CAST_FEATURES = ("Pc",)
"""MoE under amp: Pc, the layer's parameters less the routed experts' (attention, router, shared experts,
norms), the weights autocast casts to bf16 each forward. The experts stay fp32 (transformers 5.17 casts the
tokens to them instead, integrations/moe.py@5.17.0 L332), so P alone cannot carry the cast: without Pc the
amp solve traded P against T*E and the sequence terms (residual 8.6%, bytes below bf16's from s ~7k). For a
dense layer Pc = P (collinear), so dense profiles keep P alone and are unchanged."""
REST_FEATURES = ("T*h", "T*q", "T*kv", "T*I", "T*V", "V*h", "Pos*h", "sPos*h", "s*d", "T*s", "T", "1")
"""Pos*h: a learned position table's parameters (GPT-2's wpe, n_positions x n_embd): its gradient and AdamW
update; sPos*h: the s x h position rows a micro-batch looks up and adds, broadcast over its sequences (GPT-2's
``wpe(position_ids)`` of shape (1, s, h), modeling_gpt2.py@5.17.0); both 0 for the rotary and ALiBi families."""
# Small variants: (hidden, heads, kv_heads, head_dim, intermediate, seq, batch, vocab, experts, top_k, rank)


def _variants(count: int = 22) -> tuple[tuple, ...]:
    """Small configurations that vary every feature independently (a fixed pseudo-random draw):
    more variants than features so that each solve is overdetermined. kv_heads >= 2: with one KV
    head the key/value gradients skip a contiguous copy (MQA; docs/step.md)."""
    import random

    rng = random.Random(20261204)
    out = []
    for _ in range(count):
        heads = rng.choice((2, 4, 8))
        kv = rng.choice([k for k in (2, 4) if heads % k == 0])
        d = rng.choice((32, 64))
        out.append((rng.choice((128, 192, 256)), heads, kv, d, rng.choice((256, 384, 512)), rng.choice((32, 64, 96, 128)),
                    rng.choice((1, 2, 3)), rng.choice((512, 768, 1024)), rng.choice((4, 6, 8)), rng.choice((1, 2, 3)),
                    rng.choice((4, 8, 16))))
    return tuple(out)


VARIANTS = _variants()
CLASSES = ("gemm", "attention", "memory", "view", "optimizer")
PHASES = ("forward", "backward", "optimizer")


def variant_config(base: dict, v: tuple, moe: bool) -> dict:
    h, heads, kv, d, inter, seq, batch, vocab, experts, top_k, rank = v
    cfg = dict(base)
    cfg.update(hidden_size=h, num_attention_heads=heads, num_key_value_heads=kv, head_dim=d,
               intermediate_size=inter, vocab_size=vocab, max_position_embeddings=4096)
    for key in ("sliding_window",):  # windows wider than the sequence: no mask (docs/step.md)
        if cfg.get(key):
            cfg[key] = 4096
    if cfg.get("model_type") == "gpt_neox":
        cfg.pop("head_dim", None)
        cfg["num_attention_heads"] = heads
        cfg["hidden_size"] = heads * d
    if cfg.get("model_type") in LEARNED_POSITION_FAMILIES:  # GPT-2's names (n_embd, n_head, n_inner, n_positions)
        for key in ("n_embd", "n_head", "n_inner", "n_positions", "n_ctx", "head_dim", "num_key_value_heads"):
            cfg.pop(key, None)  # head dim = n_embd / n_head (modeling_gpt2.py / modeling_gpt_bigcode.py@5.17.0)
        cfg.update(n_embd=heads * d, n_head=heads, n_inner=inter, n_positions=4096, hidden_size=heads * d)
        if cfg.get("multi_query"):  # GPT-BigCode's MQA: one key/value head (kv is the template's, not the draw's)
            cfg["num_key_value_heads"] = 1
    if "layer_types" in cfg:
        cfg.pop("layer_types")
    for key in ("pad_token_id", "bos_token_id", "eos_token_id"):  # ids of the full vocabulary (Phi3Config's
        if not (isinstance(cfg.get(key), int) and cfg[key] < vocab):  # default pad_token_id is 32000): none
            cfg[key] = None
    if moe:
        cfg.update(num_experts=experts, num_local_experts=experts, num_experts_per_tok=top_k,
                   moe_intermediate_size=inter // 2, decoder_sparse_step=1, mlp_only_layers=[])
    return cfg


def features(cfg: dict, v: tuple, layer_params: float, adapter_params: float) -> tuple[dict, dict]:
    h = cfg["hidden_size"]
    heads, kv_heads = cfg["num_attention_heads"], cfg.get("num_key_value_heads") or cfg["num_attention_heads"]
    d = cfg.get("head_dim") or h // heads
    seq, batch, rank = v[5], v[6], v[10]
    t = seq * batch
    moe = "num_experts_per_tok" in cfg and (cfg.get("num_experts") or cfg.get("num_local_experts"))
    inter = cfg["intermediate_size"]
    layer = {"T*h": t * h, "T*q": t * heads * d, "T*kv": t * kv_heads * d, "T*I": t * inter, "T*d": t * d,
             "s*d": seq * d, "T*s": t * seq, "T*heads*s": t * heads * seq, "T": t, "P": layer_params, "1": 1.0}
    if moe:
        expert_width = inter if cfg["model_type"] == "mixtral" else cfg["moe_intermediate_size"]  # Mixtral: intermediate_size
        experts = cfg.get("num_experts") or cfg.get("num_local_experts")
        layer.update({"T*k*h": t * cfg["num_experts_per_tok"] * h,
                      "T*k*Ie": t * cfg["num_experts_per_tok"] * expert_width,
                      "T*E": t * experts,
                      "Pc": layer_params - experts * 3 * h * expert_width})  # gate_up (E, 2Ie, h) + down (E, h, Ie)
    layer.update({"T*r": t * rank, "R": adapter_params})
    positions = cfg["n_positions"] if cfg.get("model_type") in LEARNED_POSITION_FAMILIES else 0  # wpe rows
    rest = {"T*h": t * h, "T*q": layer["T*q"], "T*kv": layer["T*kv"], "T*I": layer["T*I"], "T*V": t * cfg["vocab_size"], "V*h": cfg["vocab_size"] * h,
            "Pos*h": positions * h, "sPos*h": (seq if positions else 0) * h, "s*d": seq * d, "T*s": t * seq,
            "T": t, "1": 1.0}
    return layer, rest


def tally(census) -> dict:
    out: dict = {}
    for phase, cls, _name, kernels, nbytes, flops, _shape, _module in census.ops:
        cell = out.setdefault(f"{phase}.{cls}", {"bytes": 0.0, "kernels": 0.0, "ops": 0.0, "flops": 0.0})
        cell["bytes"] += nbytes
        cell["kernels"] += kernels
        cell["ops"] += 1
        cell["flops"] += flops
    return out


def params_of(torch, transformers, cfg: dict, layers: int, rank: int | None) -> tuple[float, float]:
    """(parameters, trainable adapter parameters) of the model at ``layers`` layers (meta device)."""
    from gpuplan.profile.measure import _build_config
    from gpuplan.profile.op_census import _with_lora

    _, text, _ = _build_config(transformers, cfg, layers)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(text)
    base = sum(p.numel() for p in model.parameters())
    if not rank:
        return float(base), 0.0
    model = _with_lora(model, rank)
    return float(base), float(sum(p.numel() for p in model.parameters() if p.requires_grad))


def solve(rows: list[tuple[dict, dict]], names: tuple[str, ...]) -> tuple[dict, float]:
    """Least squares of each tallied quantity on the features; (coefficients, worst relative residual)."""
    import numpy as np

    keys = sorted({k for _, t in rows for k in t})
    a = np.array([[f.get(n, 0.0) for n in names] for f, _ in rows])
    scale = np.maximum(np.abs(a).max(axis=0), 1e-30)
    out, worst = {}, 0.0
    for key in keys:
        cell = {}
        for q in ("bytes", "kernels", "ops"):
            if q == "bytes" and key.split(".")[1] in ("gemm", "attention"):
                continue  # matmul and attention time come from their shapes (core.time.gemm, .attention)
            y = np.array([t.get(key, {}).get(q, 0.0) for _, t in rows])
            if q != "bytes":  # counts: constant per layer, the median over the shapes (a shape-dependent
                count = round(float(np.median(y)))  # copy, e.g. one KV head's, is one kernel either way)
                if count:
                    cell[q] = {"1": float(count)}
                continue
            coef, *_ = np.linalg.lstsq(a / scale, y, rcond=None)
            coef = coef / scale
            fit = a @ coef
            worst = max(worst, float(np.max(np.abs(fit - y) / np.maximum(np.abs(y), 1.0))))
            coef = [round(float(c), 6) if abs(c) > 1e-9 else 0.0 for c in coef]
            if any(coef):
                cell[q] = {n: c for n, c in zip(names, coef) if c}
        if cell:
            out[key] = cell
    return out, worst


@contextlib.contextmanager
def fp32_grouped_mm_meta(torch):
    """Let FakeTensorMode take fp32 torch._grouped_mm, as the CUDA op does (GroupedMMUtils.h accepts Float32;
    cuda/GroupedBlas.cpp runs it on _grouped_mm_fallback): torch's meta kernel checks for bf16 only. For the
    amp census of MoE families (transformers casts the tokens to the fp32 expert weights)."""
    import torch._meta_registrations as meta

    orig = meta._meta_grouped_mm_common

    def relaxed(mat_a, mat_b, scale_a, scale_b, offs=None, bias=None, scale_result=None, out_dtype=None,
                use_fast_accum=False):
        if scale_a is None and mat_a.dtype == mat_b.dtype == torch.float32:
            return orig(mat_a.to(torch.bfloat16), mat_b.to(torch.bfloat16), scale_a, scale_b, offs, bias,
                        scale_result, torch.bfloat16, use_fast_accum).to(torch.float32)
        return orig(mat_a, mat_b, scale_a, scale_b, offs, bias, scale_result, out_dtype, use_fast_accum)

    meta._meta_grouped_mm_common = relaxed
    try:
        yield
    finally:
        meta._meta_grouped_mm_common = orig


def profile_setting(torch, transformers, family: str, setting: dict) -> dict:
    with fp32_grouped_mm_meta(torch) if setting.get("precision") == "fp32-autocast" else contextlib.nullcontext():
        return _profile_setting(torch, transformers, family, setting)


def _profile_setting(torch, transformers, family: str, setting: dict) -> dict:
    from gpuplan.profile.op_census import CensusSettings, take_census

    base = json.loads((MODELS / f"{FAMILIES[family]}.json").read_text())["config"]
    moe = family in ("qwen3_moe", "mixtral")
    names = LAYER_FEATURES + (MOE_FEATURES if moe else ()) + (LORA_FEATURES if "lora_rank" in setting else ())
    names += CAST_FEATURES if moe and setting.get("precision") == "fp32-autocast" else ()
    if family in EAGER_ONLY:
        setting = {**setting, "attention": "eager"}
    layer_rows, rest_rows = [], []
    for v in VARIANTS:
        cfg = variant_config(base, v, moe)
        kw = dict(setting)
        if "lora_rank" in kw:
            kw["lora_rank"] = v[10]
        st = CensusSettings(micro_batch=v[6], seq_len=v[5], **kw)
        one, two = tally(take_census(cfg, 1, st)), tally(take_census(cfg, 2, st))
        p1, a1 = params_of(torch, transformers, cfg, 1, kw.get("lora_rank"))
        p2, a2 = params_of(torch, transformers, cfg, 2, kw.get("lora_rank"))
        lf, rf = features(cfg, v, p2 - p1, a2 - a1)
        layer = {k: {q: two.get(k, {}).get(q, 0.0) - one.get(k, {}).get(q, 0.0) for q in ("bytes", "kernels", "ops", "flops")}
                 for k in set(one) | set(two)}
        rest = {k: {q: 2 * one.get(k, {}).get(q, 0.0) - two.get(k, {}).get(q, 0.0) for q in ("bytes", "kernels", "ops", "flops")}
                for k in set(one) | set(two)}
        layer_rows.append((lf, layer))
        rest_rows.append((rf, rest))
    layer, r1 = solve(layer_rows, names)
    rest, r2 = solve(rest_rows, REST_FEATURES)
    return {"layer": layer, "rest": rest, "features": list(names), "max_relative_residual": max(r1, r2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", default=",".join(FAMILIES))
    parser.add_argument("--settings", default=",".join(SETTINGS))
    parser.add_argument("--out", default=str(OUT))
    args = parser.parse_args(argv)
    import warnings

    import peft
    import torch
    import transformers

    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    out_path = Path(args.out)
    doc = json.loads(out_path.read_text()) if out_path.exists() else {"families": {}}
    doc.update({
        "generated_by": "scripts/hf_op_profiles.py", "created": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d"),
        "torch": torch.__version__, "transformers": transformers.__version__, "peft": peft.__version__,
        "machine": f"{platform.machine()} {platform.processor() or ''} ({torch.get_num_threads()} thread)".strip(),
        "units": "bytes, kernels and dispatched ATen ops per training step of one micro-batch (coefficients of the features)",
    })
    for family in args.families.split(","):
        fam = doc["families"].setdefault(family, {"template": FAMILIES[family], "settings": {}})
        for name in args.settings.split(","):
            t0 = time.perf_counter()
            try:
                entry = profile_setting(torch, transformers, family, SETTINGS[name])
            except Exception as exc:  # a setting the family does not support (e.g. eager-only models)
                entry = {"unsupported": f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"}
            fam["settings"][name] = entry
            print(f"{family:12s} {name:10s} {time.perf_counter() - t0:5.1f} s "
                  f"residual {entry.get('max_relative_residual', entry.get('unsupported'))}", flush=True)
            out_path.write_text(json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
