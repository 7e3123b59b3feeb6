"""vLLM's int4 GEMMs on Ampere / Ada: the Marlin kernel's compute ceiling at large M (prefill).

Units: fractions of the dense fp16 peak. Read in the vLLM 0.9.1 sdist (csrc/..., vllm/...) and wheel.

Which kernel runs. An AWQ checkpoint (quant_method 'awq', 4 bits, group 128, zero points) served without
``--quantization`` is converted to awq_marlin: AWQMarlinConfig.override_quantization_method returns
'awq_marlin' when is_awq_marlin_compatible and the user named no method (or marlin / awq_marlin)
(model_executor/layers/quantization/awq_marlin.py@v0.9.1:107-124, 154-176: CUDA, 4 or 8 bits, a group size
and zero point that check_marlin_supported accepts); only ``--quantization awq`` keeps the old AWQ kernel
(L119-123), whose dequantize-then-matmul path for M >= 256 (awq.py@v0.9.1:184-188) is therefore not what a default server runs.
Every awq_marlin linear calls ops.gptq_marlin_gemm at any M (apply_awq_marlin_linear,
quantization/utils/marlin_utils.py@v0.9.1:434-475): there is no switch to a dequantised cuBLAS GEMM for a
prefill. GPTQ checkpoints reach the same kernel on sm8x (gptq_marlin.py@v0.9.1:237 choose_mp_linear_kernel:
Machete, its first choice, needs sm90, machete.py:24-25; AllSpark, the second, takes 8-bit weights only,
utils/allspark_utils.py:10; then MarlinLinearKernel, kernels/mixed_precision/__init__.py@v0.9.1:22-28).

What Marlin does at large M. marlin_mm splits M into problems of at most 64 rows (max_thread_m_blocks = 4
blocks of 16) and runs up to max_par = 16 of them a launch (128 where N <= 4096), looping over the rest
(csrc/quantization/gptq_marlin/gptq_marlin.cu@v0.9.1:537-551, 631-633); above 16 rows it takes
large_batch_thread_configs, first {thread_k 64, thread_n 256, 256 threads} (L135-141, 412-414), one block an
SM (determine_exec_config returns blocks_per_sm 1, L449). So a 2,048-token prefill chunk is 32 problems of
64 rows, each a 64 x 256 output tile per block that dequantises its int4 weight tile again: the same tile
as Marlin's original large-batch configuration. The figure below timed that original kernel as it stood on
2024-01-24 (IST-DASLab/marlin b930c72 or earlier; marlin/marlin_cuda_kernel.cu@e7a312a L756: one 64-row problem a
launch, no ``par``), two days before 0f102e1 / bd81537 ('Improved partitioning for larger gemms', 2024-01-26)
added ``par`` / ``max_par``, which vLLM's marlin_mm keeps (above). Its author says that 'for batchsizes > 64, it
will just run the batch 64 kernel repeatedly' (IST-DASLab/marlin issue 2, 2024-01-18, answering A100
measurements in which fp16 x fp16 and ExLlamaV2 outperform Marlin at long sequences). Its throughput therefore
stops growing with M at the 64-row problem's rate, below a cuBLAS GEMM's. Direction of the bias: the timed kernel
lacks ``par`` and the only Ada figure, from a kernel with it, is 0.82x torch fp16 against the A100's 0.60x, so the
Ampere constant more likely runs low (a slower GEMM) than high for vLLM's kernel; vllm#20469 at +5.8% is one row.

Later releases keep it: 0.23.0 converts the same way (awq_marlin.py@v0.23.0:251-270, skipped only under
VLLM_BATCH_INVARIANT), calls ops.marlin_gemm from apply_awq_marlin_linear (utils/marlin_utils.py@v0.23.0:601-641)
and cuts M into the same 64-row problems with the same first large-batch tile
(csrc/quantization/marlin/marlin.cu@v0.23.0:136-141, 416-421).

Not modelled: Hopper (0.9.1 runs awq_marlin there too, but the ceiling below is an Ampere figure; GPTQ goes to Machete);
int4 MoE experts, which vLLM runs through a different kernel (fused_marlin_moe / MoeWNA16, awq_marlin.py@v0.9.1:141-150,
its own tiling; no large-M figure found), so a MoE model keeps the 16-bit fraction (runs_marlin's ``moe``); group sizes
Marlin refuses (MARLIN_GROUP_SIZES), which stay on a non-Marlin kernel; other engines (SGLang's AWQ path is H5's;
TensorRT-LLM has its own int4 kernels), the sustained clock of a 300 W PCIe A100 (its dense peak is the SXM part's on
paper: catalog a100-pcie-80gb).
"""

from __future__ import annotations

from gpuplan.core.hardware import Accelerator
from gpuplan.core.serving import fp8_marlin as FM
from gpuplan.core.serving.releases import EngineRelease
from gpuplan.core.serving.setup import OTHER_ENGINES, Efficiency, ServingSetup

MARLIN_PLATEAU_TFLOPS = 141.4
"""TFLOP/s Marlin's int4 x fp16 GEMM holds from batch 64 to 4,000 rows: vllm PR 2497 (the Marlin
integration, comment by resorcap, 2024-01-24), IST-DASLab/marlin bench.py on the four Llama-13B linears (its
MODELS['Llama13B']: 5120 x 15360, 5120 x 5120, 5120 x 27136, 13568 x 5120, 313.3 M weights; hidden 5120 as in
Qwen3-14B, the validated row's model), group 128, with the batch list edited up to 4,000:
'batch=0064 ... TFLOP/s=139.662', 'batch=0128 ... 140.903', 'batch=0256 ... 141.424', 'batch=1024 ...
141.152', 'batch=2048 ... 141.425, ... speedup=0.60', 'batch=4000 ... 141.124, ... speedup=0.61'. Those shapes
reproduce the printed figures (1,154 GB/s at batch 1, printed 1,158.6; 141.47 TFLOP/s at 2,048; 141.11 at 4,000).
The kernel timed is IST-DASLab/marlin b930c72 or earlier (e7a312a's marlin_cuda_kernel.cu: no ``par``), not
vLLM's, which runs ``par`` 64-row problems a launch (see the module docstring: the figure likely runs low). The
comment does not name the GPU; its 0.60 speedup puts torch's fp16 GEMM on the same shapes at 141.4 / 0.60 = 236
TFLOP/s, 75% of the A100's peak, which only an A100-class part reaches. Not fitted: no validation row is used."""
AMPERE_FP16_PEAK_TFLOPS = 312.0
"""The A100's dense fp16 / bf16 tensor-core peak (NVIDIA A100 datasheet; catalog a100-sxm / a100-pcie-80gb)."""
MARLIN_LARGE_M_FRACTION = MARLIN_PLATEAU_TFLOPS / AMPERE_FP16_PEAK_TFLOPS
"""Marlin's compute ceiling on an A100 as a share of the dense fp16 peak: 141.4 / 312 = 0.453 (0.80 for a
16-bit GEMM, setup.Efficiency.compute)."""
DEFAULT_COMPUTE = Efficiency().compute[0]
"""The expected 16-bit GEMM fraction the Marlin fraction stands in for (setup.Efficiency.compute, 0.80)."""
ADA_MARLIN_TO_FP16 = 0.82
"""Marlin's large-M rate over torch's fp16 GEMM on Ada: IST-DASLab/marlin#21 (RTX 6000 Ada, April 2024, a kernel
with ``par``, 16 x 1,024 tokens: 0.82x fp16; docs/inference.md 5k). Not fitted: no Ada int4 row is validated."""
MARLIN_TO_16BIT = {"ampere": MARLIN_LARGE_M_FRACTION / DEFAULT_COMPUTE, "ada": ADA_MARLIN_TO_FP16}
"""Marlin's large-M GEMM fraction over the 16-bit GEMM fraction, per architecture. Ampere (sm80 / sm86 / sm87):
141.4 / 312 / 0.80 = 0.567, from the A100 figure above (vllm PR 2497). Ada (sm89): 0.82, IST-DASLab/marlin#21 (the
better source there: Ada, and a kernel with ``par`` as vLLM's), taken against the 16-bit fraction as the bench
took it against torch's fp16 GEMM."""
ADA_COMPUTE_CAPABILITY = (8, 9)
"""Ada Lovelace's compute capability (CUDA C Programming Guide, compute capabilities table); other 8.x are Ampere."""
MARLIN_GROUP_SIZES = (None, -1, 32, 64, 128)
"""Group sizes Marlin takes (None / -1 = one group a channel): MARLIN_SUPPORTED_GROUP_SIZES = [-1, 32, 64, 128]
(quantization/utils/marlin_utils.py@v0.9.1:25, @v0.23.0:31); _check_marlin_supported returns False for any other
(L89-91), so is_awq_marlin_compatible is False and the checkpoint runs a non-Marlin kernel."""
VLLM_MARLIN_SINCE = (0, 5, 3)
"""The first vLLM release that converts AWQ checkpoints to awq_marlin: vllm PR 6612 ('Add AWQ support to the
Marlin kernel', July 2024), run on the vllm/vllm-openai:v0.5.3.post1 image in its own thread; awq_marlin.py is in
the 0.7.2 and 0.9.1 wheels (read). GPTQ's conversion (PR 3922) is older; the later of the two is taken."""
MARLIN_FORMATS = ("int4",)
"""gpuplan weight formats served through Marlin by vLLM on sm8x: group-wise int4 (AWQ, GPTQ; weights.WeightFormat
names them 'int4' or 'int4-g<group>')."""


FP8_MARLIN_FORMAT = FM.FORMAT_NAME
"""The weight-only FP8 format vLLM (0.5.1+) and SGLang (0.5.1+) run through Marlin on sm80-sm88 (fp8_marlin.py's
FORMAT_NAME, given only where the release has the path): its fp8_marlin.cu / gptq_marlin_gemm(float8_e4m3fn) is this
kernel family, 64-row problems and the same large-batch tiles, so the int4 ceiling above is taken for it too. An
assumption: the figure was timed on int4 weights; an 8-bit tile loads twice the weight bytes and dequantises with
fewer operations a weight (4 fp8 a 32-bit word, bit shifts: fp8_marlin.cu dequant_8bit), and no large-M figure of
the FP8 kernel was found (vllm PR 5975 shows end-to-end latency plots only). Not fitted: no row is validated."""


def runs_marlin(release: EngineRelease, fabric: Accelerator | None, fmt_name: str, moe: bool = False) -> bool:
    """Whether ``release`` runs a ``fmt_name`` model's linears through Marlin on ``fabric``: vLLM from
    VLLM_MARLIN_SINCE, a group-wise int4 format whose group size is in MARLIN_GROUP_SIZES ('int4' = one group a
    channel, 'int4-g<group>') on compute capability 8.x (Ampere, Ada), or FP8_MARLIN_FORMAT under an engine with
    the path on a part that takes it (fp8_marlin.ENGINES, fp8_marlin.needs_marlin: sm80-sm88), a dense model
    (``moe`` False: vLLM's int4 and fp8 experts run fused_marlin_moe, for which no large-M figure was found).
    False where the part's compute capability is not stated."""
    if FM.is_marlin_format(fmt_name):  # ' (attention bf16)' kept by a checkpoint's ignore list
        return release.engine in FM.ENGINES and not moe and fabric is not None and FM.needs_marlin(fabric)
    if release.engine != "vllm" or release.version < VLLM_MARLIN_SINCE or moe:
        return False
    base, _, group = fmt_name.partition("-g")
    if base not in MARLIN_FORMATS or (int(group) if group.lstrip("-").isdigit() else None) not in MARLIN_GROUP_SIZES:
        return False
    cc = fabric.compute_capability if fabric is not None else None
    return cc is not None and cc[0] == 8


def marlin_arch(fabric: Accelerator) -> str:
    """The MARLIN_TO_16BIT row of an sm8x ``fabric``: 'ada' (sm89), else 'ampere'."""
    return "ada" if tuple(fabric.compute_capability) == ADA_COMPUTE_CAPABILITY else "ampere"


def marlin_ratio(fabric: Accelerator) -> float:
    """Marlin's large-M GEMM fraction over the 16-bit one on an sm8x ``fabric`` (MARLIN_TO_16BIT): 0.82 on Ada
    (sm89), 0.567 on Ampere."""
    return MARLIN_TO_16BIT[marlin_arch(fabric)]


def gemm_fraction(setup: ServingSetup, fabric: Accelerator | None, fraction: float, moe: bool = False) -> float:
    """The GEMM compute fraction a step of ``setup`` reaches on ``fabric``, given the 16-bit GEMM's ``fraction`` at
    this end of the range: where runs_marlin for the setup's release, weight format and ``moe`` (a model with
    routed experts), marlin_ratio(fabric) x fraction: on Ampere 0.453 at the expected end, 0.34 / 0.51 at the low /
    high end; on Ada 0.82 x the 16-bit fraction. A user's --compute-efficiency, which rescales the 16-bit range,
    rescales Marlin's by the same factor. Else ``fraction``. Setups on the prior for engines outside vLLM, SGLang
    and TensorRT-LLM (setup.OTHER_ENGINES: llama.cpp, MLC, ExLlama, which carry a default vLLM Runtime) keep
    ``fraction``: they run their own kernels. The weight-streaming bound is untouched: at a few rows Marlin is
    memory-bound (the same bench: 1,158.6 GB/s at batch 1 to 16), which roofline's max(weights, FLOPs) keeps."""
    if setup.efficiency == OTHER_ENGINES or not runs_marlin(setup.runtime.release, fabric, setup.fmt.name, moe):
        return fraction
    return marlin_ratio(fabric) * fraction
