"""The host side of a prompt's eager prefill in SGLang: what the GPU waits for before the first token.

Units: seconds, kernels, layers. What runs between a client's request and its first streamed token
at concurrency 1 in SGLang 0.5.6 (sglang wheel 0.5.6, python/sglang/srt/...):

- bench_serving times TTFT to the first streamed chunk whose ``text`` is not empty
  (bench_serving.py@v0.5.6:578-586); the server streams every token (server_args.py@v0.5.6:289
  stream_interval = 1; scheduler_output_processor_mixin.py@v0.5.6:808-818).
- The scheduler busy-polls its ZMQ socket (managers/scheduler.py@v0.5.6:1077 recv_pyobj(zmq.NOBLOCK);
  no idle sleep unless --sleep-on-idle, L640) and runs the overlap loop (L1004-1047): the prefill is
  launched, and its sampled token is processed (process_batch_result, which sends it to the
  detokenizer) only after the next batch, the first decode step, has been launched (L1036-1041).
- The prefill itself runs eagerly: piecewise CUDA graphs for extend batches are off by default
  (server_args.py@v0.5.6:508 enable_piecewise_cuda_graph = False; model_runner.py@v0.5.6:2583-2587
  replays them only when that runner exists), and the CUDA-graph runner replays decode batches only
  (forward_batch_info.py@v0.5.6:150-155 is_cuda_graph: DECODE / TARGET_VERIFY / IDLE;
  kernels.prefill_graphs_of). forward_extend then runs init_forward_metadata and model.forward
  (model_runner.py@v0.5.6:2589-2596): every kernel of every layer is issued from Python.
- The eager forward has no host sync inside its layers: the FlashInfer backend's one device sync of
  an extend batch, ``paged_kernel_lens.sum().item()`` ('TODO: remove this device sync'), sits in
  FlashInferIndicesUpdaterPrefill.update_single_wrapper (layers/attention/flashinfer_backend.py@v0.5.6:
  1178-1181), reached from init_forward_metadata (L417-503), once a forward, before the layers;
  forward_extend (L698-804), llama.py, qwen3_moe.py, fused_moe.py and topk.py have none. So the host
  runs ahead of the GPU while it issues the layers, and the layers end at the later of their host issue
  time I and their GPU work G (the launch queue never empties when the host is the slower; it never fills
  when the GPU is): max(I, G), not their sum.
- The forward's host work outside its layers, F, does not hide under G: forward_extend runs
  init_forward_metadata before model.forward (model_runner.py@v0.5.6:2589-2592), and that metadata
  preparation ends in the device sync above (flashinfer_backend.py@v0.5.6:1181), so no layer of the
  forward is queued while it runs. An SGLang eager prefill forward is F + max(I, G) (eager_exposed_seconds),
  the serial form PR 12160's equations assume when they size F (PR12160_GRAPH_GPU_S).

The host issue time is counted, not fitted on a TTFT row: launches a layer (layer_kernels, counted from
the engines' code per family and path) x layers x the host time spent issuing one launch eagerly,
EAGER_HOST_PER_LAUNCH_S, taken from a public measurement outside the validation set with the
measured forward's own launches counted the same way; an SGLang prefill adds the forward's host time
outside its layers (SGLANG_PREFILL_HOST_PER_FORWARD_RANGE_S), from the same measurement's equations, so
that the measured forward itself comes out at its logged time. SGLang's eager decode steps (a batch past its CUDA
graphs, or none captured) and vLLM's --enforce-eager steps (decode and prefill) are timed by the same rule
(eager_issue_seconds, runs_issue_bound).
"""

from __future__ import annotations

import numpy as np

from gpuplan.core.hardware import Accelerator
from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.serving import layer_kernels as LK
from gpuplan.core.serving.releases import VLLM_V1_SINCE, EngineRelease

PR12160_EAGER_FORWARD_S = 82.64e-3
"""SGLang 'forward cost' of a 1-new-token prefill run eagerly (DeepSeek-V3, TP 8): sgl-project/sglang
PR 12160 ('support prefill-cuda-graph based on cuda-graph-runner', 2025-10-26), its log line
'Prefill batch. #new-seq: 1, #new-token: 1 ... forward cost-82.6406478881836 ms'."""
PR12160_GRAPH_FORWARD_S = 23.10e-3
"""The same 1-new-token prefill replaying the PR's prefill CUDA graph: 'forward cost- 23.097753524780273 ms'."""
PR12160_GRAPH_GPU_S = 6.5e-3
"""GPU work of that graphed 1-token forward, as gpuplan models it (a batch-1 DeepSeek-V3 fp8 TP 8 step:
weights streamed, the graph's small-kernel floor, the all-reduces; roofline.decode_step, sglang==0.5.6):
6.2 ms on an H200, 6.5 on an H20, 6.8 on an H100 / H800, 7.4 on an H100 96 GB (the Hopper parts whose
code path layer_kernels counts for the PR). The PR names no GPU; 6.5 ms is the middle, and the spread
moves the per-launch time below by +-0.4 us.
With per-forward host work F (metadata, sampling) common to both runs and serial with the layers (module
docstring: the metadata's device sync precedes the layers), the graphed forward is F + G and the eager one
F + max(I, G) = F + I (host-bound: 82.6 > 23.1), so the eager forward's layer issue time is
I = 82.64 - 23.10 + G = 66.0 ms. roofline.step_time applies the same serial form (eager_exposed_seconds)."""
DEEPSEEK_V3_LAYERS = 61
DEEPSEEK_V3_MOE_LAYERS = 58
"""DeepSeek-V3's config: num_hidden_layers 61, first_k_dense_replace 3 (catalog deepseek-v3)."""
DEEPSEEK_V3_ALLREDUCES = 2
"""TP all-reduces a layer of the PR's TP 8 forward, launched like any kernel (no fusion off sm100): the
Megatron pair kernels.allreduces_per_layer gives DeepSeek-V3 (a constant here, since no ModelSpec is loaded
at import; tests/test_first_token_path.py checks the two agree)."""
PR12160_LAYERS = (LK.LayerKernels(LK.DEEPSEEK_SM90_PR12160_ATTENTION.issued + LK.DEEPSEEK_FP8_DENSE_MLP.issued, 0,
                                  "PR 12160 dense layer"),
                  LK.LayerKernels(LK.DEEPSEEK_SM90_PR12160_ATTENTION.issued + LK.DEEPSEEK_SM90_PR12160_MOE.issued, 0,
                                  "PR 12160 MoE layer"))
"""(dense layer, MoE layer) launches of the PR's eager forward (sm90 path, layer_kernels), all-reduces apart."""
DEEPSEEK_V3_KERNELS_PER_LAYER = LK.layer_mean(PR12160_LAYERS, DEEPSEEK_V3_LAYERS, DEEPSEEK_V3_MOE_LAYERS,
                                              "issued") + DEEPSEEK_V3_ALLREDUCES
"""Launches a layer of the PR's eager forward, counted from SGLang's code (layer_kernels: the sm90 path,
absorbed MLA, triton MoE with the shared expert fused in, FP8 block linears as two kernels):
(3 x (15 + 5) + 58 x (15 + 9)) / 61 + 2 all-reduces = 25.80 (14.80 before 2026-12-05, when the general
rule's 11 + 4 x 58 / 61 stood for it: MLA as standard attention, no quantisation kernels, no all-reduces)."""
EAGER_HOST_PER_LAUNCH_S = (PR12160_EAGER_FORWARD_S - PR12160_GRAPH_FORWARD_S + PR12160_GRAPH_GPU_S) / (
    DEEPSEEK_V3_LAYERS * DEEPSEEK_V3_KERNELS_PER_LAYER)
"""Host seconds an engine spends issuing one launch of an eager forward from Python, measured on SGLang and
taken for every forward timed by the issue time (SGLang's prefill and eager decode, vLLM V1 --enforce-eager:
runs_issue_bound): (82.64 - 23.10 + 6.5) ms / (61 layers
x 25.80 launches) = 41.96 us (73.1 us when the layer was counted as 14.80). Python module calls,
CustomOp dispatch, the quantisation method's apply, the attention backend's branches and the launch
itself, per launch. The PR does not name its GPU or host; no TTFT row of the validation set is used
(they are held out). One constant a launch is the model's assumption: a library call with much Python
behind one launch (flashinfer's fused-MoE wrappers consult an autotuner) costs more than a bare op."""


EAGER_HOST_PER_LAUNCH_RANGE_S = (EAGER_HOST_PER_LAUNCH_S,
                                        PR12160_EAGER_FORWARD_S / (DEEPSEEK_V3_LAYERS * DEEPSEEK_V3_KERNELS_PER_LAYER),
                                        (PR12160_EAGER_FORWARD_S - PR12160_GRAPH_FORWARD_S)
                                        / (DEEPSEEK_V3_LAYERS * DEEPSEEK_V3_KERNELS_PER_LAYER))
"""(expected, slow, fast) seconds a launch, the range of the answer's TTFT (roofline's ``which`` 0 / 1 /
2): what PR 12160's two lines allow whatever its GPU work G, 0 <= G <= 23.1 ms, and its per-forward
host work F, I = 82.64 - 23.10 + G: G = 23.10 (the graphed forward all GPU, F = 0) gives 82.64 ms, 52.5 us
a launch; G = 0 gives 59.54 ms, 37.8 us; expected 41.96 us."""


SGLANG_PREFILL_HOST_PER_FORWARD_RANGE_S = (PR12160_GRAPH_FORWARD_S - PR12160_GRAPH_GPU_S, 0.0,
                                           PR12160_GRAPH_FORWARD_S)
"""Host seconds an SGLang prefill forward spends outside its layers' launches, F, paired with
EAGER_HOST_PER_LAUNCH_RANGE_S by ``which``: the F of PR 12160's own equations. Its graphed forward is F + G
= 23.10 ms, so F = 23.10 - G: 16.6 ms at the expected G = 6.5 ms (0 at G = 23.1, 23.1 at G = 0). The eager
forward is F + I = 82.64 ms whatever G; with F left out (before 2026-12-06) the model put PR 12160's own
eager forward at I = 66.0 ms, 16.6 ms under the log line it was derived from. What F holds is not itemised by
the PR (metadata for the extend, logits and sampling, the scheduler's share of the forward); it is taken as one
term a forward, the same for every model, on prefill (extend) forwards only: the PR measured extend forwards,
and a decode step's per-forward host time is bounded by the SGLang TPOT rows instead (its graph steps overlap
their host work with the previous step's GPU work: a 16.6 ms F would hold every step above the 9.2-10.4 ms
measured)."""


def eager_issue_seconds(release: EngineRelease, spec: ModelSpec, which: int = 0, *, fabric: Accelerator | None = None,
                        fmt_name: str = "bf16", tokens: float = 1.0, tp: int = 1, prefill: bool = True) -> float:
    """Host seconds to issue one eager forward of ``spec`` in ``release``: layers x the launches a layer
    (layer_kernels.issued_kernels) x EAGER_HOST_PER_LAUNCH_RANGE_S[which], plus, for SGLang's prefill, the
    forward's host time outside its layers (SGLANG_PREFILL_HOST_PER_FORWARD_RANGE_S; PR 12160's forward is then
    its logged 82.64 ms at every ``which``). The one per-launch time serves every engine's eager forward whose
    launches come from Python: SGLang's prefill (every release modelled runs it eagerly: kernels.prefill_graphs_of)
    and its decode steps past its graphs (runs_issue_bound; the decode path's counts, ``prefill`` False, where
    layer_kernels has them), and vLLM's steps under --enforce-eager (vLLM V1 at graph_max_tokens 0:
    config.py@v0.9.1:4438-4446 leaves compilation off and captures no graph when enforce_eager, so every custom
    op and torch op is launched from Python). ``which`` 1 / 2 are the slower / faster of the range's two ends
    (G = 23.1 or 0 in PR 12160's equations): with the per-forward term, which end is slower depends on the
    forward's launches against the PR's 1,574."""
    ends = [forward + layers for forward, layers in _issue_ends(release, spec, fabric, fmt_name, tokens, tp, prefill)]
    if which == 0:
        return ends[0]
    return max(ends[1:]) if which == 1 else min(ends[1:])


def eager_exposed_seconds(release: EngineRelease, spec: ModelSpec, gpu_s: float, which: int = 0, *,
                          fabric: Accelerator | None = None, fmt_name: str = "bf16", tokens: float = 1.0, tp: int = 1,
                          prefill: bool = True) -> tuple[float, float, float]:
    """(issue, per-forward, exposed) host seconds of one eager forward whose layers take ``gpu_s`` of GPU work:
    issue = F + I (eager_issue_seconds' sum), F the per-forward host time outside the layers (SGLang prefill:
    SGLANG_PREFILL_HOST_PER_FORWARD_RANGE_S; else 0), and exposed = F + max(0, I - G), the host time the step
    adds beyond its GPU work: the forward is F + max(I, G) (module docstring: F's metadata and its device sync
    run before any layer is queued), so F is paid whatever G. ``which`` 0 is the expected end; 1 / 2 the range
    end (PR 12160's G = 23.1 or 0) whose exposed time is the larger / smaller."""
    ends = [(forward + layers, forward, forward + exposed_host_seconds(layers, gpu_s))
            for forward, layers in _issue_ends(release, spec, fabric, fmt_name, tokens, tp, prefill)]
    if which == 0:
        return ends[0]
    if isinstance(gpu_s, np.ndarray):  # one forward a chunk (roofline.prefill_forward): max / min's pick per chunk
        low, high = ends[1:]
        first = low[2] >= high[2] if which == 1 else low[2] <= high[2]
        return tuple(np.where(first, a, b) for a, b in zip(low, high))
    pick = max if which == 1 else min
    return pick(ends[1:], key=lambda end: end[2])


def eager_forward_host_seconds(release: EngineRelease, prefill: bool = True) -> float:
    """The expected per-forward part of eager_issue_seconds (SGLang prefill: 16.6 ms; else 0)."""
    return _forward_range(release, prefill)[0]


def _forward_range(release: EngineRelease, prefill: bool) -> tuple[float, float, float]:
    """F at each end (expected, PR 12160's G = 0 / 23.1 ends): SGLANG_PREFILL_HOST_PER_FORWARD_RANGE_S for an SGLang
    prefill, else none."""
    return SGLANG_PREFILL_HOST_PER_FORWARD_RANGE_S if prefill and release.engine == "sglang" else (0.0, 0.0, 0.0)


def _issue_ends(release: EngineRelease, spec: ModelSpec, fabric: Accelerator | None, fmt_name: str, tokens: float,
                tp: int, prefill: bool) -> list[tuple[float, float]]:
    """(F, I) at each end of the ranges: the per-forward host time (_forward_range) and the layers' issue time
    (layers x layer_kernels.issued_kernels x EAGER_HOST_PER_LAUNCH_RANGE_S), the two terms eager_issue_seconds and
    eager_exposed_seconds combine."""
    launches = spec.num_layers * LK.issued_kernels(spec, release, fabric, fmt_name, prefill=prefill, tokens=tokens,
                                                   tp=tp)
    forward = _forward_range(release, prefill)
    return [(forward[i], launches * EAGER_HOST_PER_LAUNCH_RANGE_S[i]) for i in (0, 1, 2)]


def runs_issue_bound(release: EngineRelease, graph_max_tokens: int) -> bool:
    """Whether an eager step of ``release`` (the caller's: not replaying a CUDA graph) is timed by the issue
    time (max(issue, GPU)). SGLang: every eager step, its prefill (no prefill graphs, kernels.prefill_graphs_of)
    and its decode steps that no graph covers: a batch above cuda_graph_max_bs (cuda_graph_runner.py@v0.5.6:
    359-377 can_run: bs <= max_bs) or no graph runner at all (--disable-cuda-graph, model_runner.py@v0.5.6:
    2412-2422; graph_max_tokens 0: a validation row's enforce_eager, the CLI refuses --cuda-graph-gib for SGLang)
    run model_runner._forward_raw's eager branch
    (L2660-2700: forward_decode L2546-2567, init_forward_metadata then model.forward), the same Python
    forward as the prefill's. vLLM V1 (0.8+): any step run with --enforce-eager (graph_max_tokens 0). Other
    eager steps (TensorRT engines before 1.0, vLLM V0's prefill and its decode past its graphs, vLLM before
    0.2.6) keep setup.Efficiency.layer_launch_s."""
    if release.engine == "sglang":
        return True
    return release.engine == "vllm" and release.version >= VLLM_V1_SINCE and graph_max_tokens <= 0


def exposed_host_seconds(issue_s: float, gpu_s: float) -> float:
    """Host time the layers add beyond their GPU work, seconds: they end at max(issue, GPU) (no sync inside
    the layers: module docstring), so max(0, issue - GPU). The per-forward host time outside the layers is
    added to it serially (eager_exposed_seconds)."""
    return np.maximum(0.0, issue_s - gpu_s) if isinstance(gpu_s, np.ndarray) else max(0.0, issue_s - gpu_s)
