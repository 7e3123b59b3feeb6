"""How the sizing's lines write a configuration and a TTFT (jobs/inference/sizing.py): placements, milliseconds,
the terms a p99 TTFT adds, how the searches try TP and how a replica across a GB200 / GB300 NVL72's compute trays is
launched. Units: seconds in, text out."""

from __future__ import annotations

from gpuplan.core.hardware import Accelerator
from gpuplan.core.serving.load import queue_wait
from gpuplan.core.units import format_usd, plural
from gpuplan.report.model import Line

POOL_SEARCH = ("every catalog GPU type and TP in {1, 2, 4, 8} per pool, 16 too inside an NVLink domain of 16 or "
               "more (GB200 / GB300 NVL72), one scale-up domain per instance")
"""How the disaggregated pools are searched (the formula of their lines; serving.search_tps)."""

TP_SEARCH = ("every catalog GPU type and TP in {1, 2, 4, 8}, 16 too inside an NVLink domain of 16 or more (GB200 / "
             "GB300 NVL72: a replica may span compute trays), one scale-up domain per replica")
"""How the colocated sizing and the plain search try TP (serving.search_tps)."""

LAUNCH_ACROSS_HOSTS = {
    # vllm-project/recipes src/lib/command-synthesis.js@8959cf6:1074-1077 (multi_node_tp: the mp backend, one command
    # a node, --headless past rank 0); a Ray cluster (--distributed-executor-backend ray) is the older way
    "vllm": "vllm serve --tensor-parallel-size {tp} --nnodes {hosts} --node-rank R --master-addr HEAD on each tray, "
            "--headless where R > 0",
    # sgl-project/sgl-cookbook src/components/autoregressive/Ling25ConfigGenerator/index.js@7b5bd9c:11,50-76 (GB200
    # tp 8 on 2 nodes)
    "sglang": "sglang.launch_server --tp-size {tp} --nnodes {hosts} --node-rank R --dist-init-addr HEAD:PORT on each tray",
    # NVIDIA/TensorRT-LLM docs/source/commands/trtllm-serve/trtllm-serve.rst, 'Multi-node Serving with Slurm'
    "trtllm": "srun --ntasks {tp} --ntasks-per-node {per_host} --mpi=pmix trtllm-llmapi-launch trtllm-serve --tp_size {tp}",
}
"""How each engine starts one TP group over several hosts (a GB200 / GB300 NVL72's compute trays), as its own
recipes and docs launch it."""

KERNEL_ACROSS_HOSTS = {
    "vllm": "vLLM's own all-reduce kernel is off past one host ('spans across nodes': custom_all_reduce.py@00d618aa:90-96, "
            "a shared-memory probe) and at tp 16 (world sizes 2 / 4 / 6 / 8): its all-reduces are timed as NCCL's over "
            "the NVLink domain (core.serving.tp_span.own_kernel_off)",
    "sglang": "SGLang's own all-reduce kernel (vLLM's, copied) is off past one host and at tp 16: its all-reduces are "
              "timed as NCCL's over the NVLink domain (core.serving.tp_span.own_kernel_off)",
    "trtllm": "TensorRT-LLM's all-reduce keeps its own rule inside the NVLink domain (kernels.custom_allreduce_bytes_of)",
}
"""How a TP group across hosts is timed, by engine (the formula of the multi-node line)."""


def multi_node_launch(engine: str, tp: int, gpu: Accelerator, per_host: int) -> tuple[str, str] | None:
    """(text, formula) of the one line a replica of ``tp`` GPUs on ``gpu`` needs when it spans hosts of ``per_host``
    GPUs inside one NVLink domain (serving.tp_reach): the engine's multi-node launch, and how its all-reduces are
    timed; None within a host."""
    if tp <= per_host:
        return None
    hosts = -(-tp // per_host)
    launch = LAUNCH_ACROSS_HOSTS[engine].format(tp=tp, hosts=hosts, per_host=per_host)
    return (f"tp {tp} spans {hosts} compute trays of {per_host} (one NVLink domain of {gpu.scale_up_ranks}): "
            f"a multi-node launch per replica, {launch}", KERNEL_ACROSS_HOSTS[engine])


def launch_line(key: str, engine: str, gpu: Accelerator, tp: int) -> tuple[Line, ...]:
    """The answer's one 'launch across trays' line where a TP group of ``tp`` on ``gpu`` spans hosts of its NVLink
    domain (multi_node_launch; hosts of serving.host_gpus), else none."""
    from gpuplan.jobs.inference.serving import host_gpus

    said = multi_node_launch(engine, tp, gpu, host_gpus(gpu))
    return (Line(key, "launch across trays", None, text=said[0], formula=said[1]),) if said else ()


def placement(count: int, tp: int, gpu: Accelerator, gpus: int) -> str:
    """'2 x (tp 4 on NVIDIA H100 80GB SXM5) = 8 GPUs': replicas or instances of one TP group."""
    return f"{count} x (tp {tp} on {gpu.name}) = {plural(gpus, 'GPU')}"


def ms_text(seconds: float) -> str:
    return f"{seconds * 1e3:,.0f} ms"


def ttft_terms(hold_s: float, prefill_s: float, rho: float, transfer_s: float = 0.0) -> str:
    """Every term a p99 TTFT adds (load.first_token_seconds), each in ms: 'server hold 2.0 ms + prefill 45.3 ms
    + M/M/1 queueing wait p99 111.3 ms' (+ the KV transfer where there is one); the terms sum to the number."""
    terms = [("server hold", hold_s), ("prefill", prefill_s), ("M/M/1 queueing wait p99", queue_wait(prefill_s, rho)[1])]
    if transfer_s:
        terms.append(("KV transfer", transfer_s))
    return " + ".join(f"{name} {seconds * 1e3:,.1f} ms" for name, seconds in terms)


def disagg_gpu_lines(asked_gpu: str | None, pools: tuple, cheapest: tuple) -> tuple:
    """With a GPU asked: the cheapest pools on any type when they are not the answer, or a line
    saying that none on the GPU asked meets the target (the answer is then on another type)."""
    if asked_gpu is None:
        return ()
    if pools[0].gpu.id != asked_gpu:
        return (Line("disagg_other_gpu", f"none on {asked_gpu} meets the target", None,
                     text=f"pools below on {pools[0].gpu.name}, the cheapest GPU type that does",
                     formula=POOL_SEARCH),)
    if pools is cheapest:
        return ()
    prefill, decode = cheapest
    hourly = [p.cost_per_hour for p in cheapest]
    text = (f"prefill {prefill.instances} x (tp {prefill.tp}) + decode {decode.instances} x (tp {decode.tp}) on "
            f"{prefill.gpu.name} = {plural(prefill.gpus + decode.gpus, 'GPU')}"
            + ("" if None in hourly else f", {format_usd(sum(hourly), 2)}/h"))
    return (Line("disagg_any_gpu", "cheapest on any GPU type", None, text=text,
                 formula=POOL_SEARCH),)
