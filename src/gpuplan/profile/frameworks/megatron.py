"""Megatron-Core's own GPT training step, measured on a CPU under fake tensors (bytes, rank 0).

Framework: megatron-core 0.16.1 without Transformer Engine or apex, torch 2.13. Exercised
Megatron code: ``parallel_state.initialize_model_parallel``, ``models/gpt/gpt_model.py``
(``GPTModel``) with ``models/gpt/gpt_layer_specs.py:get_gpt_layer_local_spec`` (the TE-free
layer), ``transformer/transformer_block.py`` (selective ``core_attn`` and full uniform
recompute), ``distributed/distributed_data_parallel.py`` + ``param_and_grad_buffer.py`` (fp32
contiguous grad buffer), ``optimizer/__init__.py:get_megatron_optimizer`` +
``optimizer/distrib_optimizer.py`` (fp32 main-param shards; falls back to ``torch.optim.AdamW``
without TE/apex) and ``pipeline_parallel/schedules.py`` (``forward_backward_no_pipelining``,
1F1B ``forward_backward_pipelining_without_interleaving``).

Rank 0 is the first pipeline stage (embedding + its layers; the output head only when pp = 1).
The model is built under FakeTensorMode over a fake process group of ``dp * tp * pp`` ranks, then
two training steps (schedule forward/backward over ``microbatches``, grad sync, optimizer step)
run inside gpuplan's memory tracker. Sequence parallelism is off (it needs TE/apex norms).
"""

from __future__ import annotations

import contextlib

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


def measure_megatron(run: FrameworkRun) -> FrameworkMeasurement:
    """Measure ``run`` with Megatron-Core at its two depths and extrapolate to the full depth."""
    _validate(run)
    versions = _import_versions()
    shape = model_shape(run.model, llama_only=True)
    log = PatchLog()
    return measure_depths(run, shape, lambda n: _measure_depth(run, shape, n, log),
                          _notes(run), log, versions)


def _validate(run: FrameworkRun) -> None:
    require(run.framework == "megatron", "framework", run.framework, "megatron")
    require(run.loss == "ce", "loss", run.loss, "ce for megatron (vocab-parallel cross entropy)")
    require(run.float8 == "none", "float8", run.float8, "none for megatron (fp8 needs Transformer Engine)")
    require(run.reshard == "default", "reshard", run.reshard, "default (an FSDP setting)")
    require(run.lora_rank == FrameworkRun.lora_rank and not run.autocast, "lora_rank", run.lora_rank,
            "the default (LoRA/autocast are PEFT settings)")


def _import_versions() -> dict[str, str]:
    try:
        import megatron.core
        import torch
    except ImportError as exc:
        raise InputError("framework", "megatron", f"megatron-core {MISSING_PACKAGE}") from exc
    return {"torch": torch.__version__, "megatron-core": megatron.core.__version__}


def _notes(run: FrameworkRun) -> list[str]:
    notes = ["local layer spec (no Transformer Engine): unfused RMSNorm, SwiGLU and RoPE; "
             "sequence parallelism off",
             f"optimizer: torch AdamW {run.optimizer_impl}=True (Megatron's fallback without TE/apex; "
             "TE/apex FusedAdam update in place like fused)",
             "grad clipping off and grad norm skipped (data-dependent .item()); per-tensor "
             "collectives instead of coalesced ones"]
    if run.attention == "sdpa":
        notes.append("core attention: a small SDPA module (CPU flash saves q, k, v, out, logsumexp "
                     "like TE/cuDNN flash) replaces Megatron's unfused DotProductAttention; not Megatron code")
    if run.pp > 1 or run.microbatches > 1:
        notes.append("tracker in global-only mode (repeated root forwards): peak exact, tensors "
                     "created inside the step are labelled activation/temp")
    return notes


# --------------------------------------------------------------------------------------------
# patches


def _patch_cuda(p: Patches, torch) -> None:
    """Megatron's CUDA calls, pointed at the CPU (all tensors are fake CPU tensors)."""
    cuda = torch.cuda
    p.set(cuda, "current_device", lambda: "cpu", "buffers are allocated with device=current_device()")
    p.set(cuda, "is_available", lambda: False, "no CUDA code paths")
    p.set(cuda, "get_rng_state", lambda device="cuda": torch.get_rng_state(), "recompute saves CUDA RNG state")
    p.set(cuda, "set_rng_state", lambda new_state, device="cuda": None, "recompute restores CUDA RNG state")
    p.set(cuda, "manual_seed", lambda seed: None, "model-parallel RNG seeding")
    p.set(cuda, "synchronize", lambda *a, **k: None, "p2p communication syncs after batch_isend_irecv")
    orig_type = torch.Tensor.type

    def cuda_type_name(self, dtype=None, non_blocking=False, **kw):
        if dtype is None:
            name = orig_type(self)
            return name if name.startswith("torch.cuda.") else name.replace("torch.", "torch.cuda.", 1)
        return orig_type(self, dtype, non_blocking, **kw)

    p.set(torch.Tensor, "type", cuda_type_name,
          "DistributedOptimizer accepts only torch.cuda.*Tensor type names")


def _patch_megatron(p: Patches, torch) -> None:
    import megatron.core.distributed.param_and_grad_buffer as pgb
    import megatron.core.fusions.fused_softmax as fsm
    import megatron.core.optimizer.clip_grads as cg
    import megatron.core.optimizer.optimizer as mopt
    import torch.distributed as dist

    class NoCoalescing(contextlib.nullcontext):
        def __init__(self, *a, **k):
            super().__init__()

        def wait(self):
            pass

    def l2_norm(chunk_size, noop_flag, tensor_lists, per_tensor, *a):
        norms = [torch.linalg.vector_norm(t.float()) for tl in tensor_lists for t in tl]
        return torch.linalg.vector_norm(torch.stack(norms)).reshape(1), None

    def all_gather_object(object_list, obj, group=None):
        object_list[:] = [obj] * len(object_list)

    p.set(pgb, "_coalescing_manager", NoCoalescing, "c10d *_coalesced_ ops have no FakeTensor kernel")
    p.set(cg, "l2_norm_impl", l2_norm, "the TE/apex-free norm does torch.tensor(list) (data-dependent)")
    p.set(mopt, "get_grad_norm_fp32", lambda *a, **k: 1.0, "the total norm is read with .item()")
    p.set(dist, "all_gather_object", all_gather_object, "pickled object collectives are data-dependent")
    p.set(fsm, "get_default_causal_mask", lambda sq: torch.triu(torch.ones(sq, sq), diagonal=1).bool(),
          "the unfused softmax builds its causal mask with device='cuda'")


def _patch_rng(p: Patches, torch) -> None:
    from megatron.core.tensor_parallel import random as tp_random

    p.set(tp_random, "_set_cuda_rng_state", lambda *a, **k: None, "CUDA RNG state")
    p.set(tp_random, "_get_cuda_rng_state", lambda *a, **k: torch.get_rng_state(), "CUDA RNG state")
    tp_random.model_parallel_cuda_manual_seed(1234)
    p.set(tp_random.get_cuda_rng_tracker(), "fork", lambda *a, **k: contextlib.nullcontext(),
          "fork() compares RNG states with .item() (data-dependent)")


# --------------------------------------------------------------------------------------------
# model, DDP, optimizer


def _transformer_config(run: FrameworkRun, shape: ModelShape, layers: int):
    import torch
    import torch.nn.functional as F
    from megatron.core.transformer import TransformerConfig

    recompute = {"none": {},
                 "selective": dict(recompute_granularity="selective", recompute_modules=["core_attn"]),
                 "full": dict(recompute_granularity="full", recompute_method="uniform",
                              recompute_num_layers=1)}[run.recompute]
    return TransformerConfig(
        num_layers=layers * run.pp, hidden_size=shape.hidden, ffn_hidden_size=shape.ffn,
        num_attention_heads=shape.heads, num_query_groups=shape.kv_heads, kv_channels=shape.head_dim,
        gated_linear_unit=True, activation_func=F.silu, normalization="RMSNorm",
        layernorm_epsilon=shape.norm_eps, add_bias_linear=False, bf16=True, params_dtype=torch.bfloat16,
        pipeline_dtype=torch.bfloat16, tensor_model_parallel_size=run.tp,
        pipeline_model_parallel_size=run.pp, sequence_parallel=False,
        use_cpu_initialization=True, perform_initialization=False,
        hidden_dropout=0.0, attention_dropout=0.0, bias_dropout_fusion=False,
        masked_softmax_fusion=False, gradient_accumulation_fusion=False,
        persist_layer_norm=False, apply_rope_fusion=False, **recompute)


def _sdpa_core_attention():
    import torch
    import torch.nn.functional as F

    class SDPACoreAttention(torch.nn.Module):
        """Stand-in for TEDotProductAttention: [s, b, n, d] in, [s, b, n*d] out, flash saves."""

        def __init__(self, config, layer_number, attn_mask_type, attention_type=None, **kw):
            super().__init__()
            self.config = config

        def forward(self, query, key, value, attention_mask=None, attn_mask_type=None, **kw):
            q, k, v = (t.permute(1, 2, 0, 3) for t in (query, key, value))
            if k.shape[1] != q.shape[1]:  # GQA: Megatron's local path expands k/v too
                k = k.repeat_interleave(q.shape[1] // k.shape[1], dim=1)
                v = v.repeat_interleave(q.shape[1] // v.shape[1], dim=1)
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return out.permute(2, 0, 1, 3).reshape(query.shape[0], query.shape[1], -1)

    return SDPACoreAttention


def _build(run: FrameworkRun, shape: ModelShape, layers: int, p: Patches):
    import torch
    from megatron.core.distributed import (
        DistributedDataParallel,
        DistributedDataParallelConfig,
    )
    from megatron.core.models.gpt import GPTModel
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.optimizer import OptimizerConfig, get_megatron_optimizer

    cfg = _transformer_config(run, shape, layers)
    spec = get_gpt_layer_local_spec()
    if run.attention == "sdpa":
        spec.submodules.self_attention.submodules.core_attention = _sdpa_core_attention()
    model = GPTModel(config=cfg, transformer_layer_spec=spec, vocab_size=shape.vocab,
                     max_sequence_length=run.seq_len, position_embedding_type="rope",
                     rotary_base=int(shape.rope_theta), rope_scaling=shape.llama3_rope_scaling is not None,
                     share_embeddings_and_output_weights=shape.tie_embeddings,
                     pre_process=True, post_process=run.pp == 1)
    dist_opt = run.distributed_optimizer
    ddp_cfg = DistributedDataParallelConfig(grad_reduce_in_fp32=True, use_distributed_optimizer=dist_opt)
    model = DistributedDataParallel(config=cfg, ddp_config=ddp_cfg, module=model)

    class CallableList(list):  # Megatron's DDP shadows nn.Module.buffers() with its buffer list
        def __call__(self, recurse=True):
            return torch.nn.Module.buffers(model, recurse)

    p.set(model, "buffers", CallableList(model.buffers), "the tracker's hooks call module.buffers()")
    opt_cfg = OptimizerConfig(optimizer="adam", lr=1e-4, bf16=True, params_dtype=torch.bfloat16,
                              use_distributed_optimizer=dist_opt, clip_grad=0.0)
    optimizer = get_megatron_optimizer(opt_cfg, [model], use_gloo_process_groups=False)
    inner = getattr(optimizer, "optimizer", None)
    if inner is None:
        inner = optimizer.chained_optimizers[0].optimizer
    for group in inner.param_groups:  # Megatron passes neither: torch would pick for-loop on CPU
        group["foreach"] = run.optimizer_impl == "foreach"
        group["fused"] = run.optimizer_impl == "fused"
    return model, optimizer, inner


# --------------------------------------------------------------------------------------------
# one depth


def _measure_depth(run: FrameworkRun, shape: ModelShape, layers: int, log: PatchLog):
    import torch
    from megatron.core import parallel_state as ps
    from torch._subclasses.fake_tensor import FakeTensorMode

    with fake_process_group(run.world_size) as p, contextlib.ExitStack() as stack:
        _patch_cuda(p, torch)
        _patch_megatron(p, torch)
        ps.initialize_model_parallel(tensor_model_parallel_size=run.tp, pipeline_model_parallel_size=run.pp,
                                     create_gloo_process_groups=False)
        stack.callback(ps.destroy_model_parallel)
        p.note("initialize_model_parallel(create_gloo_process_groups=False), get_megatron_optimizer("
               "use_gloo_process_groups=False): gloo cannot sit on a fake process group")
        _patch_rng(p, torch)
        with FakeTensorMode(allow_non_fake_inputs=True):
            model, optimizer, inner = _build(run, shape, layers, p)
            point = _track(run, shape, layers, model, optimizer, inner)
        log.add(p.reasons)
    return point


def _track(run, shape, layers, model, optimizer, inner):
    import torch
    from megatron.core.pipeline_parallel import get_forward_backward_func

    b, s = run.micro_batch, run.seq_len
    tokens = torch.randint(0, shape.vocab, (b, s))
    position_ids = torch.arange(s).unsqueeze(0).expand(b, -1)
    labels = torch.randint(0, shape.vocab, (b, s))
    loss_mask = torch.ones(b, s)
    tracker = make_tracker(global_only=run.pp > 1 or run.microbatches > 1)
    tracker.track_external(model, inner, tokens, labels, loss_mask, position_ids)
    ref = tracker._ref_class
    for buf in list(model.buffers) + list(getattr(model, "expert_parallel_buffers", [])):
        if buf.param_data is not None:  # DDP contiguous buffers exist before tracking
            tracker._update_and_maybe_create_winfos(buf.param_data, ref.PARAM)
        tracker._update_and_maybe_create_winfos(buf.grad_data, ref.GRAD)
    for group in inner.param_groups:  # fp32 main params (distributed optimizer shards)
        for param in group["params"]:
            tracker._update_and_maybe_create_winfos(param, ref.OPT)
    tag_optimizer_states(tracker, inner)
    fwd_bwd = get_forward_backward_func()

    def forward_step(data_iterator, model):
        out = model(tokens, position_ids, None, labels=labels if run.pp == 1 else None)

        def loss_func(output_tensor):
            loss = torch.sum(output_tensor.float().view(-1) * loss_mask.view(-1))
            return loss, torch.tensor(s * b), {"lm loss": loss.detach()}

        return out, loss_func

    def step():
        tracker.phase = "forward_backward"
        optimizer.zero_grad()
        model.zero_grad_buffer()
        fwd_bwd(forward_step_func=forward_step, data_iterator=iter([None] * run.microbatches),
                model=[model], num_microbatches=run.microbatches, seq_length=s,
                micro_batch_size=b, forward_only=False)
        model.finish_grad_sync()
        tracker.phase = "optimizer_step"
        optimizer.step()

    run_two_steps(tracker, step)
    return depth_point(tracker, layers)


__all__ = ["measure_megatron"]
