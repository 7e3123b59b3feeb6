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
  forward_extend (L698-804), llama.py, qwen3_moe.py, fused_moe.py and topk.py have none. So the host runs ahead of the GPU, and an eager
  forward ends at the later of its host issue time and its GPU work (the launch queue never empties
  when the host is the slower; it never fills when the GPU is): max(host, GPU), not their sum.

The host issue time is counted, not fitted on a TTFT row: kernels a layer (kernels_issued_per_layer,
counted from SGLang's model code) x layers x the host time SGLang spends issuing one kernel eagerly,
SGLANG_EAGER_HOST_PER_KERNEL_S, taken from a public measurement outside the validation set.
"""

from __future__ import annotations

from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.serving import kernels as KR
from gpuplan.core.serving.releases import EngineRelease

PR12160_EAGER_FORWARD_S = 82.64e-3
"""SGLang 'forward cost' of a 1-new-token prefill run eagerly (DeepSeek-V3, TP 8): sgl-project/sglang
PR 12160 ('support prefill-cuda-graph based on cuda-graph-runner', 2025-10-26), its log line
'Prefill batch. #new-seq: 1, #new-token: 1 ... forward cost-82.6406478881836 ms'."""
PR12160_GRAPH_FORWARD_S = 23.10e-3
"""The same 1-new-token prefill replaying the PR's prefill CUDA graph: 'forward cost- 23.097753524780273 ms'."""
PR12160_GRAPH_GPU_S = 6.5e-3
"""GPU work of that graphed 1-token forward, as gpuplan models it (a batch-1 DeepSeek-V3 fp8 TP 8 step:
weights streamed, the graph's small-kernel floor, the all-reduces; roofline.decode_step, sglang==0.5.6):
5.8 ms on a B200, 6.2 on an H200, 6.5 on an H20, 6.8 on an H100 / H800, 7.4 on an H100 96 GB. The PR
names no GPU; 6.5 ms is the middle, and the spread moves the per-kernel time below by +-1 us.
With per-forward host work F (metadata, sampling) common to both runs, the graphed forward is
F + G and the eager one F + max(I, G) = F + I (host-bound: 82.6 > 23.1), so the eager forward's
issue time is I = 82.64 - 23.10 + G = 66.0 ms."""
DEEPSEEK_V3_LAYERS = 61
DEEPSEEK_V3_MOE_LAYERS = 58
"""DeepSeek-V3's config: num_hidden_layers 61, first_k_dense_replace 3 (catalog deepseek-v3)."""
DEEPSEEK_V3_KERNELS_PER_LAYER = (KR.GRAPH_KERNELS_DENSE
                                 + KR.GRAPH_KERNELS_MOE_EXTRA * DEEPSEEK_V3_MOE_LAYERS / DEEPSEEK_V3_LAYERS)
"""11 + 4 x 58 / 61 = 14.80 kernels a layer, as kernels.graph_kernels_per_layer counts them (MLA counted
as standard attention there, as for every model: the count is the same rule the step uses)."""
SGLANG_EAGER_HOST_PER_KERNEL_S = (PR12160_EAGER_FORWARD_S - PR12160_GRAPH_FORWARD_S + PR12160_GRAPH_GPU_S) / (
    DEEPSEEK_V3_LAYERS * DEEPSEEK_V3_KERNELS_PER_LAYER)
"""Host seconds SGLang spends issuing one kernel of an eager forward: (82.64 - 23.10 + 6.5) ms / (61 layers
x 14.80 kernels) = 73.1 us. Python module calls, CustomOp dispatch, the quantisation method's apply,
the attention backend's branches and the launch itself, per kernel; about ten ATen ops' worth on
the H200 host (core.time.host: 7.5 us an op there). The PR does not name its GPU or host, and
DeepSeek-V3's layer is counted by the same rule as every model's (MLA as standard attention, fp8
quantisation kernels not counted), which may undercount its kernels; no SGLang TTFT row of the
validation set is used (they are held out)."""


def kernels_issued_per_layer(spec: ModelSpec) -> float:
    """Kernels the host issues a layer of SGLang's eager forward: kernels.graph_kernels_per_layer's
    count, with q and k normed by two kernels where the model norms them per head. The graph count
    takes SGLang's q/k norms as one (k_norm on a second stream beside q_norm, overlapping on the GPU),
    but that fork exists only under graph capture; eagerly both run one after the other
    (qwen3_moe.py@v0.5.6:373-386, get_is_capture_mode() else branch), and the host issues both either way."""
    extra = 2 - KR.GRAPH_KERNELS_QK_NORM["sglang"] if spec.attention.qk_norm != "none" else 0
    return KR.graph_kernels_per_layer(spec, "sglang") + extra


SGLANG_EAGER_HOST_PER_KERNEL_RANGE_S = (SGLANG_EAGER_HOST_PER_KERNEL_S,
                                        PR12160_EAGER_FORWARD_S / (DEEPSEEK_V3_LAYERS * DEEPSEEK_V3_KERNELS_PER_LAYER),
                                        (PR12160_EAGER_FORWARD_S - PR12160_GRAPH_FORWARD_S)
                                        / (DEEPSEEK_V3_LAYERS * DEEPSEEK_V3_KERNELS_PER_LAYER))
"""(expected, slow, fast) seconds a kernel, the range of the answer's TTFT (roofline's ``which`` 0 / 1 /
2): what PR 12160's two lines allow whatever its GPU work G, 0 <= G <= 23.1 ms, and its per-forward
host work F, I = 82.64 - 23.10 + G: G = 23.10 (the graphed forward all GPU, F = 0) gives 82.64 ms, 91.5 us
a kernel; G = 0 gives 59.54 ms, 65.9 us; expected 73.1 us."""


def eager_prefill_issue_seconds(release: EngineRelease, spec: ModelSpec, which: int = 0) -> float | None:
    """Host seconds to issue one eager prefill forward of ``spec`` in ``release``: layers x
    kernels_issued_per_layer x SGLANG_EAGER_HOST_PER_KERNEL_RANGE_S[which] for SGLang (all releases
    modelled run prefill eagerly: kernels.prefill_graphs_of); None for the other engines, whose eager
    steps keep setup.Efficiency.layer_launch_s."""
    if release.engine != "sglang" or KR.prefill_graphs_of(release):
        return None
    return spec.num_layers * kernels_issued_per_layer(spec) * SGLANG_EAGER_HOST_PER_KERNEL_RANGE_S[which]


def exposed_host_seconds(issue_s: float, gpu_s: float) -> float:
    """Host time the step adds beyond its GPU work, seconds: the forward ends at max(issue, GPU)
    (no sync inside the layers: module docstring), so max(0, issue - GPU)."""
    return max(0.0, issue_s - gpu_s)
