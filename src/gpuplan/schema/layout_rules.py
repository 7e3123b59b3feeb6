"""Step facts and layouts the named framework refuses, or that change nothing: one line naming the field
(InputError), through every door (the CLI, plan files, the web API and the Python API share the schema:
schema.training_fields.SetupFields calls these). Each rule cites the framework code that raises, or says why
the option is a no-op there.

- ``--grad-all-reduce`` (core.comm.dp_costs.ALL_REDUCE_THEN_GATHER) is ZeRO-1's all-reduce then gather, as
  DeepSpeed's / DeeperSpeed's PipelineEngine runs it: it changes nothing at ZeRO 0 (already an all-reduce),
  2 or 3, and torchtitan's and the Trainer's DDP / FSDP2 have no ZeRO-1. It is taken with a stated
  ``--zero 1`` only (not under --framework torchtitan or hf): with the ZeRO stage left to the
  planner the option would restrict nothing the user could see (the search may pick ZeRO 0 or 3, where it is
  ignored), so the stage must be stated rather than the search silently narrowed.
- ``--no-sequence-parallel`` (core.time.sequence_parallel) is refused with ``--tp-comm-overlap`` (Megatron
  asserts "Tensor parallel communication/GEMM overlap can happen only when sequence parallelism is enabled",
  megatron/training/arguments.py@core_v0.15.0rc7 L899-900; TE's userbuffers and torchtitan's async TP overlap
  the all-gather / reduce-scatter pair sequence parallelism issues), on a mixture-of-experts model under
  --framework megatron (MoELayer raises with tensor parallelism and no sequence parallelism,
  megatron/core/transformer/moe/moe_layer.py@core_v0.15.0rc7 L258-262; at tp 1 it is a no-op, so every
  tp refuses it) and with ``--tp 1`` stated or, in ``memory``, left at its 1 (a no-op: sequence parallelism
  splits over TP ranks; Megatron itself turns it off at tp 1, arguments.py L888-897). With tp left to the
  planner it is taken: it times the searched tp > 1 layouts without sequence parallelism and leaves the tp 1
  ones as they are.
- torchtitan at b5bcd76 (core.frameworks' torchtitan profile) refuses a pipeline on a model with tied
  embeddings ("Weight tying is not supported with Pipeline Parallel.", torchtitan/models/common/decoder.py
  L168-170) and context parallelism with ScaledDotProductAttention (L173-183: "Context Parallel is not
  supported with ScaledDotProductAttention or VarlenAttention. Use FlexAttention or disable CP."); gpuplan
  times torchtitan's SDPA, not FlexAttention, so a stated ``--pp`` > 1 / ``--cp`` > 1 is refused there
  (the free search leaves them out: planner.framework_rules). The published torchtitan rows that ran CP
  with SDPA (release 9dec370, which allowed it) are evaluated at their layouts outside this schema
  (jobs.validation.published_fits / planner_choice), so they stay evaluable.
- torchtitan's async TP needs torch.compile (config/configs.py@b5bcd76 L306-313).
- ``--embedding-loss-slots`` with ``--pp 1`` (stated, or `memory`'s default) is a no-op: Megatron adds the two
  slots to the layers it splits over the pipeline stages (arguments.py@core_v0.15.0 L592-598), one stage at pp 1.
"""

from __future__ import annotations

from gpuplan.errors import InputError
from gpuplan.schema.expert_tp_rules import check_expert_tp

NO_ZERO_1_FRAMEWORKS = ("torchtitan", "hf")
"""Frameworks whose data parallelism is DDP or FSDP(2) only (planner.framework_rules zero_stages (0, 3)): no
ZeRO-1, so no ZeRO-1 all-reduce then gather. The others may run it: DeepSpeed's PipelineEngine (DeeperSpeed@eb7f5cff
pipe/engine.py L234-246; DeepSpeed@edaa722 pipe/engine.py L296-307 _bf16_reduce_grads with the BF16_Optimizer),
Megatron-derived code trained through it and gpuplan's framework-neutral model. The megatron profile takes it although
Megatron-Core's own distributed optimizer reduce-scatters every bucket (distributed/param_and_grad_buffer.py
@core_v0.16.1 L435-449; all_reduce only without the distributed optimizer, or with force_all_reduce, which
training.py L1662 sets only to save wgrads): the profile also stands for Megatron-derived code on DeepSpeed's engine,
GPT-NeoX v1.0 (the six Pythia rows, framework the default megatron) and BigScience's Megatron-DeepSpeed (BLOOM,
framework deepspeed). Moving the Pythia rows to generic / deepspeed changes their numbers (1.4B -1.3%, 6.9B -0.3%,
12B -0.1% of GPU-hours; 160M, 410M and 2.8B no longer fit 40 GB A100s at their GPU counts), so they stay
(docs/training.md)."""


FP32_PARAMETER_DTYPES = ("fp32", "tf32")
"""--dtype values whose parameters Megatron-Core holds in fp32 (neither --fp16 nor --bf16): its gradient buffer is
then fp32 whether grad_reduce_in_fp32 is on or off (grad_dtype = torch.float if grad_reduce_in_fp32 else
param.dtype, distributed_data_parallel.py@core_v0.16.0 L147), never bf16; `--dtype fp32 --grad-dtype bf16` was
answered with 2-byte gradients (wave 17). Under --dtype fp16 --grad-dtype bf16 stays the 2-byte buffer in the
parameters' dtype (tests/test_grad_width_one_rule.py: the same answer as the fp16 default). The other source of
4-byte parameters is the precision recipe (fp32_parameters)."""


def fp32_parameters(inputs) -> str | None:
    """The field that makes ``inputs``' parameters 4 bytes -- 'dtype' (FP32_PARAMETER_DTYPES) or 'recipe' (the run's
    recipe, stated or the framework's, whose core.precision.RECIPES weight_bytes, the one table of parameter widths,
    is 4: amp, fsdp2, fp32) -- or None (16-bit parameters)."""
    from gpuplan.core.precision import RECIPES

    if inputs.dtype in FP32_PARAMETER_DTYPES:
        return "dtype"
    recipe = getattr(inputs, "recipe_name", None)
    return "recipe" if recipe in RECIPES and RECIPES[recipe].weight_bytes >= 4 else None


NO_QLORA_FRAMEWORKS = {
    "megatron": "no 4-bit or NF4 weights in Megatron-Core core_v0.16.1 or in Megatron-Bridge@067f987's peft/ (lora, "
                "dora, canonical_lora, multi_lora; its models/README.md lists QLoRA under 'Future Enhancements')",
    "torchtitan": "b5bcd76's components/lora.py puts LoRA on Linear or Float8Linear only; no NF4 or bitsandbytes in "
                  "torchtitan/"}
"""Stated frameworks that run LoRA but not QLoRA (git grep -il 'qlora|nf4|bitsandbytes' over each tree, wave 16); the
published QLoRA rows run transformers + peft under DeepSpeed or FSDP (published_memory.yaml ds-peft-z3-qlora-*,
hf-fsdp-qlora-*). llm.c has no adapters at all (planner.framework_rules.LLMC_FIXED_OPTIONS)."""


def check_setup(inputs) -> None:
    """The rules above that need no model (fields absent from a job's schema read as not given)."""
    get = lambda name, default=None: getattr(inputs, name, default)  # noqa: E731
    framework, tp, pp = get("framework"), get("tp"), get("pp")
    if get("unstated_degrees_are_one", False):  # `memory` lays out tp 1 / pp 1 where they are not given
        tp, pp = tp or 1, pp or 1
    if get("fsdp_float8_all_gather", False):
        _check_float8_all_gather(framework, get("dtype"), get("fp8_recipe", "tensorwise"))
        _check_float8_gather_has_shards(get("zero"), _data_group_is_one(get("gpus"), tp, pp, get("cp")), tp, pp)
    if get("embedding_loss_slots", False) and pp == 1:  # first and last stage are one: nothing moves
        raise InputError("embedding_loss_slots", True, "moves a layer off the first and last pipeline stages: with "
                         "--pp 1 there is one stage and nothing moves (memory and time unchanged): give --pp 2 or "
                         "more, or leave it out")
    if get("tp_comm_overlap", False) and tp == 1:  # Megatron turns SP off at tp 1, then asserts (arguments.py
        # @core_v0.15.0 L922-931); torchtitan's async TP has no TP group: the same wall-clock, exit 0 before
        raise InputError("tp_comm_overlap", True, "overlaps tensor-parallel collectives: with --tp 1 there are none "
                         "(Megatron asserts sequence parallelism, which it turns off at tp 1): give --tp 2 or more")
    given = get("given", frozenset())
    _check_optimizer(framework, get("optimizer"), given, get("zero"), get("dtype"))
    if get("moment_dtype") is not None and get("optimizer", "adamw") != "adamw":
        raise InputError("moment_dtype", get("moment_dtype"), f"is the width of Adam's two moments (Megatron-Core's "
                         f"precision-aware optimizer, torchtitan's fused_opt_states_bf16); --optimizer "
                         f"{get('optimizer')} {MOMENTS_NOT_NARROWED.get(get('optimizer'), NOT_ADAM)}: leave it out, "
                         "or give --optimizer adamw")
    if get("grad_dtype") == "bf16" and (wide := fp32_parameters(inputs)):
        value = get("dtype") if wide == "dtype" else get("recipe_name")
        buffer = ("the buffer (--framework generic models Megatron-Core's DDP)" if framework == "generic" else
                  "Megatron-Core's buffer")  # review w16 R5 N1: generic is framework-neutral, not Megatron-Core
        raise InputError("grad_dtype", "bf16", f"is the gradient buffer in the parameters' dtype "
                         f"(grad_reduce_in_fp32 off), and --{wide} {value} keeps fp32 parameters, so {buffer} is fp32 "
                         "either way (distributed_data_parallel.py@core_v0.16.0 L147): give --grad-dtype fp32, or "
                         "leave it out")
    if "attention_efficiency" in given:
        _check_attention_efficiency(framework, get("attention_kernel"), get("attention_efficiency"), get("gpu"))
    if get("finetune") == "qlora" and "framework" in given and framework in NO_QLORA_FRAMEWORKS:
        raise InputError("finetune", "qlora", f"is a 4-bit NF4 base under adapters (bitsandbytes' Linear4bit through "
                         f"transformers + peft); --framework {framework} has none ({NO_QLORA_FRAMEWORKS[framework]}): "
                         "give --finetune lora, or --framework hf or deepspeed")
    if "tp_overlap" in given and get("tp_overlap") and tp == 1:  # wave 16: same wall-clock, exit 0 (the rule above)
        raise InputError("tp_overlap", get("tp_overlap"), "hides tensor-parallel communication: with --tp 1 there is "
                         "none (the answer is the same with or without it): give --tp 2 or more, or leave it out")
    if "ep_overlap" in given and get("ep_overlap") and get("ep") == 1:  # as --ep-a2a-overlap at --ep 1 (StepFields)
        raise InputError("ep_overlap", get("ep_overlap"), "hides the expert-parallel all-to-all: with --ep 1 there "
                         "is none (the answer is the same with or without it): give --ep 2 or more, or leave it out")
    if "dp_overlap" in given and get("dp_overlap") and _data_group_is_one(get("gpus"), tp, pp, get("cp")):
        raise InputError("dp_overlap", get("dp_overlap"), f"hides data-parallel communication: the layout stated puts "
                         f"every GPU in tp {tp or 1} x pp {pp or 1} (dp 1, cp 1), so there is none (the answer is the "
                         "same with or without it): give more --gpus than tp x pp, or leave it out")
    if get("tp_comm_overlap", False) and framework == "torchtitan" and not get("compile", False):
        raise InputError("tp_comm_overlap", True, "is torchtitan's async TP, which runs only compiled (torchtitan "
                         "config/configs.py@b5bcd76 L306-313: 'Async TP requires ... --compile.enable'): give --compile")
    if not get("sequence_parallel", True):
        if get("tp_comm_overlap", False):
            raise InputError("sequence_parallel", False, "--tp-comm-overlap overlaps sequence parallelism's all-gather "
                             "/ reduce-scatter (Megatron asserts 'Tensor parallel communication/GEMM overlap can happen "
                             "only when sequence parallelism is enabled', arguments.py@core_v0.15.0rc7 L899-900): give "
                             "one of the two")
        if tp == 1:
            raise InputError("sequence_parallel", False, "changes nothing with --tp 1 (sequence parallelism splits "
                             "over TP ranks): leave --no-sequence-parallel out, or give --tp 2 or more")
    if get("grad_all_reduce", False):
        if framework in NO_ZERO_1_FRAMEWORKS:
            raise InputError("grad_all_reduce", True, f"is ZeRO-1's all-reduce then gather (DeepSpeed's "
                             f"PipelineEngine); --framework {framework} has no ZeRO-1 (DDP or FSDP): leave it out, or "
                             "give --framework deepspeed, or megatron for Megatron-derived code on DeepSpeed's engine "
                             "(GPT-NeoX, Megatron-DeepSpeed)")
        if get("zero") != 1:
            stage = "the planner's choice" if get("zero") is None else f"--zero {get('zero')}"
            raise InputError("grad_all_reduce", True, "is ZeRO-1's all-reduce then gather (DeepSpeed's PipelineEngine): "
                             f"give --zero 1 (not {stage})")
    cp = get("cp")
    if framework == "torchtitan" and cp is not None and cp > 1:
        raise InputError("cp", cp, "torchtitan (b5bcd76) runs context parallelism with FlexAttention only "
                         "(models/common/decoder.py L173-183 raises under SDPA), which gpuplan does not time: give --cp 1")
    from gpuplan.schema.device_rules import check_device

    check_device(inputs)  # a CUDA framework on a TPU, --gpus-per-node past the part's domain (schema.device_rules)


def gpu_counts(gpus) -> tuple[int, ...]:
    """--gpus as the counts it states: plan's list or range (a tuple) as given, one count alone, none as ()."""
    return gpus if isinstance(gpus, tuple) else (gpus,) if gpus else ()


def _data_group_is_one(gpus, tp, pp, cp) -> bool:
    """True where the stated layout leaves one data-parallel rank: one GPU count (plan's one-count list too) equal to
    tp x pp (unstated: 1) and cp 1. The data group is dp x cp ranks (core.comm.dp_costs) and the expert data group
    dp x cp x tp / (etp x ep) with etp = tp (StepSettings.expert_tp), so neither has a collective: llama-3.1-8b on 8
    A100 at --tp 8 answered 1,239.44 days with --dp-overlap 0.9 and without (wave 15c), where --tp 4 --cp 2 moves
    (945.18 days at 0.5, 945.14 without: the gradient reduce over the 2 cp ranks)."""
    counts = gpu_counts(gpus)
    return len(counts) == 1 and (cp or 1) == 1 and counts[0] == (tp or 1) * (pp or 1)


MOMENTS_NOT_NARROWED = {
    "adam8bit": "keeps its moments in 8 bits already (bitsandbytes' block-quantized states; under --framework megatron "
                "read as the precision-aware optimizer's fp8 moments), so it changed nothing (1.873 GiB of states "
                "for llama-3-8b on 8 H100 with bf16, fp32 or neither)",
    "sgd": "has one momentum buffer, which Megatron-Core never narrows: it passes the precision-aware dtypes to Adam "
           "only (megatron/core/optimizer/__init__.py@core_v0.16.1 L365-368; the SGD branch L401-407 takes none), "
           "and torchtitan has no SGD",
    "muon": "keeps its momentum as zeros_like(p.data) ('TODO(boxiangw): support precision aware optimizer', "
            "megatron/core/optimizer/muon.py@core_v0.16.1 L207-212; torchtitan's bf16 states hook Adam / AdamW only)"}
NOT_ADAM = "is not Adam: the precision-aware dtypes reach Adam's exp_avg / exp_avg_sq only"
"""Why --moment-dtype is refused with an optimizer other than adamw (review w15 R4 M4: memory llama-3-8b on 8 H100
under megatron answered sgd 3.739 -> 1.870 GiB and muon 4.229 -> 2.114 GiB of states at bf16, which Megatron never
narrows). Megatron-Core's --exp-avg-dtype / --exp-avg-sq-dtype (arguments.py@core_v0.16.1 L2848-2857) go to TE's
FusedAdam; torchtitan's optimizer.implementation 'fused_opt_states_bf16' makes Adam / AdamW's exp_avg and exp_avg_sq
bf16 ('Only supported for Adam/AdamW', components/optimizer/optimizer.py@b5bcd76 L109-123, the hook L332-371)."""

FRAMEWORK_OPTIMIZERS = {
    "megatron": (("adamw", "adam8bit", "sgd", "muon"), "Megatron-Core's --optimizer: adam (decoupled weight decay: "
                 "AdamW), sgd, muon, dist_muon, megatron/training/arguments.py@core_v0.16.1 L2056-2058; 8-bit Adam "
                 "moments are its precision-aware optimizer's --exp-avg-dtype / --exp-avg-sq-dtype fp8, L2848-2857"),
    "torchtitan": (("adamw", "muon"), "torchtitan's optimizer factories: Adam, AdamW, DistMuon, else "
                   "NotImplementedError, components/optimizer/optimizer.py@b5bcd76 L143-150")}
"""The --optimizer values a stated framework runs (wave 16: --optimizer lion / adafactor under megatron, sgd under
torchtitan were answered); DeepSpeed and the Trainer take any torch optimizer, llm.c AdamW only
(planner.framework_rules.LLMC_FIXED_OPTIONS). adam8bit under megatron is read as Megatron-Core's precision-aware Adam
with fp8 (torch.uint8, arguments.py L646) moments, 1 B each (review w15 R4 M3; the memory report's optimizer line
says so: jobs.memory.assumptions)."""
MEGATRON_MUON_SHARDING = ("Megatron-Core asserts 'Muon optimizer does not support distributed optimizer / "
                          "Torch-FSDP2 / Megatron-FSDP for now', megatron/training/arguments.py@core_v0.16.1 L1178-1186")
MEGATRON_MUON_FP16 = "'muon with fp16 is not supported.', megatron/core/optimizer/muon.py@core_v0.16.1 L192-196"
"""Why --framework megatron --optimizer muon refuses --zero 2 / 3 (Megatron-FSDP's optim_grads / optim_grads_params,
torch FSDP2) and --dtype fp16 (review w15 R4 M5). --zero 1 is taken: dist_muon's layer-wise sharding keeps
ZeRO-1-like optimizer memory."""


def _check_attention_efficiency(framework, kernel, efficiency, gpu_name) -> None:
    """--attention-efficiency where nothing reads it (wave 16, review w15 R4 M1 / S2). The eager kernel is timed as
    its matmuls and the op profile's softmax (core.time.attention_core, core.time.eager_step._attention: 0 s of
    kernel). Under --framework hf the SDPA path reads it only on a part without cuDNN measurements
    (core.time.attention.sdpa_seconds_per_token: Hopper parts are timed from the measured tables; llama-3-8b hf
    flash on 16 H100: 233.2085 days with none, 0.05 and 0.9). flash1 reads it: fa1_passes never falls below the
    flash kernel's time, which the efficiency sets (attention_core.fa1_passes; 0.05 took 149.2 -> 236.6 days)."""
    what = "is the fused (flash / sdpa) kernel's share of peak"
    if kernel == "eager":
        raise InputError("attention_efficiency", efficiency, f"{what}; --attention-kernel eager is timed as its "
                         "matmuls and softmax ops (core.time.attention_core), so it changed nothing: give "
                         "--attention-kernel flash or flash1, or leave it out")
    if framework != "hf":
        return
    from gpuplan.core.time.attention import has_sdpa_measurements
    from gpuplan.schema.device_rules import accelerator

    if (gpu := accelerator(gpu_name)) is not None and has_sdpa_measurements(gpu):
        raise InputError("attention_efficiency", efficiency, f"{what}; --framework hf times PyTorch's SDPA on the "
                         f"{gpu.name} from cuDNN's measured speeds (core.time.attention.sdpa_seconds_per_token), so "
                         "it changed nothing: leave it out, or give another --framework")


def _check_optimizer(framework, optimizer, given, zero=None, dtype=None) -> None:
    runs, where = FRAMEWORK_OPTIMIZERS.get(framework, ((optimizer,), ""))
    if "framework" in given and "optimizer" in given and optimizer not in runs:
        raise InputError("optimizer", optimizer, f"--framework {framework} has no {optimizer} ({where}): give "
                         f"{' or '.join(runs)}, or --framework hf or deepspeed")
    if not ("framework" in given and framework == "megatron" and optimizer == "muon"):
        return
    from gpuplan.planner.framework_rules import optimizer_zero_stages  # the search's and memory's stages too

    if zero is not None and zero not in optimizer_zero_stages(framework, optimizer):
        raise InputError("zero", zero, f"--framework megatron --optimizer muon runs without sharded gradients or "
                         f"parameters ({MEGATRON_MUON_SHARDING}): give --zero 0 or 1 (dist_muon), or --optimizer adamw")
    if dtype == "fp16":
        raise InputError("dtype", dtype, f"--framework megatron --optimizer muon runs bf16 only, without a loss scale "
                         f"({MEGATRON_MUON_FP16}): give --dtype bf16, or --optimizer adamw")


def _check_float8_all_gather(framework, dtype, fp8_recipe) -> None:
    """--fsdp-float8-all-gather names the one cause that stops it (plan, train and budget carry it: StepFields;
    `memory` too, beside its --dtype: jobs.memory.schema)."""
    what = "is torchtitan's FSDP2 float8 all-gather of its tensorwise Float8Linear weights"
    if framework != "torchtitan":
        raise InputError("fsdp_float8_all_gather", True, f"{what}: give --framework torchtitan (not {framework})")
    if dtype != "fp8":
        raise InputError("fsdp_float8_all_gather", True, f"{what}, which run under --dtype fp8 only: give --dtype fp8 "
                         f"(not {dtype})")
    if fp8_recipe != "tensorwise":  # a recipe_name asserts (components/quantization/float8.py@820504e L57-60);
        # MX formats run torchtitan's MXConverter (mx.py), which has no such option
        raise InputError("fsdp_float8_all_gather", True, f"{what}: give --fp8-recipe tensorwise (not {fp8_recipe}; "
                         "torchtitan asserts it off with a float8 recipe_name and its MX converter has none)")


def _check_float8_gather_has_shards(zero, data_group_is_one: bool, tp, pp) -> None:
    """--fsdp-float8-all-gather where the stated layout shards no weights: torchtitan sets
    ``enable_fsdp_float8_all_gather = parallel_dims.dp_shard_enabled and float8_config.enable_fsdp_float8_all_gather``
    (components/quantization/float8.py@820504e L79-81), so under DDP (--zero 0) or with one data-parallel rank it is
    off; wave 17: `train llama-3-8b --gpu h100 --framework torchtitan --dtype fp8 --mfu predicted --gpus 16 --zero 0`
    and `--tp 8 --pp 2` answered byte-identically with and without it."""
    if zero == 0 or data_group_is_one:
        layout = ("--zero 0 replicates the weights (DDP)" if zero == 0 else
                  f"the layout stated puts every GPU in tp {tp or 1} x pp {pp or 1} (dp 1)")
        raise InputError("fsdp_float8_all_gather", True, f"all-gathers FSDP2's sharded float8 weights, and {layout}: "
                         "torchtitan turns it off without dp_shard (components/quantization/float8.py@820504e L79-81); "
                         "leave it out, or shard the weights (--zero 3 over more GPUs than tp x pp)")


def check_model(inputs, spec) -> None:
    """The rules above that need the model (schema.training_fields.SetupFields.adjust_spec)."""
    framework, pp = getattr(inputs, "framework", None), getattr(inputs, "pp", None)
    if not getattr(inputs, "sequence_parallel", True) and framework == "megatron" and spec.moe is not None:
        raise InputError("sequence_parallel", False, f"{spec.name} is mixture-of-experts: Megatron's MoELayer raises "
                         "with tensor parallelism and no sequence parallelism (moe_layer.py@core_v0.15.0rc7 L258-262), "
                         "and at tp 1 it changes nothing: leave --no-sequence-parallel out")
    if framework == "torchtitan" and spec.tie_embeddings and pp is not None and pp > 1:
        raise InputError("pp", pp, f"{spec.name} ties its embeddings, and torchtitan (b5bcd76) raises 'Weight tying is "
                         "not supported with Pipeline Parallel.' (models/common/decoder.py L168-170): give --pp 1")
    if "attention_efficiency" in getattr(inputs, "given", ()):  # transformers falls back to eager: nothing reads it
        _check_eager_fallback_efficiency(inputs, spec)
    if framework == "llmc":  # llm.c's train_gpt2.cu: GPT-2 blocks only (core.memory.llmc_memory)
        from gpuplan.core.memory.llmc_memory import gpt2_shape_refusal

        if (reason := gpt2_shape_refusal(spec)) is not None:
            raise InputError("model", spec.name, reason)
    if spec.moe is None:
        _check_dense_moe_kernels(inputs, spec)
    check_sequence_split(inputs, spec)
    check_mtp(inputs, spec)
    check_expert_tp(inputs, spec, gpu_counts=gpu_counts(getattr(inputs, "gpus", None)))


def _check_dense_moe_kernels(inputs, spec) -> None:
    """The MoE kernel and CUDA-graph choices on a dense model that would change the answer on an MoE one, refused:
    --moe-expert-kernels fused; --full-iteration-graph and --cuda-graph-scope moe-router / full-iteration, which
    remove or replay MoE host time only (core.time.moe_host.stage_exposed_host_seconds: 0 without MoE layers), so
    llama-3-8b, llama-3.2-1b and gpt2 on H100 and B200 (megatron, --mfu predicted) answered byte-identically with and
    without them (wave 17). A stated value equal to the default (per-expert, none, --no-full-iteration-graph) is
    answered, as no such value is a choice (the lead's rule, review w16 R5 S3: --cuda-graph-scope none was refused
    where `full_iteration_graph: false` was not)."""
    from gpuplan.schema.te_kernels import DEFAULT_CUDA_GRAPH_SCOPE, DEFAULT_EXPERT_KERNELS

    given = getattr(inputs, "given", ())
    kernels = getattr(inputs, "moe_expert_kernels", None)
    if "moe_expert_kernels" in given and kernels != DEFAULT_EXPERT_KERNELS:
        raise InputError("moe_expert_kernels", kernels, f"applies to mixture-of-experts models; {spec.name} is dense "
                         "(no expert kernels): leave it out")
    for name, default in (("full_iteration_graph", False), ("cuda_graph_scope", DEFAULT_CUDA_GRAPH_SCOPE)):
        if name in given and getattr(inputs, name) not in (None, default):
            raise InputError(name, getattr(inputs, name), f"sets the CUDA graphs of Megatron-Core's MoE host work "
                             f"(router, dispatcher preprocessing, per-layer launches); {spec.name} is dense, timed "
                             "without that host time: leave it out")


def _check_eager_fallback_efficiency(inputs, spec) -> None:
    """--attention-efficiency where transformers' modules run ``spec`` with eager attention whatever the kernel
    (core.time.attention_core.runs_eager_only: gemma2, gpt_oss refuse SDPA): gemma-2-9b on 16 A100 (ZeRO 3, mb 1,
    full recompute) 1,149.10 days under hf and 950.37 under deepspeed, with 0.05 and without (wave 16 mend)."""
    from gpuplan.core.time.attention_core import SDPA_REFUSED_SOURCE, runs_eager_only

    framework, implementation = getattr(inputs, "framework", None), getattr(inputs, "implementation_name", None)
    if runs_eager_only(spec.model_type, framework, implementation):
        flag = "framework" if framework == "hf" else "implementation"  # as training_fields' kernel refusal says
        raise InputError("attention_efficiency", inputs.attention_efficiency, f"is the fused (flash / sdpa) kernel's "
                         f"share of peak; {SDPA_REFUSED_SOURCE[spec.model_type]}, so transformers runs {spec.name} "
                         f"with eager attention and it changed nothing: leave it out, or give --{flag} megatron")


def check_sequence_split(inputs, spec) -> None:
    """Sequence parallelism splits tokens over the TP ranks and the framework asserts they divide
    (planner.framework_rules.sequence_divisor, which the search calls too). Megatron scatters the sequence s of
    [s, b, h] (s = seq_len / cp on a context-parallel rank): tensor_parallel/mappings.py@00caa53 L67-70.
    torchtitan divides micro_batch x seq_len by tp x 2·cp (trainer.py@b5bcd76 L296-308); with the micro-batch left
    to the planner (plan, train, budget) the search picks one that divides, `memory` takes its 1. generic is
    framework-neutral: no rule. A tp the heads refuse, or a cp 2·cp of the sequence refuses, is left to those
    rules (core.parallel.check_model_degrees), which name the more basic cause."""
    from gpuplan.planner.framework_rules import sequence_split_runs

    get = lambda name, default=None: getattr(inputs, name, default)  # noqa: E731
    framework, sp, tp, cp, seq = get("framework"), get("sequence_parallel", True), get("tp"), get("cp") or 1, \
        get("seq_len")
    mb = get("micro_batch") or (1 if get("unstated_degrees_are_one", False) else None)
    if not sp or not tp or tp == 1 or not seq or mb is None:
        return
    if spec.attention.num_heads % tp or (cp > 1 and seq % (2 * cp)):
        return
    if sequence_split_runs(framework, sp, tp=tp, cp=cp, seq_len=seq, micro_batch=mb):
        return
    if framework == "torchtitan":
        raise torchtitan_split_error(tp, cp, seq, (mb,))
    held = f"the {seq // cp:,} tokens a context-parallel rank holds (seq_len / cp)" if cp > 1 else \
        f"the sequence length {seq:,}"
    raise InputError("tp", tp, f"must divide {held}: Megatron's sequence parallelism splits them over the TP "
                     "ranks and asserts they divide (tensor_parallel/mappings.py@00caa53 L67-70); give a "
                     f"--seq-len multiple of tp x cp = {tp * cp}, another --tp, or --no-sequence-parallel")


MTP_CODE = {  # where each framework without MTP training shows it has none (wave 6c)
    "hf": "transformers 5.25 trains no MTP module: every model with one drops its weights on load "
          "(deepseek_v3/modeling_deepseek_v3.py _keys_to_ignore_on_load_unexpected = [r'model\\.layers\\.61.*'], "
          "qwen3_next [r'^mtp.*'])",
    "deepspeed": "DeepSpeed (edaa722) has no MTP module in training (its only MTP code is inference/v2's exaone4_5); "
                 "the model code it runs decides, and transformers' drops the MTP weights",
    "torchtitan": "torchtitan (b5bcd76) builds MTP modules only for DeepSeek-V3 (models/deepseek_v3/model.py "
                  "DeepSeekV3Model(MTPDecoder), num_mtp_layers)",
}
MTP_TORCHTITAN_MODEL_TYPES = ("deepseek_v3",)
"""Model types torchtitan b5bcd76 trains MTP modules for (models/deepseek_v3/__init__.py _build_mtp_layers)."""


def check_mtp(inputs, spec) -> None:
    """--mtp-layers above 0 where the framework trains no MTP module for this model: it added the modules'
    memory and time to a run that has none (megatron and generic train them: core.model.mtp)."""
    framework, mtp = getattr(inputs, "framework", None), getattr(inputs, "mtp_layers", None)
    if not mtp or framework not in MTP_CODE:
        return
    if framework == "torchtitan" and spec.model_type in MTP_TORCHTITAN_MODEL_TYPES:
        return
    raise InputError("mtp_layers", mtp, f"{MTP_CODE[framework]}: give --framework megatron (Megatron-Core "
                     "mtp_num_layers) or leave --mtp-layers out")


def torchtitan_split_error(tp: int, cp: int, seq: int, micro_batches: tuple[int, ...]) -> InputError:
    """torchtitan's sequence-split refusal (check_sequence_split's words): no micro-batch in ``micro_batches`` (those
    tried: memory's one, or every one the search allowed, planner.space.sequence_split_refusal) makes micro_batch x
    seq_len a multiple of (tp under sequence parallelism) x (2 cp if cp > 1) (trainer.py@b5bcd76 L296-308)."""
    from gpuplan.planner.framework_rules import sequence_divisor, split_tokens

    divisor = sequence_divisor("torchtitan", True, tp, cp)
    *rest, last = micro_batches
    tokens = (f"the {split_tokens('torchtitan', seq, cp, last):,} tokens of a micro-batch (micro_batch {last} x "
              if not rest else f"the tokens of a micro-batch (micro_batch {', '.join(map(str, rest))} or {last} x ")
    return InputError("tp", tp, f"must divide {tokens}seq_len {seq:,}): torchtitan raises 'The number of tokens per "
                      f"pipeline microbatch ... must be divisible by {divisor}' (trainer.py@b5bcd76 L296-308); give a "
                      f"--micro-batch x --seq-len multiple of {divisor}, another --tp, or --no-sequence-parallel")
