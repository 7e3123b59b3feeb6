"""The serving features an engine release must have for `gpuplan infer`'s options to apply (InferenceInputs checks
them): a vLLM release older than a feature answered as if it had it (wave 10: `--engine vllm==0.2.6 --enable-lora`
sized adapter slots, `--speculative eagle` a speed-up, exit 0), and so did an SGLang or TensorRT-LLM release older
than a speculative method (wave 11: `--engine sglang==0.3.0 --speculative eagle3`). The releases modelled are
core.serving.releases.OLDEST to NEWEST."""

from __future__ import annotations

from gpuplan.core.serving.engines import ENGINE_NAMES
from gpuplan.core.serving.releases import parse_version, version_text
from gpuplan.errors import InputError

VLLM_LORA_SINCE = (0, 3, 0)
"""The first vLLM release with --enable-lora: multi-LoRA serving (vllm/lora/, vllm PR 1804 'Add multi-LoRA support',
merged January 2024) shipped in v0.3.0 (2024-01-31; vllm issue 2909 runs --enable-lora on the release of 2024-02);
v0.2.7 (2024-01-03) had no LoRA path."""

VLLM_SPECULATIVE_SINCE = {"draft": (0, 4, 1), "ngram": (0, 4, 2), "eagle": (0, 5, 5), "mtp": (0, 7, 3),
                          "eagle3": (0, 8, 5)}
"""The first vLLM release that runs each --speculative method, read from the release wheels themselves
(pip download vllm==X, unzip -l; review w10 r3 M1), the one rule for every method and engine generation:

- draft (a draft model): 0.4.1. The 0.4.0 wheel ships no vllm/spec_decode/ at all (only tests/spec_decode/); 0.4.1's
  ships spec_decode_worker.py, multi_step_worker.py, batch_expansion.py. The flags came with vllm PR 3706 (its
  executor raised); decoding ran with PR 3894 (LLMEngine integration) and was correct with PR 3951.
- ngram: 0.4.2. vllm/spec_decode/ngram_worker.py is absent from the 0.4.1 wheel and first in 0.4.2's (config.py
  @v0.4.2 L770: speculative_model == "[ngram]").
- eagle (EAGLE-1): 0.5.5. vllm/model_executor/models/eagle.py is absent from the 0.5.4 wheel and first in 0.5.5's.
- mtp: 0.7.3. vllm/model_executor/models/deepseek_mtp.py is absent from the 0.7.2 wheel and first in 0.7.3's.
- eagle3: 0.8.5. model_executor/models/llama_eagle3.py is absent from the 0.8.4 and 0.7.3 wheels and first in
  0.8.5's (engine/arg_utils.py@v0.8.4 L1491-1510 takes only ngram and eagle)."""

SGLANG_SPECULATIVE_SINCE = {"eagle": "0.4.1.post4", "mtp": "0.4.3.post1", "eagle3": "0.4.4.post2",
                            "draft": "0.5.2", "ngram": "0.5.3"}
"""The first SGLang build whose --speculative-algorithm takes each method, read from the release wheels
(pip download --no-deps sglang==X, unzip; 2026-12-06): sglang/srt/server_args.py's choices and
sglang/srt/speculative/. gpuplan keeps an SGLang post build's number (core.serving.releases.parse_version:
0.4.1.post4 = (0, 4, 1, 4), after 0.4.1 and its .post1-.post3, before 0.4.2), so a method first in a .postN build
is gated at that build: sglang==0.4.1 and 0.4.1.post1-.post3 refuse eagle, 0.4.1.post4 answers.

- eagle: 0.4.1.post4. No srt/speculative/ in 0.4.0, 0.4.1, 0.4.1.post1; spec_info.py alone in .post2 and .post3;
  eagle_worker.py and choices=["EAGLE"] (server_args.py@0.4.1.post4 L667) from .post4 (sgl-project/sglang PR 2150).
- mtp (NEXTN, DeepSeek's multi-token-prediction layer): 0.4.3.post1. choices=["EAGLE"] at server_args.py@0.4.3
  L708; ["EAGLE", "NEXTN"] at @0.4.3.post1 L711 (spec_info.py: 'NEXTN spec decoding is for DeepSeek V3/R1').
- eagle3: 0.4.4.post2. ["EAGLE", "NEXTN"] at @0.4.4.post1 L758; ["EAGLE", "EAGLE3", "NEXTN"] at @0.4.4.post2 L816.
- draft (a draft model, STANDALONE): 0.5.2. Absent from @0.5.1.post3 L1428; standalone_worker.py and "STANDALONE"
  at @0.5.2 L1538.
- ngram (NGRAM): 0.5.3. Absent from @0.5.2 L1538 (no 'ngram' or 'lookahead' anywhere in its server_args.py or
  speculative/); ngram_worker.py and "NGRAM" at @0.5.3 L2044."""

TRTLLM_SPECULATIVE_SINCE = {"draft": "0.7.0", "eagle": "0.15.0", "ngram": "0.15.0", "mtp": "0.19.0",
                            "eagle3": "0.19.0"}
"""The first TensorRT-LLM release that runs each method, from its release notes (NVIDIA/TensorRT-LLM
docs/source/release-notes.md@001eaece): the wheels (pypi.nvidia.com, over 1 GB each; PyPI's 0.7.0 is a 6.9 kB stub
sdist) were not read.

- draft (draft-target model): 0.7.0. 'Speculative decoding (preview)' heads the 0.7 series' notes (titled 0.7.1;
  0.7.0 has no section of its own, so the series is taken whole); nothing in 0.5 / 0.6. TensorRT-LLM issue 791
  (2024-01-02): 'already support for it in the main branch as a preview'.
- eagle (EAGLE-1): 0.15.0 ('Added support for EAGLE. Refer to examples/eagle/README.md').
- ngram (prompt lookup): 0.15.0 ('Added support for prompt-lookup speculative decoding', examples/prompt_lookup);
  0.13.0's lookahead decoding (Jacobi n-gram pools) is another method, not gpuplan's ngram.
- mtp: 0.19.0 (PyTorch workflow: 'Added Multi-Token Prediction (MTP) support'); 0.18.x ships no 0.18.0.dev feature.
- eagle3: 0.19.0 (PyTorch workflow: 'Added initial EAGLE-3 implementation')."""

VLLM_SPECULATIVE_V0_ONLY = {"mtp": ((0, 8, 0), (0, 9, 0))}
"""Methods vLLM ran only on its V0 engine in releases gpuplan prices as V1 (releases.VLLM_V1_SINCE): 0.8.x's V1
takes ngram, eagle and eagle3 (engine/arg_utils.py@v0.8.5 L1423-1441) and hands any other method, MTP included,
to the whole V0 engine (L1649-1658; an error under VLLM_USE_V1=1). gpuplan prices every vllm 0.8.x as V1, so such
an ask is refused, naming the V0 release (0.7.3) and 0.9.0, where V1 runs MTP."""

EAGLE3_TARGETS = (((0, 8, 5), (0, 10, 1), ("llama",)), ((0, 10, 1), (0, 10, 3), ("llama", "qwen")))
"""vLLM releases whose SpeculativeConfig runs EAGLE-3 only on a target whose model_type contains one of the names
(read in the wheels): 'Eagle3 is only supported for Llama models' at config.py@v0.8.5 L2588-2592, @v0.9.0
L2739-2743, @v0.9.1 L2816, @v0.9.2 L2909, @v0.10.0 L3030; eagle3_target_supported = ["llama", "qwen"] at
config/__init__.py@v0.10.1 L2347-2354 and @v0.10.2 L2372-2379. Releases from 0.10.3 are not read, so not gated."""


_SINCE_EVIDENCE = {"draft": "vllm/spec_decode/ first in the 0.4.1 wheel; it runs from vllm PRs 3894 and 3951",
                   "ngram": "vllm/spec_decode/ngram_worker.py first in the 0.4.2 wheel",
                   "eagle": "model_executor/models/eagle.py first in the 0.5.5 wheel",
                   "mtp": "model_executor/models/deepseek_mtp.py first in the 0.7.3 wheel",
                   "eagle3": "model_executor/models/llama_eagle3.py first in the 0.8.5 wheel"}
"""What each VLLM_SPECULATIVE_SINCE entry was read from, for the refusal."""

_SGLANG_EVIDENCE = {m: f"--speculative-algorithm {a} first in server_args.py of the {SGLANG_SPECULATIVE_SINCE[m]} wheel"
                    for m, a in (("eagle", "EAGLE"), ("mtp", "NEXTN"), ("eagle3", "EAGLE3"), ("draft", "STANDALONE"),
                                 ("ngram", "NGRAM"))}
_TRTLLM_EVIDENCE = {"draft": "'Speculative decoding (preview)', the 0.7 release notes",
                    "eagle": "'Added support for EAGLE', the 0.15.0 release notes",
                    "ngram": "'prompt-lookup speculative decoding', the 0.15.0 release notes",
                    "mtp": "'Multi-Token Prediction (MTP) support', the 0.19.0 release notes",
                    "eagle3": "'initial EAGLE-3 implementation', the 0.19.0 release notes"}
"""What each SGLANG_ / TRTLLM_SPECULATIVE_SINCE entry was read from, for the refusal."""


def _gates(table: dict[str, str], evidence: dict[str, str], engine: str) -> dict[str, tuple[tuple[int, ...], str, str]]:
    """A table of first builds as written ({key: '0.4.1.post4'}) as {key: (version tuple, as written, evidence)},
    parsed once at import (core.serving.releases.parse_version), not on every ask."""
    return {key: (parse_version(text, engine), text, evidence[key]) for key, text in table.items()}


_SPECULATIVE_GATES = {"sglang": _gates(SGLANG_SPECULATIVE_SINCE, _SGLANG_EVIDENCE, "sglang"),
                      "trtllm": _gates(TRTLLM_SPECULATIVE_SINCE, _TRTLLM_EVIDENCE, "trtllm")}
"""SGLANG_ / TRTLLM_SPECULATIVE_SINCE parsed (first_release; VLLM_SPECULATIVE_SINCE is written as tuples)."""


def first_release(engine: str, speculative: str) -> tuple[tuple[int, ...], str, str] | None:
    """(gate, first build as written, what it was read from) of ``speculative`` on ``engine``; None: not gated."""
    if engine == "vllm":
        since = VLLM_SPECULATIVE_SINCE.get(speculative)
        return None if since is None else (since, version_text(since), _SINCE_EVIDENCE[speculative])
    return _SPECULATIVE_GATES.get(engine, {}).get(speculative)


def check_speculative(speculative: str, release) -> None:
    """InputError naming ``speculative`` where the ``release`` (core.serving.releases.EngineRelease) does not run
    that method (VLLM_SPECULATIVE_SINCE, SGLANG_SPECULATIVE_SINCE, TRTLLM_SPECULATIVE_SINCE; vLLM's
    VLLM_SPECULATIVE_V0_ONLY)."""
    if speculative == "none":
        return
    first = first_release(release.engine, speculative)
    if first is not None and release.version < first[0]:
        raise InputError("speculative", speculative, f"{release.label} has no {speculative} speculative decoding: "
                         f"{ENGINE_NAMES[release.engine]} runs it from {first[1]} ({first[2]}); give "
                         f"--engine {release.engine}=={first[1]} or later, or another --speculative")
    window = VLLM_SPECULATIVE_V0_ONLY.get(speculative) if release.engine == "vllm" else None
    if window is not None and window[0] <= release.version < window[1]:  # first: the V0 release, looked up once
        raise InputError("speculative", speculative, f"{release.label} runs {speculative} only on its V0 engine "
                         "(engine/arg_utils.py@v0.8.5 L1423-1441, L1649-1658) and gpuplan prices vllm 0.8.x as V1; "
                         f"give --engine vllm=={first[1]} (V0) or vllm==0.9.0 or later (V1)")


def check_eagle3_target(speculative: str, model_type: str, release) -> None:
    """InputError naming ``speculative`` where the vLLM ``release`` runs EAGLE-3 on some targets only
    (EAGLE3_TARGETS) and ``model_type`` (the target's config.json) names none of them."""
    if speculative != "eagle3" or release is None or release.engine != "vllm":
        return
    for first, end, names in EAGLE3_TARGETS:
        if first <= release.version < end and not any(name in model_type for name in names):
            which = " or ".join(n.capitalize() for n in names)
            wider = [(f, n) for f, _, n in EAGLE3_TARGETS if f >= end and any(x in model_type for x in n)]
            newer = f", --engine vllm=={version_text(wider[0][0])} or later" if wider else ""
            raise InputError("speculative", speculative, f"{release.label} runs EAGLE-3 on {which} targets only, "
                             f"not model_type {model_type or '(none)'} (vllm config.py@v{version_text(first)}: 'Eagle3 is "
                             f"only supported for ...'); give a {which} model{newer}, or --speculative eagle")


SGLANG_LORA_SINCE = (0, 3, 1)
"""The first SGLang build that serves LoRA adapters: --lora-paths and --max-loras-per-batch are absent from the
0.3.0 wheel's server_args.py (and it ships no sglang/srt/lora/), first at server_args.py@0.3.1 L531 and L538 with
srt/lora/ (wheels read 2026-12-06, wave 16 X4). 0.3.0 is the oldest SGLang release modelled."""


def check_lora(field: str, value: object, release) -> None:
    """InputError naming ``field`` (enable_lora or max_loras, whichever turned LoRA on) where the vLLM or SGLang
    ``release`` serves no adapters (VLLM_LORA_SINCE, SGLANG_LORA_SINCE)."""
    if release.engine == "vllm" and release.version < VLLM_LORA_SINCE:
        raise InputError(field, value, f"{release.label} serves no LoRA adapters: vLLM has them from 0.3.0 (vllm PR "
                         "1804, 'Add multi-LoRA support', --enable-lora); give --engine vllm==0.3 or later")
    if release.engine == "sglang" and release.version < SGLANG_LORA_SINCE:
        raise InputError(field, value, f"{release.label} serves no LoRA adapters: SGLang has them from 0.3.1 "
                         "(--lora-paths, --max-loras-per-batch first in server_args.py of the 0.3.1 wheel); give "
                         "--engine sglang==0.3.1 or later")


VLLM_KV_FP8_SINCE = (0, 3, 0)
"""The first vLLM release with an FP8 KV cache: --kv-cache-dtype (choices ['auto', 'fp8_e5m2']) is first in the
0.3.0 wheel's engine/arg_utils.py (L127-129; vllm PR 2279 'Support FP8-E5M2 KV Cache'); the 0.2.7 wheel's
arg_utils.py has no kv_cache_dtype at all (read 2026-12-06, pip download vllm==X --no-deps, unzip)."""

VLLM_WEIGHTS_SINCE = {"fp8": (0, 4, 1), "int8": (0, 4, 3)}
"""The first vLLM release that serves each quantised weight format gpuplan names (core.serving.weights.FORMATS), by
the dtype its matmuls run in, read from the release wheels (pip download vllm==X --no-deps, unzip; 2026-12-06):

- fp8 (W8A8 FP8): 0.4.1. model_executor/layers/quantization/fp8.py is absent from the 0.4.0 wheel, whose
  --quantization takes only awq, gptq, squeezellm (engine/arg_utils.py@v0.4.0 L249), and first in 0.4.1's
  (QUANTIZATION_METHODS 'fp8': Fp8Config).
- int8 (W8A8 INT8, SmoothQuant): 0.4.3. compressed_tensors/schemes/compressed_tensors_w8a8_statictensor.py (int8
  weights, static_scaled_int8_quant + cutlass_scaled_mm_dq) is first in the 0.4.3 wheel; 0.4.2's quantization
  methods are aqlm, awq, fp8, gptq, squeezellm, gptq_marlin, marlin.

--quantization int4 (GPTQ or AWQ) is not gated: AWQ is in the oldest release modelled (0.2.0: --quantization choices
['awq']). A checkpoint's GPTQ is (VLLM_CHECKPOINT_SINCE)."""

VLLM_CHECKPOINT_SINCE = {"gptq": (0, 2, 6), "gptq_marlin": (0, 4, 2), "nvfp4": (0, 8, 0), "mxfp4": (0, 10, 1)}
"""The first vLLM release that loads each checkpoint format gpuplan reads (jobs.inference.quant_config), keyed by the
checkpoint's quant_method (gptq, gptq_marlin) or by the format read (nvfp4, mxfp4: their compute dtype is not what
VLLM_WEIGHTS_SINCE keys on), read from the release wheels (pip download vllm==X --no-deps, unzip; review w14 r2 M4):

- gptq: 0.2.6. --quantization choices=['awq', 'squeezellm', None] at engine/arg_utils.py@v0.2.3, @v0.2.4, @v0.2.5
  L182, and no model_executor/layers/quantization/gptq.py in those wheels; ['awq', 'gptq', 'squeezellm', None] at
  @v0.2.6 L184, and quantization/__init__.py@v0.2.6 L10 '"gptq": GPTQConfig'.
- gptq_marlin: 0.4.2. quantization/__init__.py@v0.4.1 lists marlin but no gptq_marlin; @v0.4.2 lists both.
- nvfp4 (ModelOpt NVFP4): 0.8.0. modelopt.py@v0.7.3 has only ModelOptFp8Config (quantization/__init__.py@v0.7.3
  L114 '"modelopt": ModelOptFp8Config'); modelopt.py@v0.8.0 L27 QUANT_ALGOS = ["FP8", "NVFP4"], L166
  ModelOptNvFp4Config, __init__.py@v0.8.0 L116 '"nvfp4": ModelOptNvFp4Config'. (compressed-tensors NVFP4 came
  later, compressed_tensors_w4a16_nvfp4.py first in the 0.9.0 wheel; gated here at 0.8.0 all the same.)
- mxfp4 (gpt-oss): 0.10.1. quantization/mxfp4.py is absent from the 0.10.0 wheel and first in 0.10.1's
  (quantization/__init__.py@v0.10.1 L150 '"mxfp4": Mxfp4Config').

Not gated, for want of a wheel read at the first release: marlin (absent 0.3.0, present 0.3.3), awq_marlin (absent
0.5.0)."""


SGLANG_CHECKPOINT_SINCE = {
    "nvfp4": ("0.4.5.post1", "ModelOptFp4Config, 'modelopt_fp4', first in the 0.4.5.post1 wheel"),
    "mxfp4": ("0.5.0rc0", "Mxfp4Config, 'mxfp4', first in the 0.5.0rc0 wheel")}
"""The first SGLang build that loads each checkpoint format keyed as VLLM_CHECKPOINT_SINCE is (checkpoint_key), read
from the release wheels (pip download --no-deps sglang==X, unzip; 2026-12-06, wave 16 X4):

- nvfp4 (ModelOpt NVFP4): 0.4.5.post1. sglang/srt/layers/quantization/modelopt_quant.py has no ModelOptFp4Config in
  the 0.3.0, 0.4.3, 0.4.4 and 0.4.5 wheels; it is at modelopt_quant.py@0.4.5.post1 L224, registered as
  '"modelopt_fp4": ModelOptFp4Config' at quantization/__init__.py@0.4.5.post1 L75.
- mxfp4 (gpt-oss): 0.5.0rc0. No quantization/mxfp4.py nor models/gpt_oss.py in the 0.4.9, 0.4.10 and 0.4.10.post2
  wheels; both in 0.5.0rc0's ('"mxfp4": Mxfp4Config' at quantization/__init__.py@0.5.0rc0 L100). PyPI has no final
  0.5.0: the next final build is 0.5.1.
gpuplan reads 0.5.0rc0 as (0, 5, 0) (core.serving.releases.parse_version keeps no rc number), after 0.4.10.post2.
TensorRT-LLM's first releases with either format were not read: not gated."""

_SGLANG_CHECKPOINT_GATES = {key: (parse_version(first, "sglang"), first, evidence)
                            for key, (first, evidence) in SGLANG_CHECKPOINT_SINCE.items()}
"""SGLANG_CHECKPOINT_SINCE parsed once at import (check_formats): {key: (version tuple, as written, evidence)}."""


def checkpoint_key(quant_method: object, fmt_name: str) -> str | None:
    """The VLLM_CHECKPOINT_SINCE key of a checkpoint: its quant_method where listed (gptq, gptq_marlin), else the
    format read (``fmt_name`` without its '(attention bf16)' note) where listed (nvfp4, mxfp4); None: not gated."""
    method = quant_method.strip().lower() if isinstance(quant_method, str) else ""
    base = fmt_name.split(" ")[0]
    return method if method in VLLM_CHECKPOINT_SINCE else base if base in VLLM_CHECKPOINT_SINCE else None


def check_formats(weights: str, kv_dtype: str, release, quoted: str | None = None,
                  checkpoint: str | None = None) -> None:
    """InputError naming ``quantization`` where the vLLM ``release`` serves no ``weights`` (the dtype the format's
    matmuls run in: --quantization as given, or a checkpoint's format, quoted as ``quoted``) or cannot load the
    ``checkpoint`` format (a checkpoint_key), or ``kv_dtype`` where it has no FP8 KV cache (VLLM_WEIGHTS_SINCE,
    VLLM_CHECKPOINT_SINCE, VLLM_KV_FP8_SINCE), or where the SGLang ``release`` cannot load the ``checkpoint``
    (SGLANG_CHECKPOINT_SINCE); SGLang's flags and TensorRT-LLM are not gated (their oldest releases modelled were
    not read for these)."""
    if release is not None and release.engine == "sglang" and checkpoint in _SGLANG_CHECKPOINT_GATES:
        since, first, evidence = _SGLANG_CHECKPOINT_GATES[checkpoint]
        if release.version < since:
            raise InputError("quantization", quoted or checkpoint, f"{release.label} cannot load a {checkpoint} "
                             f"checkpoint: SGLang loads them from {first} ({evidence}); give --engine "
                             f"sglang=={first} or later, or another --quantization")
    if release is None or release.engine != "vllm":
        return
    since = VLLM_CHECKPOINT_SINCE.get(checkpoint) if checkpoint is not None else None
    if since is not None and release.version < since:
        raise InputError("quantization", quoted or checkpoint, f"{release.label} cannot load a {checkpoint} "
                         f"checkpoint: vLLM loads them from {version_text(since)} (its quantization methods, read in the "
                         f"wheels); give --engine vllm=={version_text(since)} or later, or another --quantization")
    since = VLLM_WEIGHTS_SINCE.get(weights)
    if since is not None and release.version < since:
        raise InputError("quantization", quoted or weights, f"{release.label} serves no {weights} weights: vLLM "
                         f"runs them from {version_text(since)} (its quantization methods, read in the wheels); give "
                         f"--engine vllm=={version_text(since)} or later, or another --quantization")
    if kv_dtype == "fp8" and release.version < VLLM_KV_FP8_SINCE:
        raise InputError("kv_dtype", kv_dtype, f"{release.label} has no FP8 KV cache: vLLM has --kv-cache-dtype "
                         f"from {version_text(VLLM_KV_FP8_SINCE)} (vllm PR 2279); give --engine vllm==0.3.0 or later, "
                         "or --kv-dtype auto")


VLLM_PP_SINCE = (0, 5, 1)
"""The first vLLM release that serves with --pipeline-parallel-size > 1: ParallelConfig._verify_args raises
NotImplementedError('Pipeline parallelism is not supported yet.') at config.py@v0.5.0.post1 L629-631 (and in every
older wheel); config.py@v0.5.1 L268-274 takes pp > 1 on the architectures of its _PP_SUPPORTED_MODELS (L29; vllm PR
4412 '[Core] Pipeline Parallel Support'). Wheels read 2026-12-06 (pip download vllm==X --no-deps, unzip). The
per-release architecture lists are not modelled."""

SGLANG_PP_SINCE = "0.4.6.post2"
"""The first SGLang build with --pp-size: pp_size and '--pipeline-parallel-size', '--pp-size' are absent from
server_args.py in the 0.4.6 and 0.4.6.post1 wheels and first at server_args.py@0.4.6.post2 L81, L655-658
(sgl-project/sglang PR 5724 '[PP] Add pipeline parallelism'; wheels read 2026-12-06). TensorRT-LLM's pp_size is in
every release modelled (from 0.5.0) and is not gated."""

VLLM_PREFIX_CACHING_SINCE = (0, 4, 0)
"""The first vLLM release whose server caches prompt prefixes: --enable-prefix-caching is first in
engine/arg_utils.py@v0.4.0 L199 (automatic prefix caching); the 0.3.3 wheel has only LLM.generate's offline
prefix_pos (entrypoints/llm.py@v0.3.3 L127, absent from entrypoints/openai/serving_completion.py), the 0.2.0 wheel
no prefix cache at all. SGLang's RadixAttention is in every release modelled (0.3.0 on); TensorRT-LLM's KV-cache
reuse was not read at its first release and is not gated."""

VLLM_CHUNKED_PREFILL_SINCE = (0, 4, 1)
"""The first vLLM release that runs max_num_batched_tokens below max_model_len: SchedulerConfig._verify_args raises
'max_num_batched_tokens (...) is smaller than max_model_len (...)' unconditionally at config.py@v0.2.0 L285-292,
@v0.3.3 L471 and @v0.4.0 L563-570 (0.4.0 parses --enable-chunked-prefill, arg_utils.py@v0.4.0 L361, but does not
read it there); config.py@v0.4.1 L596-597 lifts it under enable_chunked_prefill (wheels read 2026-12-06)."""


DISAGGREGATION_SINCE = {"vllm": ("0.6.5", "--kv-transfer-config and distributed/kv_transfer/ first in the 0.6.5 "
                                   "wheel, engine/arg_utils.py@v0.6.5 L931; absent from 0.6.4.post1's"),
                        "sglang": ("0.4.4.post2", "--disaggregation-mode and srt/disaggregation/ first in the "
                                   "0.4.4.post2 wheel, server_args.py@0.4.4.post2 L1089; absent from 0.4.4.post1's")}
"""The first build of each engine that splits prefill and decode into separate instances (--disaggregate), read
from the release wheels (pip download --no-deps, unzip; 2026-12-06, wave 16 X4). TensorRT-LLM's first release with
disaggregated serving was not read: not gated."""

_DISAGGREGATION_GATES = {engine: (parse_version(first, engine), first, evidence)
                         for engine, (first, evidence) in DISAGGREGATION_SINCE.items()}
"""DISAGGREGATION_SINCE parsed once at import (check_features): {engine: (version tuple, as written, evidence)}."""


_PP_SINCE = {"vllm": (VLLM_PP_SINCE, version_text(VLLM_PP_SINCE), "NotImplementedError 'Pipeline parallelism is not "
                      "supported yet.', config.py@v0.5.0.post1 L629-631; vllm PR 4412"),
             "sglang": (parse_version(SGLANG_PP_SINCE, "sglang"), SGLANG_PP_SINCE, "--pp-size first in "
                        "server_args.py of the 0.4.6.post2 wheel; sglang PR 5724")}
"""check_pipeline's table: an engine's first release with pipeline parallelism (version tuple), that version as
printed, and where it was read (VLLM_PP_SINCE, SGLANG_PP_SINCE); an engine missing is not gated."""


def check_features(release, pp: int, prefix_hit: float, disaggregate: bool) -> None:
    """check_pipeline, check_prefix_cache and the DISAGGREGATION_SINCE gate for one ask (InferenceInputs)."""
    check_pipeline(pp, release)
    check_prefix_cache(prefix_hit, release)
    gate = _DISAGGREGATION_GATES.get(release.engine) if disaggregate and release is not None else None
    if gate is not None and release.version < gate[0]:
        raise InputError("disaggregate", True, f"{release.label} runs no disaggregated prefill / decode: "
                         f"{ENGINE_NAMES[release.engine]} has it from {gate[1]} ({gate[2]}); give --engine "
                         f"{release.engine}=={gate[1]} or later, or --no-disaggregate")


def check_pipeline(pp: int, release) -> None:
    """InputError naming ``pp`` where the ``release`` (core.serving.releases.EngineRelease) has no pipeline
    parallelism (VLLM_PP_SINCE, SGLANG_PP_SINCE)."""
    if pp <= 1 or release is None:
        return
    first = _PP_SINCE.get(release.engine)
    if first is not None and release.version < first[0]:
        raise InputError("pp", pp, f"{release.label} has no pipeline parallelism: {ENGINE_NAMES[release.engine]} "
                         f"serves pp > 1 from {first[1]} ({first[2]}); give --engine {release.engine}=={first[1]} "
                         "or later, or --tp instead of --pp")


def check_prefix_cache(prefix_hit: float, release) -> None:
    """InputError naming ``prefix_hit`` where the vLLM ``release`` caches no prompt prefixes
    (VLLM_PREFIX_CACHING_SINCE)."""
    if prefix_hit > 0 and release is not None and release.engine == "vllm" \
            and release.version < VLLM_PREFIX_CACHING_SINCE:
        raise InputError("prefix_hit", prefix_hit, f"{release.label} has no prefix cache: vLLM's server caches "
                         "prefixes from 0.4.0 (--enable-prefix-caching, engine/arg_utils.py@v0.4.0 L199); give "
                         "--engine vllm==0.4.0 or later, or --prefix-hit 0")


def check_prefill_chunks(prefill_tokens: int | None, context: int, release) -> None:
    """InputError naming ``prefill_tokens`` where the vLLM ``release`` refuses a token budget per step below the
    ``context`` (max_model_len): no chunked prefill before VLLM_CHUNKED_PREFILL_SINCE."""
    if prefill_tokens is None or prefill_tokens >= context or release is None or release.engine != "vllm" \
            or release.version >= VLLM_CHUNKED_PREFILL_SINCE:
        return
    raise InputError("prefill_tokens", prefill_tokens, f"is below the context ({context:,} tokens, max_model_len) "
                     f"and {release.label} has no chunked prefill: its SchedulerConfig refuses max_num_batched_tokens "
                     "smaller than max_model_len (config.py@v0.4.0 L563-570; lifted by --enable-chunked-prefill from "
                     f"0.4.1); give --prefill-tokens {context} or more, or --engine vllm==0.4.1 or later")
