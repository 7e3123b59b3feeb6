"""The step's precision fields -- --dtype, --fp8-recipe, --recipe, --low-precision-weights -- checked by one set of
rules for every training door (plan, train, budget, memory): each refusal names its field.

--dtype is the compute dtype of the linears: its peak FLOP/s, and under Transformer Engine (megatron) the width the
linears keep their inputs in for the weight gradient (core.memory.activations.saved_linear_input_bytes).
--recipe fp8 is a model-states recipe (core.precision.RECIPES): Megatron's bf16 weights, fp32 gradients, master and
Adam moments plus TE's FP8 weight and transpose caches (2 B per matrix parameter). It names a compute dtype of its
own (core.precision.RECIPE_COMPUTE_DTYPE), so a --dtype stated otherwise contradicts it; left out, --dtype keeps its
default (bf16), as every door has answered `--recipe fp8` alone."""

from __future__ import annotations

from typing import Any

from gpuplan.core.frameworks import MEGATRON_CORE_FRAMEWORKS
from gpuplan.errors import InputError


def check_precision(inputs: Any) -> None:
    """--low-precision-weights needs TE's FP8 / FP4 linears (--dtype fp8 or fp4 under megatron) and is not the
    fp8 recipe's weight caches again; --recipe fp8 refuses a --dtype stated other than fp8."""
    dtype = getattr(inputs, "dtype", None)
    weights = inputs.low_precision_weights
    if weights is not None and (dtype not in ("fp8", "fp4") or inputs.framework not in MEGATRON_CORE_FRAMEWORKS):
        raise InputError("low_precision_weights", weights, "describes Transformer Engine's FP8 / FP4 linears: give "
                         "--dtype fp8 or fp4 with --framework megatron (plan, train, budget, memory)")
    if inputs.recipe_name != "fp8":
        return
    if "dtype" in inputs.given and dtype != "fp8":
        raise InputError("recipe", "fp8", f"computes in fp8 (Transformer Engine's FP8 linears and their weight "
                         f"caches), which --dtype {dtype} contradicts: give --dtype fp8, or another --recipe "
                         "(megatron: the same states without the FP8 weight caches)")
    if weights is not None:
        raise InputError("low_precision_weights", weights, "counts Transformer Engine's quantised weight copies, "
                         "which --recipe fp8 counts already (2 B per matrix parameter): give one of the two "
                         "(--recipe megatron --low-precision-weights, or --recipe fp8 alone)")


def check_fp8_recipe(inputs: Any) -> None:
    """--fp8-recipe mxfp8 scales FP8 linears: it needs --dtype fp8."""
    dtype = getattr(inputs, "dtype", "fp8")
    if inputs.fp8_recipe == "mxfp8" and dtype != "fp8":
        raise InputError("fp8_recipe", "mxfp8", f"applies to --dtype fp8 (not {dtype}); use --dtype fp8")


def check_dtype_runs_on(inputs: Any, gpu: Any) -> None:
    """The part computes in --dtype (Accelerator.peak refuses it naming dtype) and has MX block-scaled tensor cores
    for --fp8-recipe mxfp8: the device rules of plan's search (jobs.plan.search._checked_gpu), for `memory`."""
    gpu.peak(inputs.dtype)  # InputError when the part lacks the dtype
    if inputs.fp8_recipe == "mxfp8" and not gpu.has_dtype("fp4"):
        # MX block-scaled tensor cores came with the FP4 ones (NVIDIA Blackwell sm_100, AMD CDNA4)
        raise InputError("fp8_recipe", "mxfp8", f"{gpu.name} has no block-scaled (MX) tensor cores; "
                         "use tensorwise, or a Blackwell-class part (b200, gb200, b300, gb300, mi355x)")
