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
as Marlin's original large-batch configuration (IST-DASLab/marlin marlin/marlin_cuda_kernel.cu@0f102e11,
marlin_cuda: thread_k 64 / thread_n 256 above 16 rows, 256 threads, par problems of 64 rows, one block an SM),
the kernel the figure below timed, whose author says that 'for batchsizes > 64, it will just
run the batch 64 kernel repeatedly' (IST-DASLab/marlin issue 2, 2024-01-18, answering A100 measurements in
which fp16 x fp16 and ExLlamaV2 outperform Marlin at long sequences). Its throughput therefore stops
growing with M at the 64-row problem's rate, below a cuBLAS GEMM's.

Later releases keep it: 0.23.0 converts the same way (awq_marlin.py@v0.23.0:251-270, skipped only under
VLLM_BATCH_INVARIANT), calls ops.marlin_gemm from apply_awq_marlin_linear (utils/marlin_utils.py@v0.23.0:601-641)
and cuts M into the same 64-row problems with the same first large-batch tile
(csrc/quantization/marlin/marlin.cu@v0.23.0:136-141, 416-421).

Not modelled: Hopper (0.9.1 runs awq_marlin there too, but the ceiling below is an Ampere figure; GPTQ goes to
Machete), other engines (SGLang's AWQ path is H5's; TensorRT-LLM has its own int4 kernels), the sustained
clock of a 300 W PCIe A100 (its dense peak is the SXM part's on paper: catalog a100-pcie-80gb).
"""

from __future__ import annotations

from gpuplan.core.hardware import Accelerator
from gpuplan.core.serving.releases import EngineRelease
from gpuplan.core.serving.setup import OTHER_ENGINES, Efficiency, ServingSetup

MARLIN_PLATEAU_TFLOPS = 141.4
"""TFLOP/s Marlin's int4 x fp16 GEMM holds from batch 64 to 4,000 rows: vllm PR 2497 (the Marlin
integration, comment by resorcap, 2024-01-24), IST-DASLab/marlin bench.py (its 'ideal' shape, group 128):
'batch=0064 ... TFLOP/s=139.662', 'batch=0128 ... 140.903', 'batch=0256 ... 141.424', 'batch=1024 ...
141.152', 'batch=2048 ... 141.425, ... speedup=0.60', 'batch=4000 ... 141.124, ... speedup=0.61'. The comment
does not name the GPU; it is an A100: bench.py@0f102e11 sizes its 'ideal' shape (4 x 256 x SMS, 256 x SMS) from an
SM count it sets only for device names with 'A100', 'A10', '3090' or 'A6000' (SMS = -1 otherwise, a negative
shape), and batch 1 streams 1,158.6 GB/s, more than an A10, RTX 3090 or RTX A6000 can read (600-936 GB/s). Its
0.60 speedup puts torch's fp16 GEMM there at 141.4 / 0.60 = 236 TFLOP/s, 75% of the A100's peak. Not fitted: no
validation row is used."""
AMPERE_FP16_PEAK_TFLOPS = 312.0
"""The A100's dense fp16 / bf16 tensor-core peak (NVIDIA A100 datasheet; catalog a100-sxm / a100-pcie-80gb)."""
MARLIN_LARGE_M_FRACTION = MARLIN_PLATEAU_TFLOPS / AMPERE_FP16_PEAK_TFLOPS
"""Marlin's compute ceiling as a share of the dense fp16 peak: 141.4 / 312 = 0.453 (0.80 for a 16-bit GEMM,
setup.Efficiency.compute). Taken for every sm8x part (the figure is an A100's; the kernel's tile is the same
on Ada)."""
DEFAULT_COMPUTE = Efficiency().compute[0]
"""The expected 16-bit GEMM fraction the Marlin fraction stands in for (setup.Efficiency.compute, 0.80)."""
VLLM_MARLIN_SINCE = (0, 5, 3)
"""The first vLLM release that converts AWQ checkpoints to awq_marlin: vllm PR 6612 ('Add AWQ support to the
Marlin kernel', July 2024), run on the vllm/vllm-openai:v0.5.3.post1 image in its own thread; awq_marlin.py is in
the 0.7.2 and 0.9.1 wheels (read). GPTQ's conversion (PR 3922) is older; the later of the two is taken."""
MARLIN_FORMATS = ("int4",)
"""gpuplan weight formats served through Marlin by vLLM on sm8x: group-wise int4 (AWQ, GPTQ; weights.WeightFormat
names them 'int4' or 'int4-g<group>')."""


def runs_marlin(release: EngineRelease, fabric: Accelerator | None, fmt_name: str) -> bool:
    """Whether ``release`` runs a ``fmt_name`` model's linears through Marlin on ``fabric``: vLLM from
    VLLM_MARLIN_SINCE, a group-wise int4 format, compute capability 8.x (Ampere, Ada). False where the part's
    compute capability is not stated."""
    if release.engine != "vllm" or release.version < VLLM_MARLIN_SINCE:
        return False
    if fmt_name.split("-")[0] not in MARLIN_FORMATS:
        return False
    cc = fabric.compute_capability if fabric is not None else None
    return cc is not None and cc[0] == 8


def gemm_fraction(setup: ServingSetup, fabric: Accelerator | None, fraction: float) -> float:
    """The GEMM compute fraction a step of ``setup`` reaches on ``fabric``, given the 16-bit GEMM's ``fraction`` at
    this end of the range: where runs_marlin for the setup's release and weight format, MARLIN_LARGE_M_FRACTION x
    fraction / DEFAULT_COMPUTE (0.80, setup.Efficiency's expected 16-bit fraction): 0.453 at the expected end,
    0.34 / 0.51 at the low / high end, and a user's --compute-efficiency, which rescales the 16-bit range, rescales
    Marlin's by the same factor. Else ``fraction``. Setups on the prior for engines outside vLLM, SGLang and
    TensorRT-LLM (setup.OTHER_ENGINES: llama.cpp, MLC, ExLlama, which carry a default vLLM Runtime) keep
    ``fraction``: they run their own kernels. The weight-streaming bound is untouched: at a few rows Marlin is
    memory-bound (the same bench: 1,158.6 GB/s at batch 1 to 16), which roofline's max(weights, FLOPs) keeps."""
    if setup.efficiency == OTHER_ENGINES or not runs_marlin(setup.runtime.release, fabric, setup.fmt.name):
        return fraction
    return MARLIN_LARGE_M_FRACTION * fraction / DEFAULT_COMPUTE
