"""Resolve a serving request into a Plan: the model and GPU specs, the weight format (incl. a
checkpoint's ``quantization_config``), the KV dtype, the load, and what to warn about."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from gpuplan.core.serving import engines as E
from gpuplan.core.serving import fp8_marlin as FM
from gpuplan.core.serving import setup as SU
from gpuplan.core.serving import weights as W
from gpuplan.core.serving import kv_cache as K
from gpuplan.core.serving.kernels import PCIE_NCCL_SLOWDOWN
from gpuplan.core.serving.tp_span import host_gpus, node_ranks, spans_domains
from gpuplan.core.hardware import Accelerator
from gpuplan.core.model.spec import ModelSpec
from gpuplan.errors import InputError
from gpuplan.schema.serving_rules import check_model_options
from gpuplan.jobs.inference import inputs_releases as IR
from gpuplan.jobs.inference.context_limits import (
    check_learned_context,
    check_vllm_context,
    context_notes,
    default_context,
    vllm_max_model_len,
)
from gpuplan.jobs.inference.quant_config import (  # noqa: F401 (re-exported: callers import them from here)
    weight_format_from_hf,
)
from gpuplan.jobs.inference.schema import QUANTIZATIONS, InferenceInputs
from gpuplan.jobs.inference.sizing_text import LAUNCH_LABEL, multi_node_launch
from gpuplan.jobs.inference.tpu_serving import check_part


@dataclass(frozen=True)
class Plan:
    """The resolved request: specs, format, load, and what the report should warn about."""

    spec: ModelSpec
    gpu: Accelerator
    groups: W.ParamGroups
    setup: SU.ServingSetup
    fmt_origin: str
    kv_dtype: str
    context: int
    prompt: int
    output: int
    notes: tuple[str, ...]
    fp8: FM.Fp8Checkpoint | None = None
    """An FP8 format as stored, where the engine takes it (vLLM, SGLang): each GPU a search tries serves it
    natively or through the weight-only FP8 Marlin path (plan_on_gpu); None for every other format."""
    converted_for: tuple | None = field(default=None, compare=False, repr=False)
    """(part, setup, fp8) objects plan_on_gpu made this plan from (None: none): asked again for that very part with the
    same setup and FP8 facts (identity: a replace() of either reconverts), it returns the plan as it is."""

    @property
    def decode_context(self) -> float:
        """Mean cached tokens while generating: prompt + output / 2."""
        return self.prompt + self.output / 2


def resolve_plan(inputs: InferenceInputs) -> Plan:
    """Resolve names, the format and the load; InputError on anything impossible."""
    from gpuplan.adapters.resolve import resolve_gpu

    spec = inputs.spec()
    gpu = resolve_gpu(inputs.gpu)
    engine = inputs.engine_name
    check_part(gpu, engine, inputs.gpu)  # a TPU: no engine modelled there (tpu_serving)
    if not E.runs_on(engine, gpu.vendor):
        valid = " or ".join(E.engines_on(gpu.vendor))
        raise InputError("engine", inputs.engine, f"{E.ENGINE_NAMES[engine]} runs on "
                         f"{' or '.join(E.ENGINE_VENDORS[engine])} GPUs only ({gpu.name}: vendor "
                         f"{gpu.vendor}); use --engine {valid}")
    raw = raw_model_config(*inputs.model_params)
    try:  # the checkpoint's FP8 facts read once (fp8_checkpoint): for the part asked and for Plan.fp8
        fmt, origin, notes = stored_format(inputs.quantization, inputs.group_size, spec, raw, gpu)
        fp8 = fp8_checkpoint(fmt, inputs.quantization, raw, spec)
        fmt = served_format(fmt, inputs.quantization, spec, gpu, inputs.release, fp8, notes)
    except InputError as exc:  # a GPU nobody named (the default) is not the user's to change formats for
        if exc.field != "quantization" or "gpu" in inputs.given:
            raise
        raise exc.retold(exc.field, exc.value, f"{exc.expected}; or name a GPU that runs it with --gpu ("
                         f"{inputs.gpu} is the default: --gpu was not given)") from None
    if inputs.quantization == "auto":  # a checkpoint's format: the release gate --quantization has (schema)
        from gpuplan.jobs.inference.inputs_releases import check_formats, checkpoint_key

        qcfg = raw.get("quantization_config")
        method = qcfg.get("quant_method") if isinstance(qcfg, dict) else None
        check_formats(fmt.compute_dtype, "auto", inputs.release, fmt.name, checkpoint_key(method, fmt.name))
    if inputs.quantization == "int4" and inputs.group_size is not None:
        notes += group_size_check(inputs.group_size, spec, "group_size" in inputs.given)
    elif inputs.quantization == "auto" and (fmt.group_size or 0) > 0 and fmt.name.startswith("int"):
        # a checkpoint's groups, as a typed --group-size (wave 19: GPTQ group_size 7 on a 4,096 input was answered)
        group_size_check(fmt.group_size, spec, True, "quantization_config.group_size")
    kv_dtype = _kv_dtype(inputs.kv_dtype, fmt, spec)
    vllm_len = vllm_max_model_len(raw) if engine == "vllm" else None  # once: the default context and the check
    if inputs.prompt is not None:  # prompt + output make the context
        output = inputs.output_tokens if inputs.output_tokens is not None else 256
        context = inputs.prompt + output
    else:
        context, told = (inputs.context, "") if inputs.context else default_context(spec, vllm_len)
        notes += [told] if told else []
        output = inputs.output_tokens if inputs.output_tokens is not None else min(256, context // 2)
    if not 1 <= output < context:
        raise InputError("output_tokens", output, f"must be at least 1 and below the context ({context})")
    check_learned_context(spec, context, inputs.prompt, output)
    if engine == "vllm":  # vLLM's start-up refuses a max_model_len past the config's (context_limits)
        check_vllm_context(raw, vllm_len, spec, context, inputs.prompt, output, inputs.release.version)
    check_model_options(inputs, spec, context - output)  # --prefix-hit / --decode-attention inert here (wave 20)
    IR.check_prefill_chunks(inputs.prefill_tokens, context, inputs.release)  # vLLM before chunked prefill
    K.kv_heads_per_gpu(spec.attention, inputs.tp_degree)  # tp vs heads / KV heads: one clear line
    if inputs.pp_degree > spec.num_layers:
        raise InputError("pp", inputs.pp_degree, f"pipeline stages cannot exceed the {spec.num_layers} layers")
    notes += context_notes(spec, raw, context)
    tokens, seqs = inputs.runtime.batch_limits(gpu.memory_bytes, gpu.name, spec.max_position_embeddings)
    if engine == "vllm" and inputs.max_num_seqs is not None and tokens < seqs:
        # vllm/config/scheduler.py SchedulerConfig: a ValueError at start-up; a max_num_seqs left out is
        # min(its default, max_num_batched_tokens) (engine/arg_utils.py), never refused
        rule = "vLLM refuses fewer tokens per step than sequences (SchedulerConfig: max_num_batched_tokens >= max_num_seqs)"
        if inputs.prefill_tokens is None:  # the user's max_num_seqs past the default token budget
            raise InputError("max_num_seqs", seqs, f"must be at most prefill_tokens ({tokens:,}, vLLM's default here; "
                             f"raise --prefill-tokens with it): {rule}")
        raise InputError("prefill_tokens", tokens, f"must be at least max_num_seqs ({seqs:,}): {rule}")
    if engine == "vllm" and inputs.max_num_seqs is None and inputs.batch > seqs:
        notes.append(f"batch {inputs.batch:,} exceeds vLLM's default max_num_seqs {seqs:,} on {gpu.name}: it "
                     f"schedules at most {seqs:,} sequences per step and queues the rest; set --max-num-seqs "
                     "to run them together (shown as if it did)")
    kv_heads = spec.attention.num_kv_heads
    if not spec.attention.is_mla and inputs.tp_degree > kv_heads:
        # QKVParallelLinear num_kv_head_replicas = tp / KV heads: vLLM's, and SGLang's copy (layers/linear.py@v0.5.6:818-820)
        who = {"vllm": " (vLLM)", "sglang": " (SGLang)"}.get(engine, "")
        extra = W.kv_replica_bytes(spec, fmt, inputs.tp_degree, inputs.pp_degree)  # its k/v projections whole
        notes.append(f"tp {inputs.tp_degree} > {kv_heads} KV heads: each KV head is replicated on {inputs.tp_degree // kv_heads} "
                     f"GPUs{who}, so the cache per GPU stops shrinking, and each GPU holds its head's k/v projection "
                     f"weights whole (+{extra / 1e9:.2f} GB a GPU)")
    if spans_domains(inputs.tp_degree, gpu):  # vLLM / SGLang run TP across nodes (core.serving.tp_span)
        notes.append(_span_note(inputs.tp_degree, gpu))
    elif gpu.vendor == "NVIDIA" and not gpu.pcie_only:  # a GB200 / GB300 replica over trays of one NVLink domain
        said = multi_node_launch(inputs.release, inputs.tp_degree, gpu, host_gpus(gpu), inputs.pp_degree)
        notes.extend([f"{LAUNCH_LABEL}: {said[0]} ({said[1]})"] if said else [])
    if inputs.lora is not None:  # MLA: one clear line before any search
        from gpuplan.core.serving.lora import check_supported

        check_supported(spec)
    setup = SU.ServingSetup(fmt, K.KV_DTYPE_BYTES[kv_dtype], inputs.runtime, inputs.efficiency, inputs.block_size,
                           _speculation(inputs, spec, raw), inputs.prefix_hit, inputs.lora, inputs.decode_kernel,
                           mm_prefix_lm(*inputs.model_params))
    return Plan(spec, gpu, W.param_groups(spec), setup, origin, kv_dtype, context, context - output, output,
                tuple(notes), fp8 if engine in FM.ENGINES else None)


def fp8_checkpoint(fmt: W.WeightFormat, choice: str, raw: dict[str, Any], spec: ModelSpec) -> FM.Fp8Checkpoint | None:
    """stored_format's FP8 ``fmt`` (None for any other format) with its quant_method ('fp8' for --quantization fp8,
    vLLM's online FP8), weight_block_size[1] and whether the model has routed experts (core/serving/fp8_marlin.py)."""
    if fmt.compute_dtype != "fp8":
        return None
    qcfg = raw.get("quantization_config") if choice == "auto" else None  # a mapping: stored_format parsed it
    qcfg = qcfg if isinstance(qcfg, dict) else {}
    method = str(qcfg.get("quant_method") or "fp8").strip().lower()
    block = qcfg.get("weight_block_size")
    block_k = int(block[1]) if isinstance(block, (list, tuple)) and len(block) == 2 else None
    return FM.Fp8Checkpoint(fmt, method, block_k, spec.moe is not None and spec.num_moe_layers > 0)


def plan_on_gpu(plan: Plan, gpu: Accelerator) -> Plan:
    """``plan`` as ``gpu`` runs it: an FP8 plan (Plan.fp8) takes the weight-only FP8 Marlin format where its
    release runs that path on the part (an sm80-sm88 GPU: fp8_marlin.runs_fp8_marlin), else the FP8 format as
    stored (FP8 tensor cores, or a part that does not serve it: serving.serves leaves it out); other plans as
    they are. A plan this returned for ``gpu`` (Plan.converted_for: that part, setup and FP8 facts) is returned as it is."""
    ckpt, mark = plan.fp8, plan.converted_for
    if ckpt is None or (mark and mark[0] is gpu and mark[1] is plan.setup and mark[2] is ckpt):
        return plan
    fmt = FM.marlin_format(ckpt, _act_dtype(plan.spec)) if FM.runs_fp8_marlin(plan.setup.runtime.release, gpu, ckpt) \
        else ckpt.fmt
    setup = plan.setup if fmt == plan.setup.fmt else replace(plan.setup, fmt=fmt)
    return replace(plan, setup=setup, converted_for=(gpu, setup, ckpt))


def _act_dtype(spec: ModelSpec) -> str:
    """The activation dtype the engines run a model in on Ampere: its own fp16, else bf16."""
    return "fp16" if spec.dtype == "float16" else "bf16"


def _span_note(tp: int, gpu: Accelerator) -> str:
    """infer's note for a TP group past node_ranks(gpu) (tp_span.spans_domains): its all-reduces as timed -- NCCL
    over the scale-out network between domains, or, on a host of several NVLink domains joined by PCIe (the H100
    NVL's pairs in a server of 8, Accelerator.host_link_bandwidth) with the group inside one host, over the host's
    PCIe (core.comm.topology's host tier), x kernels.PCIE_NCCL_SLOWDOWN as on PCIe-only GPUs (tp_span.on_pcie)."""
    domain = node_ranks(gpu)  # GPUs on one scale-up link (NVLink: 8 on HGX, 72 on GB200 NVL72) or PCIe server
    what = "PCIe servers" if gpu.pcie_only else "scale-up domains"
    head = f"tp {tp} spans {-(-tp // domain)} {what} of {domain} {gpu.name}"
    if gpu.host_link_bandwidth and tp <= host_gpus(gpu):
        return (f"{head} in one server of {host_gpus(gpu)}: the engines' own all-reduce kernels need the group on "
                "NVLink, so every all-reduce is timed as NCCL's over the host's PCIe between the NVLink pairs "
                f"(core.comm.host_tier), x {PCIE_NCCL_SLOWDOWN:g} as on PCIe-only GPUs")
    past_host = " (PCIe between a server's NVLink pairs first)" if gpu.host_link_bandwidth else ""
    return (f"{head}: the engines' own all-reduce kernels stay inside one domain, so every all-reduce is timed as "
            f"NCCL's over the scale-out network between domains (the catalog's NIC bandwidth and latency){past_host}; "
            "--pp across nodes is the usual split")


def _speculation(inputs: InferenceInputs, spec: ModelSpec, raw: dict[str, Any]):
    """The speculative-decoding setup the inputs name (core/serving/speculative.py), or None."""
    from gpuplan.core.serving.speculative import speculation

    draft = None
    if inputs.draft_model is not None:
        from gpuplan.adapters.resolve import resolve_model

        try:
            draft = resolve_model(inputs.draft_model, None)
        except InputError as exc:  # the resolver names the model, its file or a config field: say which model
            field = "draft_model" if exc.field in ("model", "config", "config.json") else f"draft_model: {exc.field}"
            raise InputError(field, exc.value, exc.expected) from None
    if inputs.speculative == "mtp" and not raw.get("num_nextn_predict_layers"):
        raise InputError("speculative", "mtp", f"{spec.name}'s config declares no multi-token-prediction layer "
                         "(num_nextn_predict_layers, as DeepSeek-V3 / R1 do); use eagle, draft or ngram")
    from gpuplan.jobs.inference.inputs_releases import check_eagle3_target

    check_eagle3_target(inputs.speculative, str(raw.get("model_type") or ""), inputs.runtime.release)
    return speculation(inputs.speculative, inputs.spec_tokens, inputs.spec_acceptance, spec, draft)


def _kv_dtype(choice: str, fmt: W.WeightFormat, spec: ModelSpec) -> str:
    """'auto' caches in the model's activation dtype (vLLM --kv-cache-dtype auto)."""
    if choice != "auto":
        if choice not in K.KV_DTYPE_BYTES:
            raise InputError("kv_dtype", choice, f"must be auto or one of {', '.join(K.KV_DTYPE_BYTES)}")
        return choice
    if fmt.compute_dtype in ("fp32", "bf16", "fp16"):
        return fmt.compute_dtype
    return "fp16" if spec.dtype == "float16" else "bf16"


def raw_model_config(model: str | None, params: Any) -> dict[str, Any]:
    """The model's own config.json fields (catalog entries keep the trimmed HF config)."""
    if params is not None or not model:
        return {}
    from gpuplan.adapters.hf_config import text_config
    from gpuplan.adapters.resolve import model_config

    config = model_config(model)[0]
    qcfg = config.get("quantization_config")
    merged = dict(text_config(config))
    if qcfg is not None:
        merged["quantization_config"] = qcfg
    return merged


def mm_prefix_lm(model: str | None, params: Any) -> bool:
    """vLLM's is_mm_prefix_lm on the checkpoint's own config (core.serving.attention_backend)."""
    if params is not None or not model:
        return False
    from gpuplan.adapters.resolve import model_config
    from gpuplan.core.serving.attention_backend import is_mm_prefix_lm

    return is_mm_prefix_lm(model_config(model)[0])


_DTYPE_FORMAT = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}


def resolve_format(choice: str, group_size: int | None, spec: ModelSpec, raw: dict[str, Any],
                   gpu: Accelerator, release=None) -> tuple[W.WeightFormat, str, list[str]]:
    """The weight format, where it came from, and notes; InputError if ``gpu`` cannot run it: stored_format, then
    served_format under the engine ``release`` (core.serving.releases.EngineRelease); without one (validation's
    memory rows) FP8 needs FP8 compute, as before."""
    fmt, origin, notes = stored_format(choice, group_size, spec, raw, gpu)
    fp8 = fp8_checkpoint(fmt, choice, raw, spec)
    return served_format(fmt, choice, spec, gpu, release, fp8, notes), origin, notes


def stored_format(choice: str, group_size: int | None, spec: ModelSpec, raw: dict[str, Any],
                  gpu: Accelerator) -> tuple[W.WeightFormat, str, list[str]]:
    """resolve_format's first half: the format as --quantization or the checkpoint's quantization_config (parsed
    here, once) names it, where it came from, and notes; bf16 cast to fp16 and FP4 dequantised to bf16 on a part
    without them."""
    notes: list[str] = []
    if choice == "auto":
        if "quantization_config" in raw:
            fmt, origin = weight_format_from_hf(raw["quantization_config"]), "the model's quantization_config"
        elif spec.declared_params is not None:
            fmt, origin = W.FORMATS["fp16"], "auto: the article's FP16 for a bare parameter count"
        else:
            fmt, origin = W.FORMATS[_DTYPE_FORMAT.get(spec.dtype, "bf16")], f"auto: the model's dtype {spec.dtype}"
        if not gpu.has_dtype(fmt.compute_dtype) and fmt.compute_dtype == "bf16" and gpu.has_dtype("fp16"):
            notes.append(f"{gpu.name} has no bf16 path: served in fp16, as vLLM casts it")
            fmt, origin = W.FORMATS["fp16"], origin + " (cast to fp16)"
    else:
        fmt, origin = W.weight_format(choice, group_size), "--quantization"
    if fmt.quantized == "experts" and spec.moe is None:
        raise InputError("quantization_config.quant_method", "mxfp4", "MXFP4 checkpoints quantise the MoE experts "
                         f"only (gpt-oss); {spec.name} has no experts: give --quantization for its format")
    if fmt.compute_dtype == "fp4" and not gpu.has_dtype("fp4"):
        notes.append(f"{gpu.name} has no FP4 tensor cores: {fmt.name} weights are dequantised to bf16 for the "
                     "matmuls (weight-only, as vLLM's Marlin FP4 kernels do); memory as stored")
        fmt = replace(fmt, compute_dtype="bf16")
    return fmt, origin, notes


def served_format(fmt: W.WeightFormat, choice: str, spec: ModelSpec, gpu: Accelerator, release,
                  ckpt: FM.Fp8Checkpoint | None, notes: list[str]) -> W.WeightFormat:
    """resolve_format's second half: stored_format's ``fmt`` as ``gpu`` serves it under ``release``: an FP8 format
    (``ckpt``: its fp8_checkpoint) on an sm80-sm88 part weight-only through FP8 Marlin where the release has the path
    (core/serving/fp8_marlin.py; its note added to ``notes``), else refused naming the engines and releases that do;
    InputError where ``gpu`` has no compute path for it."""
    if fmt.compute_dtype == "fp8" and release is not None and FM.needs_marlin(gpu):
        if not FM.runs_fp8_marlin(release, gpu, ckpt):  # TensorRT-LLM: first_release None
            raise InputError("quantization", fmt.name if choice == "auto" else choice, FM.refusal(release, gpu, ckpt))
        notes.append(FM.note(release, gpu, ckpt, _act_dtype(spec)))  # the weight-only FP8 Marlin path
        fmt = FM.marlin_format(ckpt, _act_dtype(spec))
    if not gpu.has_dtype(fmt.compute_dtype):
        have = ", ".join(k for k, _ in gpu.peak_flops)
        runs = [q for q in QUANTIZATIONS if q != "auto" and gpu.has_dtype(W.weight_format(q).compute_dtype)]
        listed = ", ".join(runs[:-1]) + " or " + runs[-1] if len(runs) > 1 else "".join(runs)
        hint = f"choose a format it runs: --quantization {listed}" if runs else "no weight format runs on it"
        # the value typed ('int4', not the format's name 'int4-g128'); int4 names the dtype its matmuls run in
        runs_in = f"{fmt.name} weights run their matmuls in {fmt.compute_dtype}: " if fmt.name != fmt.compute_dtype \
            else ""
        raise InputError("quantization", fmt.name if choice == "auto" else choice, f"{runs_in}{gpu.name} has no "
                         f"{fmt.compute_dtype} compute path (it has {have}); {hint}")
    return fmt


def group_size_check(group: int, spec: ModelSpec, given: bool, field: str = "group_size") -> list[str]:
    """int4 groups must tile the input dimension of every quantised matrix: vLLM's GPTQ and AWQ
    refuse a layer whose input size is not a multiple of group_size ("The input size is not
    aligned with the quantized weight shape", quantization/gptq.py and awq.py create_weights).
    A given --group-size that does not is refused; the default 128 is kept with a note. ``field``:
    quantization_config.group_size for a checkpoint's own groups (refused: the checkpoint does not load)."""
    dims = quantized_input_dims(spec)
    bad = {name: size for name, size in dims.items() if size % group}
    if not bad:
        return []
    common = math.gcd(*dims.values())
    fits = [g for g in (32, 64, 128, 256) if common % g == 0] or [d for d in range(min(common, 256), 1, -1)
                                                                     if common % d == 0][:3] or [1]
    shown = ", ".join(f"{name} {size:,}" for name, size in bad.items())
    valid = f"{', '.join(map(str, fits))} or -1 (per channel)"
    if given and field != "group_size":
        raise InputError(field, group, f"must divide the input size of every quantised matrix ({spec.name}: {shown}; "
                         "vLLM's GPTQ / AWQ refuse a layer otherwise, so the checkpoint does not load); a checkpoint "
                         f"of it is grouped by {valid}")
    if given:
        raise InputError("group_size", group, f"must divide the input size of every quantised matrix ({spec.name}: "
                         f"{shown}; vLLM's GPTQ / AWQ refuse a layer otherwise), e.g. {valid}")
    return [(f"int4 group size {group} (the default) does not divide {spec.name}'s {shown}: vLLM's GPTQ / AWQ "
             f"refuse such layers; shown as if they ran (a checkpoint of it uses --group-size {valid})")]


ROW_PARALLEL_INPUTS = ("o_proj input", "intermediate_size", "moe_intermediate_size",
                       "shared_expert_intermediate_size")
"""Layers whose input tensor parallelism splits (row-parallel: o_proj, down_proj, the experts' w2
under vLLM's fused MoE with TP): each GPU's slice of the input must hold whole groups."""


def group_tp_check(spec: ModelSpec, fmt, tp: int) -> None:
    """InputError naming ``tp`` when a group-wise integer format's groups do not tile a row-parallel
    layer's per-GPU input: vLLM's GPTQ / AWQ create_weights raise "The input size is not aligned
    with the quantized weight shape. This can be caused by too large tensor parallel size."
    Layers whose whole input the groups do not tile are the default group size's note, not this."""
    group = fmt.group_size
    if tp == 1 or not group or group < 0 or not fmt.name.startswith("int"):
        return
    dims = quantized_input_dims(spec)
    split = {n: s for n, s in dims.items() if n in ROW_PARALLEL_INPUTS and s % group == 0 and (s // tp) % group}
    if split:
        shown = ", ".join(f"{name} {size:,} / {tp} = {size / tp:,.0f}" for name, size in split.items())
        raise InputError("tp", tp, f"splits {spec.name}'s row-parallel inputs into slices that int4 groups of "
                         f"{group} do not tile ({shown}; vLLM's GPTQ / AWQ refuse it): use a smaller tp or group")


def quantized_input_dims(spec: ModelSpec) -> dict[str, int]:
    """Input size of each kind of quantised linear layer (the dimension groups run along)."""
    a = spec.attention
    dims = {"hidden_size": spec.hidden_size}
    if a.is_mla:  # q_a / kv_a read the hidden state, q_b / kv_b the compressed ranks
        dims |= {"q_lora_rank": a.q_lora_rank or 0, "kv_lora_rank": a.kv_lora_rank or 0,
                 "o_proj input": a.num_heads * a.v_head_dim}
    else:
        dims["o_proj input"] = a.num_heads * a.head_dim
    if spec.num_dense_layers:
        dims["intermediate_size"] = spec.mlp.intermediate_size
    if spec.moe is not None and spec.num_moe_layers:
        dims["moe_intermediate_size"] = spec.moe.expert_intermediate_size
        if spec.moe.shared_intermediate_size:
            dims["shared_expert_intermediate_size"] = spec.moe.shared_intermediate_size
    return {name: int(size) for name, size in dims.items() if size}
