"""torchtitan's own Llama 3 training step, measured on a CPU under fake tensors (bytes, rank 0).

Framework: torchtitan 0.3.0 (PyPI wheel) with torchao 0.18.0 for Float8, torch 2.13. Exercised
torchtitan code: ``models/llama3/__init__.py`` (layer configs, ``_build_llama3_layers``),
``models/llama3/parallelize.py`` (``parallelize_llama``: TP plan, AC wrapping,
``apply_fsdp_to_decoder``), ``distributed/parallel_dims.py`` (meshes),
``distributed/activation_checkpoint.py`` (``SelectiveAC`` op-level SAC, ``FullAC``),
``components/optimizer/optimizer.py`` (``OptimizersContainer``, AdamW foreach/fused),
``components/loss.py`` (``CrossEntropyLoss``, ``ChunkedLossWrapper``),
``components/quantization/float8.py`` (``Float8LinearConverter``, rowwise),
``distributed/utils.py`` (``clip_grad_norm_``, SPMD context). Tensorwise Float8 (with or
without FSDP fp8 all-gather) is torchao's ``convert_to_float8_training``, which torchtitan 0.3.0
no longer offers.

The model is built on ``meta`` from the catalog shape with torchtitan's own layer builder,
parallelised by torchtitan, materialised as fake CPU tensors, and two training steps
(forward, loss, backward, grad clipping, optimizer step, zero_grad) run inside gpuplan's FSDP2
memory tracker over a fake process group of ``dp * tp`` ranks.
"""

from __future__ import annotations

import sys

from gpuplan.errors import InputError
from gpuplan.profile.frameworks.common import (
    MISSING_PACKAGE,
    FrameworkMeasurement,
    FrameworkRun,
    ModelShape,
    Patches,
    PatchLog,
    depth_point,
    fake_process_group,
    make_tracker,
    measure_depths,
    model_shape,
    require,
    run_two_steps,
    tag_optimizer_states,
)

SPMD_BACKEND = "partial_dtensor"


def measure_torchtitan(run: FrameworkRun) -> FrameworkMeasurement:
    """Measure ``run`` with torchtitan at its two depths and extrapolate to the full depth."""
    _validate(run)
    versions = _import_versions()
    shape = model_shape(run.model, llama_only=True)
    log = PatchLog()
    return measure_depths(run, shape, lambda n: _measure_depth(run, shape, n, log),
                          _notes(run), log, versions)


def _validate(run: FrameworkRun) -> None:
    require(run.framework == "torchtitan", "framework", run.framework, "torchtitan")
    require(run.dp >= 2 or run.tp >= 2, "dp", run.dp, "at least 2 (FSDP2 or TP must be on)")
    require(run.pp == 1 or run.microbatches >= 1, "microbatches", run.microbatches, ">= 1")
    require(run.attention == "sdpa", "attention", run.attention, "sdpa for torchtitan")
    require(run.lora_rank == FrameworkRun.lora_rank and not run.autocast, "lora_rank", run.lora_rank,
            "the default (LoRA/autocast are PEFT settings)")
    require(run.pp == 1 or run.float8 == "none", "float8", run.float8, "none with PP-stage emulation")


def _import_versions() -> dict[str, str]:
    try:
        import torch
        import torchao
        import torchtitan  # noqa: F401
    except ImportError as exc:
        raise InputError("framework", "torchtitan", f"torchtitan {MISSING_PACKAGE}") from exc
    from importlib.metadata import version

    return {"torch": torch.__version__, "torchtitan": version("torchtitan"), "torchao": torchao.__version__}


def _notes(run: FrameworkRun) -> list[str]:
    notes = ["attention: torchtitan's ScaledDotProductAttention module (CPU flash saves q, k, v, out, "
             "logsumexp like CUDA flash); torchtitan 0.3.0 refuses sdpa for LMs and defaults to flex",
             f"eager (no torch.compile); spmd_backend={SPMD_BACKEND} (the default spmd_types backend "
             "fails on the meta model)"]
    if run.float8 != "none":
        notes.append("Float8 emulate=True: torch._scaled_mm replaced by a bf16 matmul; the tensors "
                     "saved for backward are those of the real Float8Linear")
    if run.pp > 1:
        notes.append(f"PP-stage emulation, not a pipeline schedule: {run.microbatches} sequential "
                     "microbatches without reshard or grad sync, then one reduce-scatter "
                     "(torch.distributed.pipelining stage.py); rank 0 holds embedding AND output "
                     "head (a real first stage holds only the embedding); no 1F1B in-flight activations")
    return notes


# --------------------------------------------------------------------------------------------
# patches


def _patch_device(patches: Patches, torch) -> None:
    """torchtitan binds device_type/device_module ("cuda" when no accelerator) at import."""
    import torchtitan.components.metrics
    import torchtitan.distributed.parallel_dims
    import torchtitan.distributed.utils  # noqa: F401

    patched = []
    for name, mod in list(sys.modules.items()):
        if not name.startswith("torchtitan.") or mod is None:
            continue
        if vars(mod).get("device_type") == "cuda":
            patches.set(mod, "device_type", "cpu", None)
            patched.append(name)
        if vars(mod).get("device_module") is torch.cuda:
            patches.set(mod, "device_module", torch.cpu, None)
    patches.note(f"device_type/device_module -> cpu/torch.cpu in {', '.join(sorted(patched))}: "
                 "torchtitan binds 'cuda' at import when no accelerator is found")


# --------------------------------------------------------------------------------------------
# configuration


def _model_spec(run: FrameworkRun, shape: ModelShape, layers: int):
    """torchtitan's ModelSpec for the catalog shape, ``layers`` deep, SDPA inner attention."""
    import torchtitan.models.llama3 as tt_llama3
    from torchtitan.models.common import ComplexRoPE, Embedding, Linear, RMSNorm
    from torchtitan.models.common.attention import ScaledDotProductAttention
    from torchtitan.protocols.model_spec import ModelSpec

    scaling = shape.llama3_rope_scaling or {}
    rope = ComplexRoPE.Config(
        dim=shape.head_dim, max_seq_len=shape.max_positions, theta=shape.rope_theta,
        scaling="llama" if scaling else "none", scaling_factor=float(scaling.get("factor", 8.0)),
        low_freq_factor=float(scaling.get("low_freq_factor", 1.0)),
        high_freq_factor=float(scaling.get("high_freq_factor", 4.0)),
        original_max_position_embeddings=int(scaling.get("original_max_position_embeddings", 8192)))
    blocks = tt_llama3._build_llama3_layers(
        fuse_qkv=True, n_layers=layers, dim=shape.hidden, n_heads=shape.heads, n_kv_heads=shape.kv_heads,
        hidden_dim=shape.ffn, rope=rope, attn_backend="flex")
    for block in blocks:  # what torchtitan's get_attention_config("sdpa") returned before 2026
        block.attention.inner_attention = ScaledDotProductAttention.Config()
    norm_init = {"weight": tt_llama3._NORM_INIT["weight"]}
    config = tt_llama3.Llama3Model.Config(
        dim=shape.hidden, vocab_size=shape.vocab, enable_weight_tying=shape.tie_embeddings,
        tok_embeddings=Embedding.Config(num_embeddings=shape.vocab, embedding_dim=shape.hidden,
                                        param_init=tt_llama3._EMBEDDING_INIT),
        norm=RMSNorm.Config(normalized_shape=shape.hidden, param_init=norm_init),
        lm_head=Linear.Config(in_features=shape.hidden, out_features=shape.vocab,
                              param_init=tt_llama3._output_linear_init(shape.hidden)),
        layers=blocks)
    if run.float8 == "rowwise":
        from torchtitan.components.quantization import Float8LinearConverter

        conv = Float8LinearConverter.Config(filter_fqns=["output", "lm_head"], emulate=True)
        config = conv.build().convert(config)
    return ModelSpec(name="llama3", flavor=run.model, model=config,
                     parallelize_fn=tt_llama3.parallelize_llama, pipelining_fn=None,
                     post_optimizer_build_fn=None, state_dict_adapter=None)


def _trainer_config(run: FrameworkRun, spec):
    from torchtitan.components.loss import ChunkedLossWrapper, CrossEntropyLoss
    from torchtitan.components.optimizer.optimizer import default_adamw
    from torchtitan.config import CompileConfig, ParallelismConfig, TrainingConfig
    from torchtitan.distributed.activation_checkpoint import FullAC, SelectiveAC
    from torchtitan.trainer import Trainer

    loss = CrossEntropyLoss.Config(global_vocab_size=spec.model.vocab_size)
    if run.loss == "chunked":
        loss = ChunkedLossWrapper.Config(loss_fn=loss)
    ac = {"none": None, "selective": SelectiveAC.Config(), "full": FullAC.Config()}[run.recompute]
    cfg = Trainer.Config(
        model_spec=spec, loss=loss, optimizer=default_adamw(lr=3e-4),
        training=TrainingConfig(local_batch_size=run.micro_batch, seq_len=run.seq_len, steps=2),
        parallelism=ParallelismConfig(data_parallel_shard_degree=run.dp, tensor_parallel_degree=run.tp,
                                      fsdp_reshard_after_forward=run.reshard, spmd_backend=SPMD_BACKEND),
        activation_checkpoint=ac, compile=CompileConfig(enable=False))
    cfg.optimizer.implementation = run.optimizer_impl
    return cfg


def _convert_tensorwise(run: FrameworkRun, model) -> None:
    from torchao.float8 import Float8LinearConfig, convert_to_float8_training

    f8 = Float8LinearConfig(enable_fsdp_float8_all_gather=run.float8 == "tensorwise+fp8-allgather",
                            emulate=True)
    convert_to_float8_training(model, config=f8,
                               module_filter_fn=lambda m, fqn: "lm_head" not in fqn and "output" not in fqn)


# --------------------------------------------------------------------------------------------
# one depth


def _measure_depth(run: FrameworkRun, shape: ModelShape, layers: int, log: PatchLog):
    import torch
    import torchtitan.distributed.utils as dist_utils
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.distributed.fsdp import FSDPModule
    from torchtitan.distributed import ParallelDims

    with fake_process_group(run.dp * run.tp) as patches:
        _patch_device(patches, torch)
        patches.set(dist_utils, "_spmd_backend", SPMD_BACKEND,
                    "active SPMD backend (module global set by the Trainer)")
        spec = _model_spec(run, shape, layers)
        cfg = _trainer_config(run, spec)
        pdims = ParallelDims.from_config(cfg.parallelism, run.dp * run.tp)
        spec.model.update_from_config(config=cfg)
        with torch.device("meta"):
            model = spec.model.build()
        if run.float8.startswith("tensorwise"):
            _convert_tensorwise(run, model)
        if run.float8 != "none" and not any("Float8" in type(m).__name__ for m in model.modules()):
            raise RuntimeError(f"float8={run.float8}: no Linear was converted to Float8Linear")
        model = spec.parallelize_fn(model, parallel_dims=pdims, training=cfg.training,
                                    parallelism=cfg.parallelism, compile_config=cfg.compile,
                                    ac_config=cfg.activation_checkpoint, dump_folder="/tmp/gpuplan_tt")
        with FakeTensorMode(allow_non_fake_inputs=True):
            model.to_empty(device="cpu")
            model.train()
            optimizers = cfg.optimizer.build(model_parts=[model])
            inner = optimizers.optimizers[0] if hasattr(optimizers, "optimizers") else optimizers
            loss_fn = cfg.loss.build(compile_config=cfg.compile)
            chunked = run.loss == "chunked"
            if chunked:  # what torchtitan's Trainer does for a chunked loss
                loss_fn.set_lm_head(model.lm_head)
                model._skip_lm_head = True
                patches.note("FSDPMemTracker: lm_head (called from the chunked loss) keeps no "
                             "per-module stats; totals unaffected")
            inputs = torch.randint(0, shape.vocab, (run.micro_batch, run.seq_len))
            labels = torch.randint(0, shape.vocab, (run.micro_batch, run.seq_len))
            fsdp = isinstance(model, FSDPModule)
            tracker = make_tracker(fsdp_root=model if fsdp else None, optimizer=inner,
                                   forget=[model.lm_head] if chunked else ())
            if fsdp:
                tracker.track_inputs((inputs, labels))
            else:
                tracker.track_external(model, inner, inputs, labels)
            tag_optimizer_states(tracker, inner)
            step = _step_fn(run, model, optimizers, loss_fn, inputs, labels, tracker, pdims)
            run_two_steps(tracker, step)
            point = depth_point(tracker, layers)
        log.add(patches.reasons)
    return point


def _step_fn(run, model, optimizers, loss_fn, inputs, labels, tracker, pdims):
    import torch
    import torchtitan.distributed.utils as dist_utils

    train_context = dist_utils.get_spmd_context(parallel_dims=pdims)
    tokens = torch.tensor(run.micro_batch * run.seq_len * run.dp)  # global valid tokens

    def forward_backward():
        import spmd_types

        with train_context():
            pred = model(inputs)
            loss, _ = loss_fn(pred, labels, tokens)
            del pred
            with spmd_types.no_typecheck():
                loss.backward()

    def finish_step():
        tracker.phase = "optimizer_step"
        optimizers.step()
        if run.float8 == "tensorwise+fp8-allgather":
            from torchao.float8 import precompute_float8_dynamic_scale_for_fsdp

            precompute_float8_dynamic_scale_for_fsdp(model)
        tracker.phase = "zero_grad"
        optimizers.zero_grad()

    def step():
        tracker.phase = "forward_backward"
        forward_backward()
        tracker.phase = "clip"
        dist_utils.clip_grad_norm_(list(model.parameters()), 1.0, foreach=True)
        finish_step()

    def pp_stage_step():
        _pp_stage_forward_backward(run, model, tracker, forward_backward)
        finish_step()

    return pp_stage_step if run.pp > 1 else step


def _pp_stage_forward_backward(run, model, tracker, forward_backward) -> None:
    """What torch.distributed.pipelining's PipelineStage does to an FSDP stage
    (stage.py ``backward_maybe_with_nosync`` / ``perform_reduce_grad``): no reshard after backward
    and no grad sync for every microbatch, then one post_backward per group; reshard after forward
    as torchtitan resolves ``run.reshard`` with PP on (distributed/fsdp.py
    get_fsdp_reshard_after_forward_policy: not resharded unless "always")."""
    from torch.distributed.fsdp import fully_shard
    from torchtitan.distributed.fsdp import get_fsdp_reshard_after_forward_policy

    tracker.phase = "forward_backward"  # torchtitan's policy with PP on: "default" / "never" False, "always" True
    model.set_reshard_after_forward(get_fsdp_reshard_after_forward_policy(run.reshard, pp_enabled=True))
    for _ in range(run.microbatches):
        model.set_is_last_backward(False)
        model.set_reshard_after_backward(False)
        model.set_requires_gradient_sync(False)
        forward_backward()
    tracker.phase = "reduce_grad"
    model.set_is_last_backward(True)
    model.set_reshard_after_backward(True)
    model.set_requires_gradient_sync(True)
    for state in fully_shard.state(model)._state_ctx.all_states:
        for group in state._fsdp_param_groups:
            group.post_backward()


__all__ = ["measure_torchtitan"]
