"""HBM traffic of Megatron-Core's unfused bias on the routed experts' second linear.

Models whose experts carry biases (GPT-OSS: ``gate_up_proj_bias`` / ``down_proj_bias``,
transformers ``models/gpt_oss/modeling_gpt_oss.py``) run, in Megatron-Core's ``TEGroupedMLP``
without the Transformer Engine op fuser, the first linear's bias inside the fused activation
(``weighted_bias_quick_geglu_impl``) but the second one eagerly, per local expert:
``torch.cat([t + b * p for t, b, p in zip(split(out), biases, split(probs))]).to(out.dtype)``
(``megatron/core/transformer/moe/experts.py``, ``TEGroupedMLP._apply_bias``, the same at
core_v0.16.0, 0.17.0, 0.18.0 and 0.19.0). With ``use_transformer_engine_op_fuser`` (core >= 0.18,
TE >= 2.14; the Megatron-Bridge recipes' ``cutedsl_fused_grouped_mlp``) the bias goes into TE's
grouped linear op instead and nothing here applies.

Bytes moved per element of one expert output row (h = hidden size; each routed copy of a token is
a row), read from the ops above and their autograd backward:

* probabilities in bf16 (the router's dtype when ``moe_router_dtype`` is unset, which the NCCL
  ``alltoall`` dispatcher keeps): forward ``b * p`` writes 2, ``t + .`` reads 2 + 2 and writes 2,
  ``cat`` reads 2 and writes 2 (``.to`` is a no-op): 12; backward the bias gradient ``g * p``
  (read 2, write 2) summed over rows (read 2) and the probability gradient ``g * b`` likewise:
  12. Total 24.
* probabilities in fp32 (DeepEP and HybridEP convert them: ``token_dispatcher.py``, "HybridEP
  only supports float32 probs"), so the sum is promoted to fp32: forward ``b * p`` writes 4,
  ``t + .`` reads 2 + 4 and writes 4, ``cat`` reads 4 and writes 4, ``.to(bf16)`` reads 4 and
  writes 2: 28; backward the cast back (read 2, write 4), the gradient of ``t`` cast to bf16
  (read 4, write 2), and the two products and sums above in fp32 (12 each): 36. Total 64.

Units: bytes per token per layer.
"""

from __future__ import annotations

from gpuplan.core.model import ModelSpec

EAGER_FC2_BIAS_BYTES_PER_ELEMENT = {"bf16": 24.0, "fp32": 64.0}
"""HBM bytes per element of an expert output row, forward + backward, by probability dtype."""
FORWARD_SHARE = {"bf16": 12.0 / 24.0, "fp32": 28.0 / 64.0}
"""The forward pass's part of those bytes (the rest is backward)."""


def routing_probs_dtype(ep_dispatcher: str) -> str:
    """The dtype of the routing probabilities the experts see under Megatron-Core's dispatcher:
    'fp32' for 'flex' (DeepEP / HybridEP), 'bf16' for the NCCL 'alltoall' one (router unset)."""
    return "fp32" if ep_dispatcher == "flex" else "bf16"


def eager_expert_bias_bytes_per_token(spec: ModelSpec, probs_dtype: str | None) -> float:
    """HBM bytes per token of the mean layer that the unfused expert fc2 bias moves, forward +
    backward (0 when the experts have no bias or ``probs_dtype`` is None: fused or not Megatron)."""
    moe = spec.moe
    if moe is None or not moe.expert_bias or probs_dtype is None or not spec.num_moe_layers:
        return 0.0
    per_row = EAGER_FC2_BIAS_BYTES_PER_ELEMENT[probs_dtype] * spec.hidden_size
    return per_row * moe.experts_per_token * spec.num_moe_layers / spec.num_layers
