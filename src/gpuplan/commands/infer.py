"""``gpuplan infer``: serving memory, capacity, latency, throughput and cost (issue #6).

Imports only typer at module import; the work happens inside the command (fast CLI start)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

Opt = Optional[str]


def register(app: typer.Typer) -> None:
    """Add ``infer`` to ``app``."""

    @app.command()
    def infer(
        target: Annotated[Opt, typer.Argument(help="A plan file (.yaml/.toml) or a model name / config.json.")] = None,
        model: Annotated[Opt, typer.Option(help="Catalog name, config.json or folder holding one.")] = None,
        params: Annotated[Opt, typer.Option(help="Bare parameter count, e.g. 7B (default when no model).")] = None,
        gpu: Annotated[Opt, typer.Option(help="Accelerator (see `gpuplan catalog gpus`). Default a100.")] = None,
        gpus: Annotated[Opt, typer.Option(help="GPU count = tp x pp (sets tp when tp is not given).")] = None,
        tp: Annotated[Opt, typer.Option(help="Tensor-parallel degree. Default 1.")] = None,
        pp: Annotated[Opt, typer.Option(help="Pipeline-parallel degree. Default 1.")] = None,
        context: Annotated[Opt, typer.Option(help="Tokens per sequence, prompt + output (e.g. 32K). "
                                                  "Default min(4096, model maximum).")] = None,
        output_tokens: Annotated[Opt, typer.Option(help="Generated tokens per sequence. Default min(256, context/2).")] = None,
        batch: Annotated[Opt, typer.Option(help="Concurrent sequences. Default 1.")] = None,
        concurrency: Annotated[Opt, typer.Option(help="Same as --batch.")] = None,
        quantization: Annotated[Opt, typer.Option(help="auto, fp32, bf16, fp16, fp8, int8, int4. "
                                                       "auto = the model's quantization_config or dtype.")] = None,
        group_size: Annotated[Opt, typer.Option(help="int4 group size (scale + zero per group). Default 128; -1 = per channel.")] = None,
        kv_dtype: Annotated[Opt, typer.Option(help="KV-cache dtype: auto, bf16, fp16, fp8, fp32.")] = None,
        gpu_memory_utilization: Annotated[Opt, typer.Option(help="vLLM-style share of GPU memory to use. Default 0.9.")] = None,
        block_size: Annotated[Opt, typer.Option(help="KV block size in tokens. Default 16.")] = None,
        prefill_tokens: Annotated[Opt, typer.Option(help="Tokens per prefill step (max_num_batched_tokens). Default 8192.")] = None,
        max_num_seqs: Annotated[Opt, typer.Option(help="Max sequences per step (sampler profile). Default 256.")] = None,
        cuda_graph_gib: Annotated[Opt, typer.Option(help="CUDA-graph memory, GiB (0 = eager). Default 0.5.")] = None,
        runtime_gib: Annotated[Opt, typer.Option(help="CUDA context + cuBLAS, GiB. Default 0.35.")] = None,
        comm_buffer_gib: Annotated[Opt, typer.Option(help="Communication buffers when tp·pp > 1, GiB. Default 0.25.")] = None,
        driver_reserved_gib: Annotated[Opt, typer.Option(help="Memory not visible to CUDA, GiB. Default 0.5.")] = None,
        bandwidth_efficiency: Annotated[Opt, typer.Option(help="Decode HBM-bandwidth efficiency. Default 0.65.")] = None,
        compute_efficiency: Annotated[Opt, typer.Option(help="Prefill compute efficiency (MFU). Default 0.5.")] = None,
        allreduce_latency_us: Annotated[Opt, typer.Option(help="All-reduce latency over NVLink, us (x3 on PCIe). "
                                                               "Default 8.")] = None,
        price_per_gpu_hour: Annotated[Opt, typer.Option(help="USD per GPU-hour (default: the price catalog).")] = None,
        search: Annotated[Opt, typer.Option(help="Search catalog GPUs x TP for configurations (true/false).")] = None,
        fmt: Annotated[Opt, typer.Option("--format", "-f", help="table, json or markdown")] = None,
        as_json: Annotated[bool, typer.Option("--json", help="Same as --format json.")] = False,
    ) -> None:
        """Serving memory (weights by format, KV cache, runtime), capacity (sequences at a context,
        context at a batch), TTFT / time per output token / throughput vs batch, cost per million
        tokens, and the smallest and cheapest catalog configuration. No arguments: the article's
        7B in FP16 (14 GB of weights plus KV cache -> a GPU of at least 24 GB)."""
        from gpuplan.adapters.plan_file import plan_and_flags
        from gpuplan.commands.options import emit, parse_format
        from gpuplan.jobs.inference.estimate import estimate_inference
        from gpuplan.jobs.inference.inputs import (
            INFER_FIELDS,
            inference_inputs_from_raw,
        )

        raw = plan_and_flags(target, {k: v for k, v in locals().items() if k in INFER_FIELDS}, INFER_FIELDS)
        emit(estimate_inference(inference_inputs_from_raw(raw)), parse_format(fmt), as_json)
