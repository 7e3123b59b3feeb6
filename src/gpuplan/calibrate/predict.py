"""gpuplan's own predictions for a measured run: the yardstick every calibration factor divides by.

A measurement becomes a ModelSpec, a ParallelLayout, MemorySettings, StepSettings and an
accelerator; the step time comes from ``gpuplan.core.time.step.step_time`` and the memory from
``gpuplan.core.memory.training.peak_memory`` — the same functions ``train``, ``memory`` and ``plan`` use.

CPU trials have no catalog accelerator. They are predicted on a *CPU stand-in*: an Accelerator
whose achievable matmul rate (peak x MAMF) equals the trial's measured large-GEMM FLOP/s and
whose achievable memory bandwidth (bandwidth x HBM efficiency) equals its measured copy
bandwidth, so the step model runs unchanged on the CPU the trial used. Factors fitted on it
describe that CPU; the report says so when they are applied to a GPU plan.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpuplan.core.expert_layout import expert_layout_fields
from gpuplan.core.memory import training as M
from gpuplan.core.memory.micro_batch_fit import activation_bytes_per_sample
from gpuplan.core.time import step as S
from gpuplan.core.hardware import Accelerator
from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.parallel import ParallelLayout, check_layout, check_model_degrees
from gpuplan.planner.framework_rules import rules_for
from gpuplan.core.comm.topology import Cluster, cluster_for
from gpuplan.errors import InputError
from gpuplan.jobs.calibrated_plan import model_states_bytes

CPU_ID = "cpu"


@dataclass(frozen=True)
class Case:
    """A measurement in gpuplan's inputs."""

    spec: ModelSpec
    layout: ParallelLayout
    memory: M.MemorySettings
    step: S.StepSettings
    gpu: Accelerator | None
    """None: the step time cannot be predicted (uncatalogued GPU, CPU without microbenchmarks)."""
    node: tuple[int | None, float | None] = (None, None)
    """A log's --gpus-per-node and --nic-gbit-per-gpu (None: the catalog's), as train builds its cluster with them."""


@dataclass(frozen=True)
class StepParts:
    """Predicted seconds per optimizer step, split the way the calibration scales them."""

    compute: float
    """Matmuls, elementwise ops, LM head, pipeline bubble share and the optimizer step."""
    attention: float
    """The attention kernels (score/context) including their bubble share."""
    comm: float
    """Communication left on the critical path after overlap."""

    @property
    def total(self) -> float:
        return self.compute + self.attention + self.comm


@dataclass(frozen=True)
class MemoryParts:
    """Predicted allocated bytes on the worst GPU."""

    backward_start: float
    optimizer_step: float
    activations: float
    """Activation-like bytes at the start of backward (micro-batch x growth per sequence)."""
    states: float = 0.0
    """Weights, gradients, master weights and optimizer states at the peak (jobs.calibrated_plan.model_states_bytes):
    no allocated peak of the layout goes below them."""
    moments: float | None = None
    """A first iteration's peak (memory_parts(first_iteration=True)): the optimizer-state bytes on that GPU the first
    step creates, taken out of backward_start; None: the steady-state peak."""

    def peak(self, activation_factor: float = 1.0, overhead: float = 0.0) -> float:
        backward = self.backward_start + (activation_factor - 1.0) * self.activations
        return max(backward, self.optimizer_step) + overhead

    def at_backward(self, activation_factor: float = 1.0) -> bool:
        return self.backward_start + (activation_factor - 1.0) * self.activations >= self.optimizer_step


def cpu_accelerator(matmul_flops: float, copy_bandwidth: float, memory_bytes: float = 0.0) -> Accelerator:
    """The CPU stand-in: achievable rates equal the measured ones (see the module docstring)."""
    mamf = S.MAMF_FRACTION.get(CPU_ID, S.DEFAULT_MAMF_FRACTION)
    peak = matmul_flops / mamf
    hbm = S.StepSettings().hbm_efficiency
    return Accelerator(id=CPU_ID, name="CPU (measured stand-in)", vendor="", memory_bytes=memory_bytes,
                       memory_bandwidth=copy_bandwidth / hbm,
                       peak_flops=(("bf16", peak), ("fp32", peak), ("fp16", peak)),
                       devices_per_node=1, confidence="low",
                       sources=("trial microbenchmarks: large GEMM and memory copy on this CPU",))


def spec_of(measurement) -> ModelSpec:
    from gpuplan.adapters.hf_config import model_spec_from_hf_config
    from gpuplan.adapters.resolve import resolve_model

    if measurement.hf_config:
        return model_spec_from_hf_config(measurement.hf_config, name=measurement.model, source=measurement.source)
    return resolve_model(measurement.model)


def accelerator_of(measurement) -> Accelerator | None:
    from gpuplan.adapters.resolve import resolve_gpu

    if measurement.gpu:
        return resolve_gpu(measurement.gpu)
    if measurement.device == "cpu" and measurement.cpu_matmul_flops and measurement.cpu_copy_bandwidth:
        return cpu_accelerator(measurement.cpu_matmul_flops, measurement.cpu_copy_bandwidth)
    return None


def case_of(measurement) -> Case:
    """gpuplan's inputs for a measurement; InputError when the layout cannot exist."""
    spec = spec_of(measurement)
    m = measurement
    rest, named = m.tp * m.pp * m.cp, "tp x pp" + (" x cp" if m.cp > 1 else "")
    # the model's own limits first, in train's words (tp must divide the heads, 2 x cp the sequence: hostile wave 30b;
    # `--gpus 8 --tp 3` was 'gpus: must be a multiple of tp x pp = 3' where train says 'tp: must divide the 32 heads')
    check_model_degrees(spec, tp=m.tp, pp=m.pp, vpp=dict(m.options).get("vpp") or 1, ep=m.ep, cp=m.cp,
                        seq_len=m.seq_len, kv_subsharding=rules_for(m.framework).kv_subsharding, framework=m.framework)
    if m.world_size % rest:
        raise InputError("gpus", m.world_size, f"must be a multiple of {named} = {rest} ({m.source})")
    gpu, node = accelerator_of(m), (None, None)
    if m.kind != "trial" and m.gpu:  # a log: train's model, layout and step for the same flags (calibrate.train_step)
        from gpuplan.calibrate.train_step import train_case

        spec, layout, memory, step, node = train_case(m, spec, gpu)
    else:  # a trial's own step: transformers modules, torch.optim, op-level SAC where it ran eager
        layout = ParallelLayout(dp=m.dp, tp=m.tp, pp=m.pp, ep=m.ep, zero=m.zero, micro_batch=m.micro_batch,
                                global_batch=m.global_batch or m.micro_batch * m.dp,
                                **expert_layout_fields(_expert_framework(m)))
        eager = m.framework == "hf"
        memory = M.MemorySettings(seq_len=m.seq_len, recipe=m.recipe, optimizer=m.optimizer,
                                  implementation=m.implementation, recompute=m.recompute,
                                  **({"framework": "hf", "finetune": m.finetune, "lora_rank": m.lora_rank,
                                      "optimizer_impl": m.optimizer_impl,
                                      "attention_kernel": "eager" if m.attention == "eager" else "flash"}
                                     if eager else {}))
        step = S.StepSettings(seq_len=m.seq_len, recompute=m.recompute, dtype=m.dtype, expert_tp=layout.etp,
                              **eager_fields(m, spec))
    check_layout(spec, layout, seq_len=m.seq_len, framework=m.framework,
                 kv_subsharding=rules_for(m.framework).kv_subsharding)
    return Case(spec, layout, memory, step, gpu, node)


def _expert_framework(m) -> str:
    """Whose expert TP a measurement ran (core.expert_layout): a torchtitan log's, else Megatron-Core's default
    (a Megatron log, a table, a trial: etp = tp; transformers runs no TP)."""
    return m.framework or {"torchtitan": "torchtitan", "hf-trainer": "hf"}.get(m.kind, "generic")


def eager_fields(m, spec: ModelSpec) -> dict:
    """StepSettings fields of an eager run on a GPU (core.time: the op-class model), as
    jobs.eager_stack gives `plan --framework hf`; {} elsewhere (CPU trials keep the fused model
    on the CPU stand-in: kernels there run on the issuing thread)."""
    if m.framework != "hf" or m.device != "cuda":
        return {}
    from gpuplan.jobs.eager_stack import eager_stack_fields

    kernel = "eager" if m.attention == "eager" else "flash"
    return {**eager_stack_fields(spec.model_type, m.recipe, m.finetune, kernel, m.optimizer_impl),
            "finetune": m.finetune, "lora_rank": m.lora_rank, "selective": "op-sac", "attention_kernel": kernel}


@dataclass(frozen=True)
class EagerParts:
    """An eager step's critical path by op class (seconds): each phase's GPU time by class, and the
    host time it waits beyond its GPU time (core.time.eager_step)."""

    gemm: float
    attention: float
    memory: float
    host: float
    comm: float

    @property
    def total(self) -> float:
        return self.gemm + self.attention + self.memory + self.host + self.comm


def eager_parts(case: Case, settings: S.StepSettings | None = None, world_size: int | None = None) -> EagerParts:
    """The eager step of a measured case split by op class (micro-batches x (forward + backward) +
    optimizer; communication as core.time.step exposes it)."""
    from gpuplan.core.time.eager_path import eager_run
    from gpuplan.core.time.eager_step import microbatch, optimizer_step, trained_tensors

    settings = settings or case.step
    cluster = cluster_of(case, world_size or case.layout.world)
    lay = case.layout
    run = eager_run(case.spec, cluster, settings)
    fwd, bwd = microbatch(case.spec, run, lay.micro_batch * settings.seq_len, case.spec.num_layers)
    k = lay.micro_batches_per_step
    base = S.step_time(case.spec, cluster, settings, dp=lay.dp, tp=lay.tp, pp=lay.pp, zero=lay.zero,
                       micro_batch=lay.micro_batch, micro_batches=k)
    rank = settings.lora_rank if settings.finetune != "full" else 0
    layers = case.spec.num_layers
    opt = optimizer_step(run, _trained_params(case, settings), trained_tensors(case.spec, rank, layers))
    host = k * (fwd.host_beyond_gpu + bwd.host_beyond_gpu) + opt.host_beyond_gpu
    return EagerParts(k * (fwd.gemm + bwd.gemm), k * (fwd.attention + bwd.attention),
                      k * (fwd.memory + bwd.memory) + opt.memory, host, base.exposed_comm)


def _trained_params(case: Case, settings: S.StepSettings) -> float:
    from gpuplan.core.model.spec import count_parameters

    if settings.finetune == "full":
        shards = case.layout.dp if case.layout.zero >= 1 else 1
        return count_parameters(case.spec).total / shards
    from gpuplan.core.time.trained_params import trained_params_per_gpu

    # the one adapter count (peft's on MoE layers where the step runs hf's eager ops), as core.time.step reads it
    return trained_params_per_gpu(case.spec, settings, 1, 1)


def cluster_of(case: Case, world_size: int) -> Cluster:
    if case.gpu is None:
        raise InputError("gpu", None, "a catalog accelerator (or a CPU trial with microbenchmarks) to predict time")
    per_node = world_size if case.gpu.id == CPU_ID else case.node[0]  # CPU ranks share one host
    return cluster_for(case.gpu, per_node, case.node[1])


def step_parts(case: Case, settings: S.StepSettings | None = None, cluster: Cluster | None = None,
               world_size: int | None = None) -> StepParts:
    """Predicted step time split into compute, attention and exposed communication.

    The attention share comes from the step model itself: the compute time is linear in
    1/attention_efficiency, so halving the attention time (doubling its efficiency) and taking
    twice the difference isolates it exactly."""
    settings = settings or case.step
    cluster = cluster or cluster_of(case, world_size or case.layout.world)
    lay = case.layout
    kw = dict(dp=lay.dp, tp=lay.tp, pp=lay.pp, vpp=lay.vpp, cp=lay.cp, ep=lay.ep, zero=lay.zero,
              micro_batch=lay.micro_batch, micro_batches=lay.micro_batches_per_step)
    base = S.step_time(case.spec, cluster, settings, **kw)
    e_attn = settings.attention_efficiency or S.attention_efficiency(cluster.gpu)
    faster = S.step_time(case.spec, cluster, replace(settings, attention_efficiency=2 * e_attn), **kw)
    on_path = base.compute + base.bubble
    attention = 2.0 * (on_path - (faster.compute + faster.bubble))
    comm = base.exposed_comm
    return StepParts(compute=on_path - attention + base.optimizer, attention=attention,
                     comm=comm if comm > 1e-12 * base.total else 0.0)  # float dust -> 0


def memory_parts(case: Case, first_iteration: bool = False) -> MemoryParts:
    """The peak a measurement is fitted to (bytes on the worst GPU). ``first_iteration``: the peak of iteration 1, as
    Megatron's memory line after 1 iteration reports it (torch.cuda.max_memory_allocated since the start; training.py
    @ba773259 training_log prints it once, at the first logged iteration). The optimizer creates its moments lazily in
    its first step (apex / TE FusedAdam and torch.optim: state[p] filled inside step(); distrib_optimizer.py@ba773259
    init_state_fn runs only when a distributed checkpoint is loaded), so iteration 1's forward and backward run without
    them: its peak is max(backward start - the moments' bytes, the optimizer step), per stage. Master weights and
    gradient buffers are built with the model and optimizer, before iteration 1."""
    peak = M.peak_memory(case.spec, case.layout, case.memory)
    per_sequence = activation_bytes_per_sample(case.spec, case.layout, case.memory)
    moments = None
    if first_iteration:
        stages = (M.stage_memory(case.spec, case.layout, case.memory, s) for s in {0, case.layout.pp - 1})
        peak = max(stages, key=lambda m: max(m.backward_start_total - m.optimizer, m.optimizer_step_total))
        moments = peak.optimizer
    return MemoryParts(peak.backward_start_total - (moments or 0.0), peak.optimizer_step_total,
                       per_sequence * case.layout.micro_batch, model_states_bytes(peak), moments)


def gemm_dimension(case: Case) -> float:
    """The smallest GEMM dimension per GPU the step model uses: min(hidden / tp, tokens)."""
    tokens = case.layout.micro_batch * case.memory.seq_len / case.layout.cp
    return float(min(case.spec.hidden_size / case.layout.tp, tokens))
