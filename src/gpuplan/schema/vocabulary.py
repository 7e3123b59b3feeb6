"""The shared vocabulary: every option that more than one command takes, defined once.

A job schema declares such a field with the alias below (``seq_len: SeqLen``), so the name,
type, unit, range, default and help text are the same in every command, plan file and API body.
tests/test_vocabulary.py walks every command and fails when an option name appears in two
commands with different definitions; docs/cli.md lists this table.

Where "not given" leads somewhere different per command, the help says so in one sentence.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, WithJsonSchema

from gpuplan.core import precision as M  # the recipe and optimizer tables (no numpy)
from gpuplan.core.economics.cost import MAX_SPOT_DISCOUNT, MIN_USD_PER_GPU_HOUR
from gpuplan.core.frameworks import DEFAULT_FRAMEWORK, FRAMEWORKS
from gpuplan.core.memory.recompute import MEGATRON_RECOMPUTE_MODULES
from gpuplan.errors import InputError
from gpuplan.schema import types as T
from gpuplan.schema.list_field import ListRule, list_schema, read_list

DTYPES = M.COMPUTE_DTYPES
RECOMPUTE = ("none", "selective", "full")
IMPLEMENTATIONS = ("hf", "megatron", "megatron-local", "torchtitan")
ATTENTION_KERNELS = ("flash", "flash1", "sdpa", "eager")
PRECISIONS = ("bf16", "fp32", "fp32-autocast")
FINETUNES = ("full", "lora", "qlora")
DEFAULT_RECIPE = "mixed"
"""ZeRO paper Sec. 3.1: fp16/bf16 params and grads, fp32 master and Adam = 16 B/param."""
DEFAULT_IMPLEMENTATION = "megatron"
"""Flash attention with Korthikanti et al. 2022's per-layer accounting (docs/memory.md)."""

# Upper bounds: far above any real run, low enough that no product overflows int64 or a float.
MAX_GPUS = 10_000_000
MAX_DEGREE = 1 << 20
MAX_TOKENS = 1e18
MAX_SEQ_LEN = 1 << 24
MAX_BATCH = 1 << 30
MAX_GPUS_PER_NODE = 8_960
"""The largest scale-up domain in the catalog: a TPU v5p pod, 8,960 chips on ICI (catalog/hardware/
tpu-v5p.toml domain_size; GB200 / GB300 NVL72 racks are 72, CloudMatrix384 384, TPU v4 4,096). A
node past every scale-up domain built is a typo: it put whole clusters on one switch (2^20 was taken)."""


def field(default: Any, help: str, shown: str | None = None, **extra: Any) -> Any:
    """A Field with its help text; ``shown`` is the default as --help prints it when the schema
    default is None (derived from other inputs)."""
    schema_extra = {"default_text": shown} if shown is not None else {}
    return Field(default=default, description=help, json_schema_extra=schema_extra or None, **extra)


def option(kind: Any, default: Any, help: str, shown: str | None = None) -> Any:
    """A shared option: ``kind`` (an annotated type) with its Field."""
    return Annotated[kind, field(default, help, shown)]


def _calibration(value: Any, info) -> Any:
    """A calibration: a Calibration, its JSON document (a mapping), or a path to one."""
    from gpuplan.calibrate.model import Calibration, calibration_from_dict, calibration_to_dict, load_calibration

    if value is None:
        return value
    if isinstance(value, Calibration):  # checked as its document is: a hand-built NaN factor was refused only later,
        return calibration_from_dict(calibration_to_dict(value), "a Calibration object",  # as 'wall_seconds' (wave
                                     "a Calibration as `gpuplan calibrate` fits it or load_calibration reads it")  # 18)
    if isinstance(value, dict):  # quoted as what it is ('calibration: got 'calibration'' said nothing: wave 26)
        return calibration_from_dict(value, "the JSON document")
    if isinstance(value, str):  # read once while unchanged: a campaign's stages each name it (adapters.read_once)
        from gpuplan.adapters.read_once import read_once

        path = T.name(value, info)
        return read_once(path, "calibration", lambda: load_calibration(path))
    raise InputError("calibration", type(value).__name__, "expected a calibration file path or its JSON document")


Count = T.typed(float, T.count(MAX_TOKENS))
def _gpus(value: Any, info) -> int:
    """One total GPU count; a list or range (256,512 / 512-4096) is `plan`'s and says so (it was 'expected a
    number with an optional K/M/B/T suffix')."""
    if isinstance(value, list | tuple) or (isinstance(value, str) and ("," in value or "-" in value.strip()[1:])
                                           and "e-" not in value.lower()):  # a YAML / JSON list too
        raise InputError(_field_name(info), value, "one total GPU count, e.g. 64; a list (256,512) or a range "
                         "(512-4096) of counts is for `gpuplan plan`")
    return T.count(MAX_GPUS, whole=True)(value, info)


def _field_name(info) -> str:
    return info.field_name if info is not None and info.field_name else "gpus"


Gpus = T.typed(int, _gpus)
Degree = T.typed(int, T.count(MAX_DEGREE, whole=True))


def _gpus_per_node(value: Any, info) -> int:
    """GPUs in one scale-up domain: a whole number from 1 to MAX_GPUS_PER_NODE."""
    try:
        return T.count(MAX_GPUS_PER_NODE, whole=True)(value, info)
    except InputError as exc:
        raise InputError(exc.field, exc.value, f"give a whole number of GPUs from 1 to {MAX_GPUS_PER_NODE:,}, the "
                         "largest scale-up domain in the catalog (a TPU v5p pod; NVL72 racks are 72)") from None


GpusPerNode = T.typed(int, _gpus_per_node)
TokenLength = T.typed(int, T.count(MAX_SEQ_LEN, whole=True, suffix_base=1024))
ServingContext = T.typed(int, T.count(MAX_SEQ_LEN, low=2, whole=True, suffix_base=1024))
"""`infer --context`: a prompt token and an output token at least (wave 21: `--context 1` was refused as 'output_tokens:
got 0; must be at least 1 and below the context (1)', a field not given, and no value of it valid)."""
Sequences = T.typed(int, T.count(MAX_BATCH, whole=True))
Zero = T.typed(int, T.number(0, 3, whole=True))
def _usd_per_gpu_hour(value: Any, info) -> float:
    """USD per GPU-hour in [MIN_USD_PER_GPU_HOUR, 1e6]: below the floor a price printed a $0 budget (wave 12)."""
    try:
        return T.number(MIN_USD_PER_GPU_HOUR, 1e6)(value, info)
    except InputError as exc:
        if not exc.expected.startswith("must be >="):  # not a number, not finite: its own message
            raise
        raise exc.retold(exc.field, value, f"must be at least ${MIN_USD_PER_GPU_HOUR:g}/GPU-h and at most "
                         f"$1,000,000/GPU-h: the floor is {1 - MAX_SPOT_DISCOUNT:.1%} of the cheapest published "
                         "on-demand price, as --spot-price takes at least 0.1% of on-demand") from None


Usd = T.typed(float, T.number(0, 1e6, low_open=True))
"""--spot-price: bounded by the on-demand price it discounts (jobs.budget.model.resolve_prices: at least 0.1%)."""
OnDemandUsd = T.typed(float, _usd_per_gpu_hour)
Share = T.typed(float, T.share())
Gib = T.typed(float, T.number(0, 4096))
CalibrationDoc = Annotated[Any, BeforeValidator(_calibration),
                           WithJsonSchema({"anyOf": [{"type": "object"}, {"type": "string", "maxLength": 256}]})]

# ---- what is trained or served --------------------------------------------------------------
Model = option(T.Name | None, None, "Model: a catalog name (`gpuplan catalog models`), a Hugging Face id "
               "(org/name), or a config.json or a folder holding one.", "--params 7B (the article's)")
ParamCount = T.typed(float, T.count(1e15, low=1e6))
Params = option(ParamCount | None, None, "Bare parameter count instead of a model, e.g. 7B (a generic Llama-style "
                "shape whose heads divide 8).")
Tokens = option(T.typed(float, T.count(MAX_TOKENS, low=1e3)), 2e12, "Training tokens, e.g. 2T.", "2T")
SeqLen = option(TokenLength, 4096, "Tokens per sequence; K = 1,024 (8K = 8,192). Not given: 4096, or the model's "
                "positions where fewer (GPT-2's learned table: 1,024; PaLM's max_position_embeddings: 2,048).")

# ---- hardware and time ----------------------------------------------------------------------
Gpu = option(T.Name, "a100", "Accelerator: catalog id or alias (`gpuplan catalog gpus`).")
GPU_COUNT = field(None, "Total GPUs; `plan` also takes a list (256,512) or a range (100-300: its powers of two and "
                  "both ends). Not given: solved from --days (train), searched by `plan`, 1 elsewhere.", "derived")
GpuCount = Annotated[Gpus | None, GPU_COUNT]
Days = option(T.Days | None, None, "Wall-clock deadline: 7, 7d, 36h or 2w (a bare number is days).")
Dtype = option(T.choice(*DTYPES), "bf16", "Compute dtype whose dense peak FLOP/s is used: bf16, fp16, fp8, fp4 "
               "(4-bit linear layers at the part's FP4 peak: NVFP4 on Blackwell, MXFP4 on MI355X), tf32, fp32.")
Fp8Recipe = option(T.choice("tensorwise", "mxfp8"), "tensorwise", "FP8 scaling of the linears with --dtype fp8: "
                   "tensorwise (per-tensor current or delayed scaling) or mxfp8 (MX 32-element block scaling; parts "
                   "with block-scaled tensor cores: Blackwell, MI355X).")
Price = option(OnDemandUsd | None, None, "On-demand USD per GPU-hour (overrides the price catalog).", "price catalog")

# ---- layout ---------------------------------------------------------------------------------
NOT_GIVEN = "Not given: the planner's choice (train, budget, plan); {memory} for `memory`."
Tp = option(Degree | None, None, "Tensor-parallel degree. " + NOT_GIVEN.format(memory="1"), "planner")
Pp = option(Degree | None, None, "Pipeline-parallel degree (stages may be uneven). " + NOT_GIVEN.format(memory="1"),
            "planner")
Vpp = option(Degree | None, None, "Virtual pipeline stages per rank (interleaved 1F1B; needs pp > 1). "
             + NOT_GIVEN.format(memory="1"), "planner")
Cp = option(Degree | None, None, "Context-parallel degree. " + NOT_GIVEN.format(memory="1"), "planner")
Ep = option(Degree | None, None, "Expert-parallel degree (MoE). " + NOT_GIVEN.format(memory="1"), "planner")
Etp = option(Degree | None, None, "Expert tensor-parallel degree (MoE): how many ways each routed expert's matrices "
             "are split (Megatron-Core's --expert-tensor-parallel-size; Megatron-Bridge's MoE recipes set 1). Not "
             "given: the framework's, tp under megatron and generic (Megatron-Core's default); under torchtitan tp "
             "without expert parallelism and 1 with it; 1 under deepspeed (whole experts).", "framework")
ZeroStage = option(Zero | None, None, "ZeRO stage 0-3 (3 = FSDP full shard). Not given: the planner's choice "
                   "(train, budget, plan); for `memory`, the framework's when data-parallel (torchtitan 3, hf 0, "
                   "others 1), else 0 (calibrate: the log format's).", "planner")
SHARD_GROUP_SEARCH = "auto"
"""--shard-group's word: the planner searches the groups itself (planner.shard_group_search)."""


def _shard_group(value: Any, info) -> Any:
    """A whole number of data-parallel ranks, or the word auto (trimmed, any case)."""
    if isinstance(value, str) and value.strip().lower() == SHARD_GROUP_SEARCH:
        return SHARD_GROUP_SEARCH
    try:
        return T.count(MAX_DEGREE, whole=True)(value, info)
    except T.NotACount as exc:  # text that is no count: the word is valid too
        raise InputError(exc.field, exc.value, "expected a whole number of data-parallel ranks such as 8, or auto "
                         "(the planner searches the groups)") from None
    except InputError as exc:  # true / false, 0, -8, 8.5: the number's refusal, and the word is valid too (R1 N5)
        raise exc.retold(exc.field, exc.value, f"{exc.expected}; or auto (the planner searches the groups)") from None


ShardGroup = option(T.typed(int | Literal["auto"], _shard_group) | None, None, "A number of data-parallel ranks "
                    "(e.g. 8), or auto. HSDP: shard the model states "
                    "within groups of this many data-parallel ranks and replicate them across the dp x cp / "
                    "shard-group groups (an all-reduce of each gradient shard across them). Must divide dp x cp; "
                    "needs --zero 1 or more (schema.shard_group: the stages each framework runs it with). auto "
                    "(plan, train, budget): the planner also searches the groups of a node times a power of two (8, 16, "
                    "32, ... GPUs on 8-GPU nodes: --gpus-per-node) below each layout's dp x cp and ranks them with "
                    "plain sharding; `memory` takes a number. Not given: every data-parallel rank shards (plain ZeRO / FSDP).",
                    "all data-parallel ranks")
MicroBatch = option(Sequences | None, None, "Sequences per micro-batch. Not given: the planner's choice (train, "
                    "budget, plan); 1 elsewhere.", "planner")
GlobalBatch = option(Sequences | None, None, "Sequences per optimizer step (x --seq-len tokens).", "derived")
GlobalBatchTokens = option(T.typed(float, T.count(1e12)) | None, None, "Tokens per optimizer step, e.g. 4M "
                           "(Llama 2's 4M tokens = 4 x 2^20); the planner rounds the sequences to a multiple of "
                           "dp. Not given: 4M, at least 1,024 per GPU past 4,096 GPUs (Llama 3 405B, MegaScale).",
                           "4,194,304")
MtpLayers = option(T.typed(int, T.number(0, 64, whole=True)) | None, None, "Multi-token-prediction modules "
                   "trained after the main model (DeepSeek-V3: 1; 0 switches them off). Not given: the config's "
                   "num_nextn_predict_layers where the framework trains them (megatron, generic), else 0.",
                   "the framework's")
Recompute = option(T.choice(*RECOMPUTE) | None, None, "Activation recompute: none, selective or full. Not given: "
                   "the planner's choice (train, budget, plan); none elsewhere.", "planner")


def _recompute_module(name: Any) -> str:
    """One entry of --recompute-modules: a Megatron module name, any case."""
    if not isinstance(name, str) or name.lower() not in MEGATRON_RECOMPUTE_MODULES:
        raise InputError("recompute_modules", name, RECOMPUTE_MODULE_FORMS)
    return name.lower()


RECOMPUTE_MODULE_FORMS = f"names separated by commas, from: {', '.join(MEGATRON_RECOMPUTE_MODULES)}"
RECOMPUTE_MODULE_LIST = ListRule("recompute_modules", RECOMPUTE_MODULE_FORMS, "modules", _recompute_module,
                                 len(MEGATRON_RECOMPUTE_MODULES))
"""--recompute-modules' list (schema.list_field's rules: an empty entry or a name given twice refused, naming it)."""


def _recompute_modules(value: Any, info) -> tuple[str, ...]:
    """Megatron module names separated by commas (or a list), each once."""
    if isinstance(value, str) and value.strip():
        T.name(value, info)  # the text's own checks first: at most schema.types.MAX_TEXT, no unseen characters
    return read_list(value, RECOMPUTE_MODULE_LIST)


MODULES_SCHEMA = list_schema({"type": "string"}, len(MEGATRON_RECOMPUTE_MODULES), 200)
RecomputeModules = option(T.typed(tuple[str, ...], _recompute_modules, MODULES_SCHEMA) | None,
                          None, "Megatron's --recompute-modules (implies --recompute selective; --framework "
                          "megatron): which parts of each layer selective recompute re-runs, e.g. moe_act,layernorm "
                          f"({', '.join(MEGATRON_RECOMPUTE_MODULES)}).", "core_attn")
RecomputeLayers = option(Degree | None, None, "Megatron's --recompute-num-layers with the block method (implies "
                         "--recompute full; --framework megatron): only the first N layers of each virtual pipeline "
                         "chunk are recomputed.", "every layer")

# ---- precision and memory -------------------------------------------------------------------
Framework = option(T.choice(*FRAMEWORKS), DEFAULT_FRAMEWORK, "Training framework whose memory behaviour is modelled: "
                   f"{', '.join(FRAMEWORKS)} (generic: gpuplan's framework-neutral model). It sets the defaults of "
                   "--recipe, --implementation and --optimizer-impl.")
SequenceParallel = option(T.Bool, True, "Sequence parallelism with tp > 1 (Megatron --sequence-parallel, torchtitan's "
                         "TP plan): norms and residual adds, and their activations, split over tp; TP exchanges as reduce-scatter + "
                         "all-gather. --no-sequence-parallel: code without it (Megatron-LM before 2022-04, "
                         "Megatron-DeepSpeed, GPT-NeoX v1.0) keeps them whole on every TP rank and all-reduces "
                         "(core/time/sequence_parallel.py); refused with --tp 1, --tp-comm-overlap, or a MoE model "
                         "under --framework megatron (schema/layout_rules.py).")
GradAllReduce = option(T.Bool, False, "Under ZeRO-1, all-reduce every gradient and then all-gather the updated "
                      "shards (2S + S; ZeRO-1 otherwise reduce-scatters, S + S): DeepSpeed's PipelineEngine as "
                      "GPT-NeoX v1.0 runs it (core/comm/dp_costs.py ALL_REDUCE_THEN_GATHER). Needs --zero 1 "
                      "stated; not under torchtitan or hf (no ZeRO-1). Under --framework deepspeed it changes no "
                      "figure: DeepSpeed's ZeRO-1 all-reduces each bucket anyway (zero/config.py@edaa722 L119).")
Compile = option(T.Bool, False, "torch.compile per TransformerBlock, model and loss (torchtitan's "
                 "[compile] enable with components model, loss; --framework torchtitan, dense gated models): the "
                 "step is timed with Inductor's fused kernels (core/time/titan_ops.py). Not given: eager, "
                 "torchtitan's default.")
Loss = option(T.choice("hf-ce", "fp32-ce", "vocab-parallel-ce", "te-ce", "chunked") | None, None, "Loss memory: hf-ce (HF keeps the bf16 logits "
              "and the fp32 log-softmax), fp32-ce (the fp32 log-softmax only), vocab-parallel-ce (Megatron: fp32 softmax, "
              "backward in place), te-ce (Megatron with cross_entropy_fusion_impl te: Transformer Engine's fused loss keeps "
              "the bf16 logits and writes their gradient into them) or chunked (torchtitan: LM head + "
              "CE in 8 chunks). Not given: the framework's.", "the framework's")
Recipe = option(T.choice(*M.RECIPES) | None, None, f"Precision recipe of the model states: {', '.join(M.RECIPES)}. "
                "fp8 computes in fp8 (TE's FP8 linears) where --dtype is not given (train, budget, plan, memory). Not "
                "given: the framework's (megatron: megatron; calibrate: the log format's).", "the framework's")
Optimizer = option(T.choice(*M.OPTIMIZERS), "adamw", f"Optimizer: {', '.join(M.OPTIMIZERS)}.")
OptimizerImpl = option(T.choice("foreach", "fused", "forloop") | None, None, "Optimizer kernel: foreach (one "
                       "parameter-sized step buffer), fused (none) or forloop (two of the largest tensor). Not "
                       "given: the framework's.", "the framework's")
Implementation = option(T.choice(*IMPLEMENTATIONS) | None, None, "Activation implementation: hf (transformers "
                        "modules), megatron (Transformer Engine), megatron-local (Megatron-Core without TE) or torchtitan. Not given: the framework's.", "the framework's")
AttentionKernel = option(T.choice(*ATTENTION_KERNELS), "flash", "Attention kernel: flash (= sdpa: saves q, k, v, "
                         "out and the log-sum-exp), flash1 (FlashAttention 1, flash-attn < 2: flash's memory, its "
                         "measured 1.8-2.2x time at s 2,048, Dao 2023 Fig. 4; head dims up to 128) or eager "
                         "(materialised s x s scores).")
Precision = option(T.choice(*PRECISIONS), "bf16", "Trial precision: bf16 (pure), fp32, or fp32-autocast (fp32 "
                   "params, bf16 compute). Not given, `profile` on a CPU without native bf16 (no AVX512-BF16 / AMX; "
                   "torch.cpu.get_capabilities) runs fp32 and says why (profile/cpu_precision.py).")
Finetune = option(T.choice(*FINETUNES), "full", "full, lora or qlora (a frozen base + adapters: no "
                  "weight-gradient matmuls for the base, its states not trained).")
LoraRank = option(Degree, 16, "LoRA rank (adapters on every linear layer).")
Margin = option(T.typed(float, T.share(0.9)), 0.05, "Memory kept free beyond the modelled allocator reserve and "
                "CUDA/NCCL runtime, e.g. 0.05 or 5% (with those, the article's 15-20%).")
Allocator = option(T.choice("caching", "expandable") | None, None, "PyTorch caching-allocator segments: caching "
                   "(the default: reserved = allocated x 1.12) or expandable (PYTORCH_CUDA_ALLOC_CONF="
                   "expandable_segments:True: x 1.03). Not given: the framework's (torchtitan: expandable).",
                   "the framework's")
STATE_DTYPE_BYTES = {"fp32": 4.0, "bf16": 2.0}
"""Bytes per element of the --grad-dtype / --moment-dtype choices (MemorySettings grad_bytes / moment_bytes)."""
GradDtype = option(T.choice(*STATE_DTYPE_BYTES) | None, None, "Gradient buffer dtype: fp32 (Megatron-Core "
                   "grad_reduce_in_fp32) or bf16 (the parameters' dtype: grad_reduce_in_fp32 off, as Megatron-Bridge's "
                   "performance recipes run). Not given: the recipe's.", "the recipe's")
MomentDtype = option(T.choice(*STATE_DTYPE_BYTES) | None, None, "Dtype of Adam's moments (--optimizer adamw): bf16 = "
                     "Megatron-Core's precision-aware optimizer with exp_avg_dtype / exp_avg_sq_dtype bf16, or "
                     "torchtitan's fused_opt_states_bf16 (2 B each instead of 4). Not given: the recipe's.",
                     "the recipe's")
LowPrecisionWeights = option(T.choice("primary", "cached") | None, None, "How Transformer Engine's linears hold "
                             "their weights under --dtype fp8 / fp4: primary (Megatron --fp8-param-gather / "
                             "fp4_param_gather: only the quantised row-wise + column-wise copies, 2 x 1 B for "
                             "FP8 on Hopper, one 1 B copy for tensor-scaled FP8 on sm_100 Blackwell) or "
                             "cached (bf16 weights plus that quantised copy, cached across micro-batches). Not given: "
                             "bf16 weights, no copy counted.", "bf16 weights")
FsdpFloat8AllGather = option(T.Bool, False, "torchtitan's --float8.enable_fsdp_float8_all_gather (with "
                              "precompute_float8_dynamic_scale_for_fsdp): FSDP2 gathers the Float8Linear weights as "
                              "float8, 1 B an element instead of bf16's 2, cast on the shard before the gather, and "
                              "holds them unsharded at 1 B (core/time/titan_float8.py, core/memory/float8_gather.py). "
                              "--framework torchtitan, --dtype fp8 tensorwise, FSDP degree > 1. Not given: bf16 "
                              "gathers, torchtitan's default (config_manager.py@9dec370 L541-545).")
EmbeddingLossSlots = option(T.Bool, False, "Megatron's account_for_embedding_in_pipeline_split and "
                            "account_for_loss_in_pipeline_split (Megatron-Bridge's Llama 3.1 405B and Qwen3-235B "
                            "recipes): the embedding and the loss each take a layer slot, so the first and last "
                            "pipeline stages hold one layer fewer (memory; the step model keeps the even split).")
OffloadLayers = option(T.typed(int, T.number(0, 1024, whole=True)), 0, "CPU activation offloading of the first N "
                       "layers (Megatron-Core --cpu-offloading-num-layers, Transformer Engine's offload context): their "
                       "saved activations wait in host memory; at least one layer stays on the GPU.")
EpDispatcher = option(T.choice("alltoall", "flex"), "alltoall", "MoE token dispatcher: alltoall (NCCL, one copy per "
                      "remote expert) or flex (DeepEP / HybridEP: one copy per remote node, then NVLink). Memory counts "
                      "flex as the buffers of its --flex-backend (DeepEP's normal-mode buffers by default, HybridEP's "
                      "with hybridep) in place of NCCL's all-to-all peers.")
Calibration = option(CalibrationDoc | None, None, "Calibration from `gpuplan calibrate` (a file path; the API "
                     "takes the JSON document).")

# ---- outputs --------------------------------------------------------------------------------
Out = option(T.Name | None, None, "File to write (atomically: a temporary file renamed into place).")


def check_micro_batch(micro_batch: int | None, batch: float | None, exact: bool) -> None:
    """--micro-batch against the global batch in sequences (``exact``: --global-batch, kept exactly;
    else a target the planner rounds): at most the batch (dp 1), and with --global-batch a divisor of
    it (Megatron asserts global_batch % (micro_batch x dp) == 0). Both were 'no layout can use these
    GPU counts', naming gpus (--global-batch 8 --micro-batch 3)."""
    if micro_batch is None or batch is None:
        return
    if micro_batch > max(1, round(batch)):
        raise InputError("micro_batch", micro_batch, f"more than the global batch of {batch:,.0f} sequences "
                         f"(--global-batch / --global-batch-tokens): at most {max(1, round(batch)):,}")
    if exact and round(batch) % micro_batch:
        divisors = [d for d in range(1, min(round(batch), 4096) + 1) if round(batch) % d == 0][:8]
        raise InputError("micro_batch", micro_batch, f"must divide --global-batch {batch:,.0f} (global_batch % "
                         f"(micro_batch x dp) == 0, Megatron's rule), e.g. {', '.join(map(str, divisors))}")


def check_step_tokens(tokens: float | None, batch_tokens: float | None) -> None:
    """Training tokens of at least one optimizer step: `train --params 7B --tokens 1e3 --gpus 8` answered
    0.04 s of wall-clock for a 4,194,304-token step that takes 212 s (tokens < the global batch)."""
    if tokens is not None and batch_tokens is not None and tokens < batch_tokens:
        raise InputError("tokens", f"{tokens:,.0f}", f"fewer than one optimizer step's global batch of "
                         f"{batch_tokens:,.0f} tokens; give at least that many, or a smaller --global-batch or "
                         "--global-batch-tokens")
