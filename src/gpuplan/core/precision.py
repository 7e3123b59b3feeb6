"""Precision recipes and optimizers: bytes per parameter of each model-state copy (weights,
gradients, fp32 master, optimizer states), each row with its source. Units: bytes."""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.errors import InputError

COMPUTE_DTYPES = ("bf16", "fp16", "fp8", "fp4", "tf32", "fp32")
"""The compute dtypes a plan names (--dtype: schema.vocabulary.DTYPES) and a calibration records (its
reference.dtype, calibrate.model): defined here, below both, so neither imports the other."""


@dataclass(frozen=True)
class PrecisionRecipe:
    """Bytes per parameter of each model-state copy."""

    name: str
    weight_bytes: float
    """The parameters as the module holds them."""
    grad_bytes: float
    master_bytes: float
    """A separate fp32 master copy (0 when the parameters themselves are the master)."""
    state_bytes: float
    """One optimizer state element (Adam keeps two per parameter)."""
    compute_bytes: int = 2
    """Activations and gathered FSDP units (bf16 = 2)."""
    persistent_grads: bool = False
    """Gradient buffers live for the whole step (Megatron/DeepSpeed contiguous buffers) rather
    than being freed by zero_grad(set_to_none=True)."""
    autocast_weight_copies: bool = False
    """fp32 parameters under torch.autocast: bf16 copies of matmul weights are saved for backward."""
    fp8_weight_bytes: float = 0.0
    """Transformer Engine keeps FP8 copies (and transposes) of linear weights."""
    optimizer_impl: str = "foreach"
    source: str = ""

    def bytes_per_param(self, states: float) -> float:
        return self.weight_bytes + self.grad_bytes + self.master_bytes + states * self.state_bytes


RECIPES: dict[str, PrecisionRecipe] = {r.name: r for r in (
    PrecisionRecipe("article", 2, 4, 0, 4, optimizer_impl="fused",
                    source="the article: weights 2Ψ + gradients 4Ψ + AdamW states 8Ψ = 14Ψ"),
    PrecisionRecipe("mixed", 2, 2, 4, 4, persistent_grads=True, optimizer_impl="fused",
                    source="ZeRO (Rajbhandari et al. 2020) Sec. 3.1: fp16 params + grads, fp32 master + Adam = 16Ψ"),
    PrecisionRecipe("megatron", 2, 4, 4, 4, persistent_grads=True, optimizer_impl="fused",
                    source="Megatron-LM distributed-optimizer docs: bf16 params, fp32 main grads, fp32 master + "
                           "Adam = 18 B/param; --zero 1 gives the distributed optimizer's 6 + 12/d"),
    PrecisionRecipe("fsdp2", 4, 4, 0, 4, source="torchtitan default: fp32 sharded params, "
                    "MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)"),
    PrecisionRecipe("amp", 4, 4, 0, 4, autocast_weight_copies=True,
                    source="plain PyTorch: fp32 params + torch.autocast(bf16)"),
    PrecisionRecipe("bf16", 2, 2, 0, 2, source="pure bf16: params, grads and optimizer states in bf16"),
    PrecisionRecipe("fp32", 4, 4, 0, 4, compute_bytes=4, source="fp32 everything"),
    PrecisionRecipe("fp8", 2, 4, 4, 4, persistent_grads=True, fp8_weight_bytes=2.0, optimizer_impl="fused",
                    source="Transformer Engine FP8 linears (fp8 weight + transpose caches) with Megatron's "
                           "bf16/fp32 optimizer"),
)}


@dataclass(frozen=True)
class OptimizerSpec:
    name: str
    matrix_states: float
    """State elements per parameter of a 2-D hidden weight matrix."""
    other_states: float
    """State elements per parameter of embeddings, LM head, norms and biases."""
    fixed_state_bytes: float | None = None
    """Bytes per state element when the optimizer fixes it (8-bit Adam: 1)."""
    overhead_bytes_per_param: float = 0.0
    source: str = ""


OPTIMIZERS: dict[str, OptimizerSpec] = {o.name: o for o in (
    OptimizerSpec("adamw", 2, 2, source="Loshchilov & Hutter 2019: exp_avg and exp_avg_sq"),
    OptimizerSpec("adam8bit", 2, 2, fixed_state_bytes=1, overhead_bytes_per_param=2 * 4 / 2048,
                  source="Dettmers et al. 2022 (bitsandbytes): 8-bit states, one fp32 absmax per 2048-block"),
    OptimizerSpec("sgd", 1, 1, source="SGD with momentum: one buffer"),
    OptimizerSpec("lion", 1, 1, source="Chen et al. 2023 (Lion): one momentum buffer"),
    OptimizerSpec("adafactor", 0, 1, source="Shazeer & Stern 2018: factored second moment, O(rows+cols) per "
                  "matrix (counted as 2/hidden per parameter), no momentum"),
    OptimizerSpec("muon", 1, 2, source="Jordan et al. 2024 (Muon): momentum on hidden matrices; AdamW on "
                  "embeddings, head, norms (Moonlight, Liu et al. 2025)"),
)}


def lookup(table: dict, name: str, field: str):
    if name not in table:
        raise InputError(field, name, f"must be one of {', '.join(table)}")
    return table[name]


RECIPE_COMPUTE_DTYPE = {"bf16": "bf16", "fp8": "fp8"}
"""Recipes whose name is their compute dtype (the others run bf16 or fp16 autocast, which every
training GPU has): the accelerator must have a path for it (V100 has no bf16, A100 no fp8)."""


def check_recipe_runs_on(recipe: str, gpu) -> None:
    """InputError naming ``recipe`` when ``gpu`` (core.hardware.Accelerator) cannot compute in it."""
    dtype = RECIPE_COMPUTE_DTYPE.get(recipe)
    if dtype is not None and not gpu.has_dtype(dtype):
        raise InputError("recipe", recipe, f"computes in {dtype}, which {gpu.name} has no path for (it has "
                         f"{', '.join(d for d, _ in gpu.peak_flops)}); choose another --recipe or --gpu")
