"""Throughput kind of ``gpuplan validate``: predicted MFU (or hardware TFLOP/s) of published runs
with full layouts, each compared under its own source's FLOP definition.

The step model's fitted constants (GEMM d_half, attention efficiency per GPU type, elementwise
factor; core/time/step.py) were fitted on the llm-foundry BF16 rows; the Megatron-2021 and IBM FSDP
runs are held out. Reference data: catalog/reference/throughput_runs.yaml (each run cites its source).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from gpuplan.catalog import load_accelerator, load_model
from gpuplan.core.frameworks import framework
from gpuplan.core.model.spec import AttentionSpec, MLPSpec, ModelSpec, count_parameters
from gpuplan.core.time.step import StepSettings, step_time
from gpuplan.core.comm.topology import cluster_for

# Scale-out per GPU for the clusters the sources describe (Gb/s): DGX A100 Selene 8 x HDR 200 per
# node (Narayanan et al. 2021 Sec. 5); MosaicML A100 40/80GB "1600 Gbps RoCE" per 8-GPU node (llm-foundry
# README); H100 3200 Gb/s per node; IBM: "400 Gbps, GPUDirect RDMA" (PyTorch blog) per node -> 50 per GPU.
NIC_GBIT_PER_GPU = {"megatron-2021": 200.0, "llm-foundry": 200.0, "ibm-fsdp": 50.0}
NIC_GBIT_PER_GPU_H100 = 400.0
# IBM's fms-fsdp defaults to HSDP: shard within an 8-GPU node, replicate across nodes (the blog
# mentions HSDP; the run's notes in throughput_runs.yaml).
SHARD_GROUP = {"ibm-fsdp": 8}


@dataclass(frozen=True)
class ThroughputCase:
    id: str
    family: str
    quantity: str
    measured: float
    predicted: float

    @property
    def error(self) -> float:
        return (self.predicted - self.measured) / self.measured


def throughput_reference() -> dict[str, Any]:
    from gpuplan.catalog import reference_yaml

    return reference_yaml("throughput_runs.yaml")


def run_spec(model: dict[str, Any]) -> ModelSpec:
    """The run's architecture: the catalog entry (with the MTP modules the run trained, where the
    row states them: ``mtp_layers``), or a GPT-style shape (LayerNorm, biases)."""
    if model.get("catalog"):
        spec = load_model(model["catalog"])
        return replace(spec, mtp_layers=int(model["mtp_layers"])) if "mtp_layers" in model else spec
    heads, h = model["heads"], model["hidden"]
    return ModelSpec(
        name=model.get("name", "run"), hidden_size=h, num_layers=model["layers"], vocab_size=model["vocab"],
        attention=AttentionSpec(heads, model.get("kv_heads") or heads, h // heads, qkv_bias=True, out_bias=True),
        mlp=MLPSpec(model["ffn"], gated=bool(model.get("gated_mlp")), bias=True, activation="gelu"),
        tie_embeddings=True, learned_positions=model.get("learned_positions") or 0, norm="layernorm",
        rotary=False, fused_qkv=True)


def predict_step_seconds(run: dict[str, Any]) -> float:
    spec = run_spec(run["model"])
    gpu = load_accelerator(run["gpu"])
    nic = NIC_GBIT_PER_GPU_H100 if gpu.id.startswith("h100") else NIC_GBIT_PER_GPU.get(run["family"], 200.0)
    cluster = cluster_for(gpu, nic_gbit_per_gpu=nic)
    lay = run["layout"]
    dtype = "fp8" if run.get("precision") == "fp8" else "bf16"
    # the framework's data-parallel schedule sets what stays exposed (core.comm.dp_overlap), no extra cap
    # Composer FSDP mixed_precision DEFAULT reduces gradients in fp32 (PURE in the compute dtype)
    grads = 4.0 if "mixed_precision DEFAULT" in run.get("precision_detail", "") else 2.0
    # layout.sequence_parallel: the row's code (false for every row: Megatron-LM 2021, before sequence parallelism;
    # core.time.sequence_parallel), true when absent
    settings = StepSettings(seq_len=run["model"]["seq_len"], recompute=lay["recompute"], dtype=dtype, dp_overlap=1.0,
                            grad_comm_bytes=grads, sequence_parallel=bool(lay.get("sequence_parallel", True)))
    if "DeepSpeed" in run.get("framework", ""):  # the deepspeed profile's ZeRO-3 behaviour
        settings = replace(settings, **framework("deepspeed").zero3_step_settings(), dp_schedule="deepspeed")
    if run.get("framework", "").startswith("Megatron-LM"):  # the 2021 code: unfused attention
        # (megatron/model/transformer.py @fda81a2: baddbmm, FusedScaleMaskSoftmax, dropout, bmm) with
        # --attention-dropout at its 0.1 default (megatron/arguments.py; examples/sc21/CONFIG.sh sets none)
        settings = replace(settings, attention_kernel="eager", attention_dropout=0.1)
    micro_batches = lay["global_batch"] // (lay["micro_batch"] * lay["dp"])
    return step_time(spec, cluster, settings, dp=lay["dp"], tp=lay["tp"], pp=lay["pp"], vpp=lay.get("vpp") or 1,
                     cp=lay.get("cp", 1), zero=lay["zero"], micro_batch=lay["micro_batch"],
                     micro_batches=micro_batches, shard_group=SHARD_GROUP.get(run["family"])).total


def _case(run: dict[str, Any]) -> ThroughputCase | None:
    measured = run["measured"]
    model, lay = run["model"], run["layout"]
    s, L, h, V = model["seq_len"], model["layers"], model["hidden"], model["vocab"]
    seconds = predict_step_seconds(run)
    tokens_per_gpu_s = lay["global_batch"] * s / seconds / run["gpus"]
    if measured.get("mfu") is not None and measured.get("mfu_definition") in ("llm-foundry", "llm-foundry-fp8",
                                                                              "nanogpt-palm"):
        n = model.get("params") or count_parameters(run_spec(model)).total
        flops_per_token = 6 * n + 12 * L * h * s  # the sources' own formula (no causal halving)
        predicted = flops_per_token * tokens_per_gpu_s / (measured["mfu_peak_tflops"] * 1e12)
        return ThroughputCase(run["id"], run["family"], "MFU", measured["mfu"], predicted)
    if measured.get("tflops_per_gpu") and measured.get("tflops_counts_recompute"):
        # Narayanan et al. 2021 eq. 3: 96 B s l h^2 (1 + s/6h + V/16lh) FLOPs per iteration
        flops = 96 * lay["global_batch"] * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h))
        predicted = flops / seconds / run["gpus"] / 1e12
        return ThroughputCase(run["id"], run["family"], "TFLOP/s (hardware)", measured["tflops_per_gpu"], predicted)
    return None


def throughput_cases() -> list[ThroughputCase]:
    cases = [_case(run) for run in throughput_reference()["runs"]]
    return [c for c in cases if c is not None]
