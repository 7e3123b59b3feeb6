"""Per-GPU peak memory of many layouts at once (numpy arrays of degrees): the planner's path,
built from the same component functions as gpuplan.core.memory's scalar path."""

from __future__ import annotations


from gpuplan.core import activations as A
from gpuplan.core.memory import (
    OPTIMIZERS,
    RECIPES,
    MemorySettings,
    declared_scale,
    lookup,
    stage_params,
)
from gpuplan.core.model import ModelSpec, norm_params
from gpuplan.core.parallel import ParallelLayout


def bulk_peak_memory(spec: ModelSpec, settings: MemorySettings, *, dp, tp, pp, vpp, cp, ep, zero, micro_batch,
                     micro_batches):
    """``peak_memory`` for many layouts at once (numpy arrays of degrees; sequence parallelism on).

    Built from the same component functions as the scalar path (params per layer, activation bytes
    per token, outside-layer bytes, FSDP working set, optimizer temporaries) so the two agree;
    tests/test_planner.py checks them against each other. MoE layers are spread evenly over stages.
    Returns allocated peak bytes on the worst of the first and last stage.
    """
    recipe = lookup(RECIPES, settings.recipe, "recipe")
    optimizer = lookup(OPTIMIZERS, settings.optimizer, "optimizer")
    one = stage_params(spec, ParallelLayout(), 0)  # whole model on one GPU, for per-layer figures
    h, L = spec.hidden_size, spec.num_layers
    k = declared_scale(spec)
    root_embed = k * (spec.vocab_size + spec.learned_positions) * h  # positions: split by tp here (tiny)
    root_head = k * (norm_params(spec, h) + (spec.vocab_size * h if not spec.tie_embeddings else 0))
    experts_total = one.experts
    layer_dense = (one.dense - root_embed - root_head) / L  # attention + norms + dense MLP/shared/router
    layer_matrix_dense = (one.matrices - experts_total) / L
    moe_share = spec.num_moe_layers / L
    dropout = spec.dropout if settings.dropout is None else settings.dropout
    autocast = recipe.autocast_weight_copies
    kw = dict(impl=settings.implementation, kernel=settings.attention_kernel, compute_bytes=recipe.compute_bytes,
              dropout=dropout, autocast=autocast)
    act_token_layer = A.saved_bytes_per_token(spec, settings.seq_len, L, spec.num_moe_layers,
                                              recompute=settings.recompute,
                                              capacity_factor=settings.moe_capacity_factor, **kw) / L
    recomputed = A.recomputed_layer_bytes_per_token(spec, settings.seq_len, spec.num_moe_layers, **kw)
    outside = A.outside_layer_bytes(spec, impl=settings.implementation, compute_bytes=recipe.compute_bytes,
                                    autocast=autocast)
    matrix_share_states = optimizer.matrix_states if optimizer.name != "adafactor" else 2 / h
    state_elem = optimizer.fixed_state_bytes or recipe.state_bytes
    shards = dp * cp
    expert_shards = (shards // ep) + (shards < ep)
    tokens = micro_batch * settings.seq_len / cp
    in_flight_raw = pp * (1 + (pp - 1) / (pp * vpp)) * (vpp > 1) + pp * (vpp == 1)
    in_flight = _bulk_min(in_flight_raw, micro_batches)
    base, extra = L // pp, L % pp
    results = []
    for first, last in ((True, pp == 1), (False, True)):
        layers = base + (extra > 0) if first else base + (pp == 1) * extra
        dense = layers * layer_dense / tp + (root_embed / tp if first else 0) + last * (
            root_head / tp + (spec.tie_embeddings and True) * (pp > 1) * root_embed / tp)
        experts = layers * moe_share * experts_total / L / ep
        matrices = layers * (layer_matrix_dense / tp + moe_share * experts_total / L / ep)
        total = dense + experts
        matrix_frac = matrices / total
        states_per = matrix_frac * matrix_share_states + (1 - matrix_frac) * optimizer.other_states
        per_param_opt = states_per * state_elem + optimizer.overhead_bytes_per_param

        def sharded(stage):
            on = zero >= stage
            return on * (dense / shards + experts / expert_shards) + (1 - on) * total

        weights = recipe.weight_bytes * sharded(3)
        grads = recipe.grad_bytes * sharded(2)
        master = 0.0 if settings.offload_optimizer else recipe.master_bytes * sharded(1)
        opt = 0.0 if settings.offload_optimizer else per_param_opt * sharded(1)
        stage_in_flight = in_flight if first else _bulk_max(1.0, in_flight - (pp - 1) * (vpp == 1))
        scale = settings.activation_scale
        acts = act_token_layer * layers / tp * tokens * stage_in_flight * scale
        out_saved = last * outside.saved / tp * tokens * scale
        loss_temp = last * outside.backward_temp / tp * tokens * scale
        head = last * k * spec.vocab_size * h / tp
        copies = matrices * recipe.fp8_weight_bytes + (matrices + head) * 2.0 * autocast
        largest = layer_dense / tp + moe_share * experts_total / L / ep
        root = (root_embed / tp if first else 0) + last * root_head / tp
        working = (zero >= 3) * (shards > 1) * recipe.compute_bytes * (root + largest)
        grads_fwd = grads * (recipe.persistent_grads or False) + grads * (not recipe.persistent_grads) * (
            micro_batches > 1)
        resident = weights + master + opt
        bwd = resident + grads_fwd + working + acts + out_saved + loss_temp + copies
        if settings.recompute == "full":
            bwd = _bulk_max(bwd, bwd - loss_temp + recomputed / tp * tokens * scale)
        step_temp = 0.0
        if settings.finetune == "full" and not settings.offload_optimizer and recipe.optimizer_impl == "foreach":
            step_temp = (zero >= 1) * total / shards + (zero < 1) * total
            step_temp = step_temp * max(recipe.state_bytes, recipe.master_bytes or recipe.weight_bytes)
        results.append(_bulk_max(bwd, resident + grads + step_temp))
    return _bulk_max(results[0], results[1])


def _bulk_min(a, b):
    return a - (a - b) * (a > b)


def _bulk_max(a, b):
    return a + (b - a) * (b > a)
