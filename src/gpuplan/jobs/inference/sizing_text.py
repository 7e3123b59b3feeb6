"""How the sizing's lines write a configuration and a TTFT (jobs/inference/sizing.py): placements, milliseconds,
the terms a p99 TTFT adds, how the searches try TP and how a replica across a GB200 / GB300 NVL72's compute trays is
launched. Units: seconds in, text out."""

from __future__ import annotations

from dataclasses import replace

from gpuplan.core.hardware import Accelerator
from gpuplan.core.serving.releases import EngineRelease
from gpuplan.core.serving.tp_span import host_gpus, mnnvl_fused_max_bytes
from gpuplan.core.serving.load import queue_wait
from gpuplan.core.units import format_usd, plural
from gpuplan.report.model import Line, Table

POOL_SEARCH = ("every catalog GPU type and TP in {1, 2, 4, 8} per pool, 16 too inside an NVLink domain of 16 or "
               "more (GB200 / GB300 NVL72), one scale-up domain per instance")
"""How the disaggregated pools are searched (the formula of their lines; serving.search_tps)."""

TP_SEARCH = ("every catalog GPU type and TP in {1, 2, 4, 8}, 16 too inside an NVLink domain of 16 or more (GB200 / "
             "GB300 NVL72: a replica may span compute trays), one scale-up domain per replica")
"""How the colocated sizing and the plain search try TP (serving.search_tps)."""

VLLM_MP_MULTI_NODE_SINCE = (0, 11, 1)
"""The first vLLM release with --nnodes / --node-rank / --master-addr (vLLM PR #23691, 'Support MP Executor for multi
node'): engine/arg_utils.py@v0.11.1:757-760 has them, @v0.11.0 has none (nor @v0.10.2); --headless serves a worker
tray (entrypoints/cli/serve.py@v0.11.1:53-54). Before it a TP group across hosts ran on a Ray cluster."""
VLLM_EXECUTOR_BACKEND_SINCE = (0, 6, 0)
"""--distributed-executor-backend ray read from vLLM 0.6.0 (engine/arg_utils.py@v0.6.0:289, '--worker-use-ray' kept as
its deprecated alias, :296-298); 0.3.0 and 0.4.0 have only --worker-use-ray (arg_utils.py@v0.3.0:140, @v0.4.0:167),
so older releases are told that flag."""
SGLANG_DIST_INIT_SINCE = (0, 3, 3)
"""SGLang's --dist-init-addr (srt/server_args.py@v0.3.3:415, and @v0.5.6:2765); 0.3.0-0.3.2 call it --nccl-init-addr
(server_args.py@v0.3.0:375, @v0.3.2:429), kept as an alias after. --nnodes / --node-rank in every release read
(@v0.3.0:380-382)."""
TRTLLM_SERVE_LAUNCH_SINCE = (1, 0, 0)
"""The first TensorRT-LLM release this launch is read for: srun ... trtllm-llmapi-launch trtllm-serve --tp_size
(NVIDIA/TensorRT-LLM docs/source/commands/trtllm-serve/trtllm-serve.rst@0434755f, 'Multi-node Serving with Slurm';
trtllm-llmapi-launch documented for trtllm-serve in PR #5220, merged 2025-06-30, before 1.0.0). Where each appeared
first was not read (trtllm-serve is in the 0.18.2 docs, commands/trtllm-serve.html, with --tp_size / --pp_size): older
releases are told the generic MPI launch."""


def launch_command(release: EngineRelease, tp: int, pp: int, hosts: int, per_host: int) -> str:
    """How ``release`` starts one replica of tp x pp GPUs over ``hosts`` hosts of ``per_host`` (a GB200 / GB300 NVL72's
    compute trays), as its release's flags allow (the *_SINCE constants above)."""
    engine, version = release.engine, release.version
    if engine == "vllm":
        sizes = f"--tensor-parallel-size {tp}" + (f" --pipeline-parallel-size {pp}" if pp > 1 else "")
        if version >= VLLM_MP_MULTI_NODE_SINCE:
            # vllm-project/recipes src/lib/command-synthesis.js@8959cf6:1090-1098 (multi-node TP over the mp backend,
            # one command a node, --headless past rank 0)
            return f"vllm serve {sizes} --nnodes {hosts} --node-rank R --master-addr HEAD on each tray, --headless where R > 0"
        ray = ("--distributed-executor-backend ray" if version >= VLLM_EXECUTOR_BACKEND_SINCE else "--worker-use-ray")
        server = "vllm serve" if version >= VLLM_EXECUTOR_BACKEND_SINCE else "python -m vllm.entrypoints.openai.api_server"
        return (f"a Ray cluster over the {hosts} trays (ray start --head on one, ray start --address HEAD:6379 on the "
                f"others), then {server} {sizes} {ray} on the head (no --nnodes before vllm==0.11.1)")
    if engine == "sglang":
        # sgl-project/sgl-cookbook src/components/autoregressive/Ling25ConfigGenerator/index.js@7b5bd9c:11,50-76
        # (GB200 tp 8 on 2 nodes)
        init = "--dist-init-addr" if version >= SGLANG_DIST_INIT_SINCE else "--nccl-init-addr"
        # --pp-size: srt/server_args.py@v0.4.6.post2:656, @v0.5.6:2417. An older release with pp > 1 never gets here:
        # InferenceInputs refuses it (inputs_releases.check_pipeline, SGLANG_PP_SINCE), and the searches try pp 1 only.
        stages = f" --pp-size {pp}" if pp > 1 else ""
        return (f"python -m sglang.launch_server --tp-size {tp}{stages} --nnodes {hosts} --node-rank R {init} "
                "HEAD:PORT on each tray")
    ranks = tp * pp
    if version >= TRTLLM_SERVE_LAUNCH_SINCE:
        return (f"srun --ntasks {ranks} --ntasks-per-node {per_host} --mpi=pmix trtllm-llmapi-launch trtllm-serve "
                f"--tp_size {tp}" + (f" --pp_size {pp}" if pp > 1 else ""))
    return (f"one MPI world of {ranks} ranks over the {hosts} trays (mpirun or srun --mpi=pmix, one rank a GPU) running "
            f"this release's server at tp {tp} x pp {pp} (trtllm-serve / trtllm-llmapi-launch read from trtllm==1.0)")


def kernel_across_hosts(release: EngineRelease, tp: int, pp: int, gpu: Accelerator, per_host: int) -> str:
    """How a TP group of ``tp`` across hosts of ``per_host`` is timed for ``release`` (the formula of the launch line)."""
    if tp <= per_host:
        return (f"each TP group of {tp} stays in one tray (the engine's own all-reduce kernel as on one host, "
                "core.serving.tp_span.own_kernel_off); only the pipeline stages' hand-offs cross trays")
    if release.engine == "trtllm":
        return "TensorRT-LLM's all-reduce keeps its own rule inside the NVLink domain (kernels.custom_allreduce_bytes_of)"
    if release.engine == "sglang":
        return ("SGLang's own all-reduce kernel (vLLM's, copied) is off past one host and at tp 16, and its FlashInfer "
                "fusion is on only where nnodes == 1 (server_args.py@v0.5.6:1028-1031, 1087-1089): its all-reduces "
                "are timed as NCCL's over the NVLink domain (core.serving.tp_span.own_kernel_off)")
    fused = mnnvl_fused_max_bytes(release, tp, gpu, pp)
    if fused is not None:
        return (f"vLLM >= 0.19 runs each all-reduce + RMSNorm across trays as FlashInfer's fused kernel over MNNVL "
                f"(flashinfer_all_reduce.py@v0.19.0:92-112, vLLM PR #38136) up to {fused / 2**20:g} MiB at tp {tp} "
                "(allreduce_rms_fusion.py@v0.19.0:54-70), timed as the own one-shot kernel on the same NVLink "
                "fabric, NCCL above it (core.serving.tp_span.mnnvl_fused_max_bytes)")
    return ("vLLM's own all-reduce kernel is off past one host ('spans across nodes': custom_all_reduce.py@00d618aa:"
            "90-96, a shared-memory probe) and at tp 16 (world sizes 2 / 4 / 6 / 8); the fused MNNVL kernel needs "
            "vllm >= 0.19, pp 1 and tp 2 / 4 / 8: its all-reduces are timed as NCCL's over the NVLink domain "
            "(core.serving.tp_span.own_kernel_off)")


def multi_node_launch(release: EngineRelease, tp: int, gpu: Accelerator, per_host: int,
                      pp: int = 1) -> tuple[str, str] | None:
    """(text, formula) of the one line a replica of tp x ``pp`` GPUs on ``gpu`` needs when it spans hosts of
    ``per_host`` GPUs inside one NVLink domain (serving.tp_reach): ceil(tp x pp / per_host) hosts, the release's
    multi-node launch, and how its all-reduces are timed; None within a host."""
    gpus, domain = tp * pp, gpu.scale_up_ranks
    if gpus <= per_host or domain <= per_host:  # one host, or hosts that are each their own NVLink domain (HGX)
        return None
    hosts, domains = -(-gpus // per_host), -(-gpus // domain)
    layout = f"tp {tp}" + (f" x pp {pp}" if pp > 1 else "")
    within = f"one NVLink domain of {domain}" if domains == 1 else f"{domains} NVLink domains of {domain}"
    return (f"{layout} spans {hosts} compute trays of {per_host} ({within}): "
            f"a multi-node launch per replica, {launch_command(release, tp, pp, hosts, per_host)}",
            kernel_across_hosts(release, tp, pp, gpu, per_host))


LAUNCH_LABEL = "launch across trays"


def launch_line(key: str, release: EngineRelease, gpu: Accelerator, tp: int, pp: int = 1) -> tuple[Line, ...]:
    """A 'launch across trays' line where a replica of tp x ``pp`` on ``gpu`` spans hosts of its NVLink domain
    (multi_node_launch; hosts of tp_span.host_gpus), else none. Each section offers its own; launch_said_once keeps one
    an answer."""
    said = multi_node_launch(release, tp, gpu, host_gpus(gpu), pp)
    return (Line(key, LAUNCH_LABEL, None, text=said[0], formula=said[1]),) if said else ()


def launch_said_once(sections) -> tuple:
    """The answer's sections with at most one 'launch across trays' line: the first in the answer's order (the
    disaggregated pools', the sizing's, 'would fit on' or the smallest configuration's), later ones dropped; the
    launch for another tp differs only in its numbers. The one place that decides it (estimate.py calls it on every
    answer), so sizing, the disaggregated section and the alternatives each offer theirs and no answer repeats it."""
    out, said = [], False
    for section in sections:
        kept = []
        for line in section.lines:
            if line.label == LAUNCH_LABEL:
                if said:
                    continue
                said = True
            kept.append(line)
        out.append(section if len(kept) == len(section.lines) else replace(section, lines=tuple(kept)))
    return tuple(out)


def placement(count: int, tp: int, gpu: Accelerator, gpus: int) -> str:
    """'2 x (tp 4 on NVIDIA H100 80GB SXM5) = 8 GPUs': replicas or instances of one TP group."""
    return f"{count:,} x (tp {tp} on {gpu.name}) = {plural(gpus, 'GPU')}"


def rate_text(rate: float) -> str:
    """Requests a second as the answer prints them: two decimals with thousands separators, three significant
    digits below 1 ('--rps 1e-6' printed 'at 0.00 requests/s a replica'; H1 wave 20's found list; below 1 two decimals
    lost up to 10%: 'tp 4, 19 replicas, 0.05 req/s per replica' for 1 request/s, 0.0527 a replica, helper MS s24)."""
    small = f"{rate:.3g}"
    return f"{rate:,.2f}" if rate >= 1 or rate == 0 or small == "1" else small  # 0.9996 reads '1.00' as 1.0 does (R1)


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
    text = (f"prefill {prefill.instances:,} x (tp {prefill.tp}) + decode {decode.instances:,} x (tp {decode.tp}) on "
            f"{prefill.gpu.name} = {plural(prefill.gpus + decode.gpus, 'GPU')}"
            + ("" if None in hourly else f", {format_usd(sum(hourly), 2)}/h"))
    return (Line("disagg_any_gpu", "cheapest on any GPU type", None, text=text,
                 formula=POOL_SEARCH),)


def sizing_table(configs: list) -> Table:
    """The cheapest TP per GPU type that meets the target: ``configs``, sizing.size_for_target's (cheapest first)."""
    seen, rows = set(), []
    for c in configs:
        if c.gpu.id in seen:
            continue
        seen.add(c.gpu.id)
        rows.append((c.gpu.id, f"tp {c.tp}", f"{c.replicas}", f"{c.gpus}", rate_text(c.replica.rate),
                     ms_text(c.replica.ttft_p99), ms_text(c.replica.tpot),
                     "n/a" if c.cost_per_hour is None else format_usd(c.cost_per_hour, 2)))
    return Table("Configurations meeting the target (cheapest TP per GPU type)",
                 ("gpu", "tp", "replicas", "GPUs", "req/s per replica", "TTFT p99", "TPOT", "cost/h"), tuple(rows))
