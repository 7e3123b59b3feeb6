"""The step's precision fields -- --dtype, --fp8-recipe, --recipe, --low-precision-weights -- checked by one set of
rules for every training door (plan, train, budget, memory): each refusal names its field.

--dtype is the compute dtype of the linears: its peak FLOP/s, and under Transformer Engine (megatron) the width the
linears keep their inputs in for the weight gradient (core.memory.activations.saved_linear_input_bytes).
--recipe fp8 is a model-states recipe (core.precision.RECIPES): Megatron's bf16 weights, fp32 gradients, master and
Adam moments plus TE's FP8 weight and transpose caches (2 B per matrix parameter). It names a compute dtype of its
own (core.precision.RECIPE_COMPUTE_DTYPE), so a --dtype stated otherwise contradicts it, and a --dtype left out is
the recipe's (follow_recipe): the FP8 switch is one option in the frameworks -- Megatron-Core's --fp8-format "If
set, enables the use of FP8 precision through Transformer Engine" (transformer_config.py@d98e8a6 L587-592; its
--fp8-recipe only the scaling), torchtitan's model.converters ["float8"] swaps the linears for Float8Linear
(torchtitan/components/quantization/float8.py) -- so `--recipe fp8` alone computes in fp8. Before session 25 every
door answered it at bf16 compute (the FP8 weight caches counted, the linears' inputs at 2 B, the bf16 peak): an FP8
ask silently given a BF16 answer."""

from __future__ import annotations

from typing import Any

from gpuplan.core.frameworks import MEGATRON_CORE_FRAMEWORKS
from gpuplan.errors import InputError


def follow_recipe(inputs: Any) -> None:
    """--dtype left out follows a recipe that names its compute dtype (core.precision.RECIPE_COMPUTE_DTYPE: fp8 ->
    fp8; bf16 -> bf16, the default already; a --gpu without it refused naming recipe): set once, before any check
    reads it, as schema.tpu_rules.follow_device sets the framework; the field stays unstated (the answer's dtype
    line says whose it is: dtype_text). Run by ModelFields.follow_model for every job schema with both fields
    (train, budget, plan, memory)."""
    from gpuplan.core.precision import RECIPE_COMPUTE_DTYPE

    fields = type(inputs).model_fields
    if "dtype" not in fields or "recipe" not in fields or "dtype" in inputs.model_fields_set:
        return
    recipe = getattr(inputs, "recipe_name", None)
    dtype = RECIPE_COMPUTE_DTYPE.get(recipe)
    profile = getattr(inputs, "profile", None)
    if dtype is None or (profile is not None and profile.dtypes and dtype not in profile.dtypes):
        return  # llm.c (bf16 only): its own rule refuses --recipe fp8 naming recipe, as before
    from gpuplan.core.precision import check_recipe_runs_on
    from gpuplan.schema.device_rules import accelerator

    if (gpu := accelerator(getattr(inputs, "gpu", None))) is not None:  # a part without the dtype: refused naming
        if "gpu" not in inputs.model_fields_set and not gpu.has_dtype(dtype):  # memory's default a100, never typed
            raise InputError("recipe", recipe, f"computes in {dtype}, which the default --gpu ({gpu.name}; --gpu not "
                             f"given) has no path for: give --gpu with {dtype} (e.g. h100), or another --recipe")
        check_recipe_runs_on(recipe, gpu)  # recipe, the option typed (not 'dtype: got fp8', never typed)
    inputs.__dict__["dtype"] = dtype  # frozen for callers; set once


def check_default_dtype(inputs: Any) -> None:
    """--dtype left out (and not set by --recipe): a --gpu without a path for the default dtype is refused naming gpu,
    the option typed, with the dtypes it has (`plan --gpu v100` said "dtype: got 'bf16'", a value never typed). Run
    by ModelFields.follow_model after follow_recipe, for the job schemas with both fields (train, budget, plan,
    memory); a --dtype typed keeps its own refusal (core.hardware.Accelerator.peak)."""
    fields = type(inputs).model_fields
    if "dtype" not in fields or "recipe" not in fields or "dtype" in inputs.model_fields_set or \
            "gpu" not in inputs.model_fields_set or followed_recipe(inputs):
        return
    from gpuplan.schema.device_rules import accelerator

    gpu = accelerator(inputs.gpu)
    if gpu is None or gpu.has_dtype(inputs.dtype):
        return
    from gpuplan.schema.vocabulary import DTYPES

    have = [d for d, _ in gpu.peak_flops if d in DTYPES]  # --dtype's choices (not int8)
    raise InputError("gpu", inputs.gpu, f"{gpu.name} has no {inputs.dtype} path, the compute dtype when --dtype is not "
                     f"given: give --dtype {' or '.join(have[:2])} (it has {', '.join(have)}), or another --gpu")


def followed_recipe(inputs: Any) -> bool:
    """Whether ``inputs``' dtype is the one --recipe names (follow_recipe), not a --dtype stated or the default."""
    from gpuplan.core.precision import RECIPE_COMPUTE_DTYPE

    recipe = getattr(inputs, "recipe_name", None)
    return "dtype" not in inputs.model_fields_set and RECIPE_COMPUTE_DTYPE.get(recipe) == inputs.dtype != \
        type(inputs).model_fields["dtype"].default


def dtype_text(inputs: Any, detail: str | None = None) -> str:
    """The answer's compute dtype with ``detail`` (memory's FP8 scaling) in brackets, and whose it is where --recipe
    set it: 'fp8 (tensorwise; --recipe fp8's)'."""
    said = [part for part in (detail, f"--recipe {inputs.recipe_name}'s" if followed_recipe(inputs) else None) if part]
    return inputs.dtype + (f" ({'; '.join(said)})" if said else "")


def check_precision(inputs: Any) -> None:
    """--low-precision-weights needs TE's FP8 / FP4 linears (--dtype fp8 or fp4 under megatron) and is not the
    fp8 recipe's weight caches again; --recipe fp8 refuses a --dtype stated other than fp8."""
    dtype = inputs.dtype
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
    dtype = inputs.dtype
    if inputs.fp8_recipe == "mxfp8" and dtype != "fp8":
        raise InputError("fp8_recipe", "mxfp8", f"applies to --dtype fp8 (not {dtype}); use --dtype fp8")


def dtype_gap(gpu: Any, dtype: str, fp8_recipe: str | None) -> str | None:
    """What ``gpu`` (core.hardware.Accelerator) lacks to compute the linears in ``dtype`` under ``fp8_recipe``: "dtype"
    where it has no path for the dtype, "mx" where --fp8-recipe mxfp8 asks for MX block-scaled tensor cores it has not
    (they came with the FP4 ones: NVIDIA Blackwell sm_100, AMD CDNA4); None where it runs them. The one rule of
    check_dtype_runs_on and memory's --compare (jobs.memory.schema), each refusing in its own field."""
    if not gpu.has_dtype(dtype):
        return "dtype"
    return "mx" if fp8_recipe == "mxfp8" and not gpu.has_dtype("fp4") else None


def check_dtype_runs_on(inputs: Any, gpu: Any) -> None:
    """The part computes in --dtype and has MX block-scaled tensor cores for --fp8-recipe mxfp8 (dtype_gap), refused
    naming dtype (Accelerator.peak's words) or fp8_recipe: plan's search (jobs.plan.search._checked_gpu) and `memory`
    (its --gpu and its default verdict table)."""
    gap = dtype_gap(gpu, inputs.dtype, inputs.fp8_recipe)
    if gap == "dtype":
        gpu.peak(inputs.dtype)  # raises the InputError naming dtype and the dtypes the part has
    if gap == "mx":
        raise InputError("fp8_recipe", "mxfp8", f"{gpu.name} has no block-scaled (MX) tensor cores; "
                         "use tensorwise, or a Blackwell-class part (b200, gb200, b300, gb300, mi355x)")
