"""The assumptions of ``gpuplan memory``: each default or user-set input its figures depend on, with its
source and flag (jobs.memory.estimate lists them in the report), and the precision recipe as the run
holds its states."""

from __future__ import annotations

from gpuplan.core import frameworks as F
from gpuplan.core.memory import recipe_facts as RF
from gpuplan.core.memory import training as M
from gpuplan.core.memory.llmc_memory import RECOMPUTE_SOURCE as LLMC_RECOMPUTE
from gpuplan.core.memory.recompute import recompute_label
from gpuplan.core.units import format_bytes
from gpuplan.jobs.assumptions import mtp_assumption
from gpuplan.report.model import Assumption
from gpuplan.schema import tpu_rules as X
from gpuplan.schema.partition_activations import partition_activations_assumption
from gpuplan.schema.vocabulary import STATE_DTYPE_BYTES

_gib = format_bytes

def recipe_of(settings: M.MemorySettings) -> M.PrecisionRecipe:
    """The precision recipe as the run holds its states: the table's, with --grad-dtype / --moment-dtype
    (core.memory.recipe_facts.recipe_as_run; the peak uses the same)."""
    return RF.recipe_as_run(M.RECIPES[settings.recipe], settings.grad_bytes, settings.moment_bytes)


def compile_memory_assumption(inputs) -> tuple[Assumption, ...]:
    """--compile leaves the estimate as it is: Inductor's buffers are inside torchtitan's published
    memory gap, which plan keeps free (planner/framework_rules.py)."""
    if not inputs.compile:
        return ()
    return (Assumption("compile", "torch.compile", "per TransformerBlock, model and loss: same estimate",
                       "Inductor's buffers are inside torchtitan's published memory gap (compiled rows; "
                       "planner/framework_rules.py)", "--compile", True),)


def _dtype_name(width: float) -> str:
    """The --grad-dtype / --moment-dtype name of ``width`` bytes (schema.vocabulary.STATE_DTYPE_BYTES)."""
    names = {size: name for name, size in STATE_DTYPE_BYTES.items()}
    return names.get(float(width), f"{width:g} B")


def recipe_fact_assumptions(settings: M.MemorySettings, given) -> tuple[Assumption, ...]:
    """What a Megatron recipe sets beyond the precision recipe (core.memory.recipe_facts), each with its
    flag and whether the user set it (``given``: the fields given)."""
    recipe = recipe_of(settings)
    lpw = settings.low_precision_weights
    return (
        Assumption("grad_dtype", "gradient buffer", f"{_dtype_name(recipe.grad_bytes)} ({recipe.grad_bytes:g} B/param)",
                   "Megatron-Core DDP: fp32 with grad_reduce_in_fp32, else the parameters' dtype "
                   "(distributed_data_parallel.py)", "--grad-dtype", "grad_dtype" in given),
        Assumption("moment_dtype", "optimizer moments", f"{_dtype_name(recipe.state_bytes)} ({recipe.state_bytes:g} B "
                   "each)", "bf16 = Megatron-Core's precision-aware optimizer, exp_avg_dtype / exp_avg_sq_dtype "
                   "(optimizer_config.py)", "--moment-dtype", "moment_dtype" in given),
        Assumption("offload_layers", "CPU activation offloading", f"first {settings.offload_layers} layers"
                   if settings.offload_layers else "none", "Megatron-Core --cpu-offloading-num-layers (Transformer "
                   "Engine's get_cpu_offload_context)", "--offload-layers", "offload_layers" in given),
        Assumption("low_precision_weights", "low-precision weights", lpw or "bf16 weights, no quantised copy",
                   "Transformer Engine's row-wise + column-wise quantised weights (core.memory.recipe_facts)",
                   "--low-precision-weights", "low_precision_weights" in given),
        Assumption("embedding_loss_slots", "embedding / loss pipeline slots",
                   "one layer slot each" if settings.embedding_loss_slots else "no (even split)",
                   "Megatron account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split",
                   "--embedding-loss-slots", "embedding_loss_slots" in given),
    )


def _kernel_assumption(settings: M.MemorySettings, model_type: str) -> Assumption:
    """The attention kernel, and where transformers' modules run a model that refuses SDPA, why it is
    eager (no --attention-kernel changes it)."""
    from gpuplan.core.time.attention_core import SDPA_REFUSED_SOURCE, runs_eager_only

    if runs_eager_only(model_type, settings.framework, settings.implementation):
        return Assumption("attention_kernel", "attention kernel", "eager", f"{SDPA_REFUSED_SOURCE[model_type]}: "
                          "transformers falls back to eager, saving s x s scores", "--framework / --implementation")
    return Assumption("attention_kernel", "attention kernel", settings.attention_kernel,
                      "flash/SDPA saves q, k, v, out + logsumexp; eager saves s x s scores", "--attention-kernel")


def optimizer_source(settings: M.MemorySettings) -> str:
    """The optimizer line's source; adam8bit under megatron says how it is read (schema.layout_rules
    FRAMEWORK_OPTIMIZERS: Megatron-Core has no bitsandbytes, its 8-bit moments are the precision-aware fp8 ones)."""
    source = M.OPTIMIZERS[settings.optimizer].source
    if settings.optimizer == "adam8bit" and settings.framework == "megatron":
        return (f"{source}; under megatron read as Megatron-Core's precision-aware Adam with fp8 moments, "
                "--exp-avg-dtype / --exp-avg-sq-dtype fp8 (torch.uint8, 1 B each: megatron/training/arguments.py"
                "@core_v0.16.1 L2848-2857, L646)")
    return source


def memory_assumptions(settings: M.MemorySettings, overheads: M.Overheads,
                 model_type: str = "", gpu=None, framework_given: bool = True) -> tuple[Assumption, ...]:
    """The memory answer's assumptions; ``gpu`` and ``framework_given``: the framework's value says why it is generic
    on a TPU where none was stated (schema.tpu_rules.framework_shown)."""
    recipe = recipe_of(settings)
    return (
        Assumption("recipe", "precision recipe", settings.recipe, recipe.source, "--recipe"),
        Assumption("optimizer", "optimizer", settings.optimizer, optimizer_source(settings), "--optimizer"),
        Assumption("framework", "framework profile", X.framework_shown(settings.framework, framework_given, gpu),
                   "; ".join(F.framework(settings.framework).sources[:2]), "--framework"),
        *mtp_assumption(settings.mtp_layers, False),
        Assumption("optimizer_impl", "optimizer kernel", F.optimizer_impl_of(settings, recipe),
                   "foreach = PyTorch's CUDA default (one param-sized temporary); fused = none; forloop = two of the "
                   "largest tensor", "--optimizer-impl"),
        Assumption("loss", "loss memory", F.loss_of(settings), "hf-ce keeps the bf16 logits and the fp32 "
                   "log-softmax; fp32-ce the fp32 log-softmax; chunked one chunk at a time", "--loss"),
        Assumption("implementation", "activation implementation", settings.implementation,
                   "hf = transformers modules (measured); megatron = Korthikanti et al. 2022 with flash attention",
                   "--implementation"),
        _kernel_assumption(settings, model_type),
        Assumption("recompute", "activation recompute",
                   recompute_label(settings.recompute, settings.recompute_modules, settings.recompute_layers),
                   LLMC_RECOMPUTE if settings.framework == "llmc" else
                   "full keeps each layer input (2·sbh; ÷ tp under --partition-activations); Megatron's modules free "
                   "what core/memory/recompute.py lists", "--recompute / --recompute-modules / --recompute-layers"),
        *partition_activations_assumption(settings),  # DeepSpeed's partitioned checkpoints (schema.partition_activations)
        *_runtime_assumptions(overheads),
        Assumption("margin", "safety margin", f"{overheads.margin:.0%}", "beyond the modelled reserve and runtime "
                   "(together the article's 15-20%)", "--margin"),
    )


def _runtime_assumptions(overheads: M.Overheads) -> tuple[Assumption, ...]:
    """The CUDA context, NCCL buffers and caching-allocator reserve; on a TPU (Overheads.xla) one line saying none is
    modelled (schema.tpu_rules)."""
    if overheads.xla and overheads.measured:  # a calibration's memory_overhead (calibrate.apply)
        return (Assumption("runtime", "XLA runtime", X.measured_shown(_gib(overheads.measured), overheads.measured),
                           X.XLA_MEASURED_WHY, "--calibration"),)
    if overheads.xla:
        return (Assumption("runtime", "XLA runtime", "not modelled", X.XLA_RUNTIME_WHY, "--gpu"),)
    return (
        Assumption("cuda_context", "CUDA context", _gib(overheads.cuda_context + overheads.measured),  # + calibration's
                   "~300 MB with lazy loading (pytorch/pytorch#107667) + cuBLAS workspaces", "--cuda-context-gib"),
        Assumption("comm_buffers", "NCCL buffers per communicator",
                   _gib(overheads.comm_per_group) if overheads.comm_per_group is not None else
                   f"by GPU and group size: {0.688 * overheads.channel_scale:.2f} GB per group, "
                   f"{0.544 * overheads.channel_scale:.2f} GB per pair, all-to-all "
                   f"{0.469 * overheads.channel_scale / 1.5:.2f} GB per peer",
                   "NVIDIA/nccl#964 (A100: 688 MB per group, 544 MB per pair), #986 (linear in channels, "
                   "more for faster NVLink), #1685 (all-to-all on 8x H100: +3.28 GB)", "--comm-buffer-gib"),
        Assumption("allocator", "caching-allocator reserve", f"+{overheads.fragmentation:.0%} over allocated",
                   "fragmentation of cached blocks (expandable segments: +3%); fitted on published rows that report "
                   "both peaks (docs/accuracy.md)", "--allocator"),
    )
