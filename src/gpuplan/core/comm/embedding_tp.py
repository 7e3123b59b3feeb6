"""The tensor-parallel collectives outside the transformer layers: the vocabulary-parallel word embedding's and the
output layer's (LM head's), one exchange of the [s, b, h] activation buffer each per micro-batch, on the TP group.

Every framework gpuplan models with tp > 1 shards the vocabulary over the TP ranks:

* Megatron-Core (``VocabParallelEmbedding.forward``, megatron/core/tensor_parallel/layers.py@core_v0.16.1 L290-300):
  each rank looks up its vocabulary slice, zeroes the other rows and all-reduces (``reduce_from_tensor_model_parallel
  _region``; its backward is the identity), or under sequence parallelism reduce-scatters
  (``reduce_scatter_to_sequence_parallel_region``, whose backward all-gathers the gradient) -- unless the model has
  learned absolute positions (language_model_embedding.py@core_v0.16.1 L48-53: ``reduce_scatter_embeddings`` only
  without them): then the all-reduce, and the split to the sequence shard (L135-138), whose backward all-gathers.
  The output layer is Megatron-Core's own ``tensor_parallel.ColumnParallelLinear`` (gpt_model.py@core_v0.16.1 L241,
  not a TE linear: TE's comm overlap and its hidden dgrad share, StepSettings.tp_overlap, do not reach it). Its
  forward all-gathers the sequence-sharded input under SP (layers.py L478-484, synchronous); its backward
  (``LinearWithGradAccumulationAndAsyncCommunication.backward``, L495-625) all-gathers the input again for the
  weight gradient asynchronously beside the dgrad GEMM (L515-535), then issues the input gradient's all-reduce (no
  SP, L542-544) or reduce-scatter (SP, L548-557) asynchronously and runs the wgrad GEMM before waiting (L618-624):
  each hides up to the GEMM it is issued beside (the same tokens x h x V / tp shape as the forward's).
* GPT-NeoX@e59c873 (the Llemma and Pythia runs) and Megatron-DeepSpeed: ``VocabParallelEmbedding`` all-reduces
  (megatron/mpu/layers.py L209 ``reduce_from_model_parallel_region``) and ``ColumnParallelLinear.forward`` sets up
  the backward all-reduce with ``copy_to_model_parallel_region`` (L553; mappings.py L110-124: ``_reduce`` in
  backward), a synchronous autograd function after the linear's backward: nothing hides it. Under
  ``fp32_allreduce`` both are ``_reduce`` calls, cast like the layers' (core.comm.tp_comm_dtype).
* torchtitan (models/llama3/infra/parallelize.py@f18e68c6 L177-186): ``tok_embeddings`` RowwiseParallel with
  Replicate input and Shard(1) output -- a reduce-scatter forward, an all-gather of the gradient backward; ``output``
  ColwiseParallel with Shard(1) input and (loss_parallel, the default) Shard(-1) output -- an all-gather forward, a
  reduce-scatter of the input gradient backward. DTensor redistributes synchronously and torch.compile, which async
  TP needs, wraps each TransformerBlock only (L262-267), so neither is hidden. That plan has no switch; torchtitan
  since "Decouple SP with TP" (aa68af18e, 2026-03-29; at b5bcd76, config/configs.py L169 ``parallelism.
  enable_sequence_parallel``, default True, read by trainer.py L299-301) has one, which --no-sequence-parallel is:
  off, the embedding's Partial output goes to Replicate and the output layer takes a Replicate input
  (models/common/decoder_sharding.py@b5bcd76 L341-376, ``set_decoder_sharding_config``) -- the embedding's
  all-reduce forward and the output layer's of its input gradient backward, as charged here (no SP).

So each is one TP exchange -- an all-reduce, or a reduce-scatter + all-gather pair under SP -- timed as the layers'
(core.comm.step_comm: the same buffer, group and NCCL model), exposed but for Megatron-Core's output layer as above.
Stages: pp 1 holds both; with pp > 1 the first stage holds the embedding and the last the output layer, and the
step's collectives are counted on the first stage's (core.time.step.step_time), so the embedding's exchange
alone -- never less exposed than the output layer's. The 'output layer' row then shows 0 calls (core.time.step's
first stage holds none), and the first stage's embedding charge stands as an upper bound for the last stage's output
layer: a reduce-scatter + all-gather (SP) or an all-reduce either way, exposed on the first stage, partly hidden
under Megatron-Core on the last. With LoRA (``finetune`` not 'full') the frozen embedding computes no gradient, so
under SP its backward all-gather is not charged. Each MTP module (core.model.mtp) looks the embedding up and runs the
output layer once more (Megatron-Core's multi_token_prediction.py: _get_embeddings, process_mtp_loss): charged at pp 1,
where one stage holds them; with pp > 1 they sit on the last stage, which the first stage's charge does not bound
then (not charged). Not charged either: torchtitan with loss parallelism turned off (a gather of the logits). Units:
seconds, bytes.
"""

from __future__ import annotations

import numpy as np

from gpuplan.core.bulk import minimum
from gpuplan.core.comm.collective_cost import CollectiveCost
from gpuplan.core.time.efficiency import gemm_efficiency
from gpuplan.core.time.low_precision import attention_head_peak


def output_gemm_pass_seconds(spec, gpu, settings, tp, tokens):
    """Seconds of one pass of the output layer's GEMM on ``tokens`` tokens (2 V h / tp FLOPs a token, at the LM head's
    peak and core.time.efficiency's GEMM efficiency at min(h, tokens)): its forward, its dgrad and its wgrad are each
    one (core.time.step's head time is 2 or 3 of them)."""
    h = spec.hidden_size
    flops = tokens * 2.0 * spec.vocab_size * h / tp
    return flops / (attention_head_peak(gpu, settings.dtype)
                    * gemm_efficiency(gpu, minimum(h, tokens), settings.gemm_d_half))


def megatron_core_output(settings) -> bool:
    """Whether Megatron-Core's GPTModel runs the output layer (its async dgrad collectives): StepSettings.megatron_loss
    is set exactly where its vocab-parallel loss runs on that layer's logits (--framework megatron, the NeMo /
    Megatron-Bridge rows); GPT-NeoX, Megatron-DeepSpeed, Megatron-LM 2021 and torchtitan leave it None. Not where
    --tp-overlap 0 is stated (StepSettings.tp_synchronous: the GPT-NeoX v1.0 Pythia rows, which run under the default
    --framework megatron but whose mappings reduce synchronously)."""
    return bool(settings.megatron_loss) and not settings.tp_synchronous


def embedding_output_costs(spec, settings, *, tp, pp, micro_batches, buffer, seconds, group, casts, output_pass):
    """(embedding, output layer) CollectiveCosts of one step on the TP group (``group``: its links). ``buffer``: bytes
    of one call (the layers', widened under fp32_allreduce); ``seconds(kind)``: one call's seconds of an NCCL
    collective on it (core.comm.step_comm); ``casts``: seconds of one call's fp32 casts (0 unless fp32_allreduce);
    ``output_pass``: one pass of the output GEMM per micro-batch (output_gemm_pass_seconds: what Megatron-Core hides
    the output layer's backward behind)."""
    sp = settings.sequence_parallel
    on = np.asarray(tp) > 1
    mega = megatron_core_output(settings)
    # one label for every row: ``casts`` is 0.0, or > 0 in every row (tp_comm_dtype.cast_seconds: two kernels' fixed
    # time + their bytes) -- never mixed, as fp32_allreduce is one setting for all rows; any() names what is charged
    fp32 = ", fp32 + bf16<->fp32 casts" if np.any(casts) else ""
    if sp and mega and spec.learned_positions:  # all-reduce, then the split whose backward all-gathers (L135-138)
        embed_one, embed_kind, embed_what = seconds("all_reduce") + seconds("all_gather"), "all_reduce", "AR + AG (SP)"
    elif sp:
        embed_one, embed_kind, embed_what = seconds("reduce_scatter") + seconds("all_gather"), "reduce_scatter", \
            "RS + AG (SP)"
    else:
        embed_one, embed_kind, embed_what = seconds("all_reduce"), "all_reduce", "all-reduce (no SP)"
    if sp and settings.finetune != "full":  # a frozen embedding (LoRA) has no gradient: its backward AG never runs
        embed_one = embed_one - seconds("all_gather")
    # + each MTP module's own lookup and output layer where the stage holds them (pp 1: megatron/core/transformer/
    # multi_token_prediction.py@d98e8a6 L1302 embedding(...) in _get_embeddings, L1013 output_layer(...) per module)
    copies = 1 + spec.mtp_layers * (np.asarray(pp) == 1)
    embed_calls = micro_batches * on * copies
    embed_seconds = embed_calls * (embed_one + casts)
    embed = CollectiveCost("TP", f"embedding (vocab-parallel), {embed_what}{fp32}", embed_calls, buffer, tp,
                           embed_seconds, embed_seconds, embed_kind, group)
    grads = 1.0 if settings.finetune == "full" else 0.0  # a frozen output layer has no wgrad GEMM to hide behind
    if sp:  # forward all-gather, backward reduce-scatter of the input gradient
        gather, scatter = seconds("all_gather"), seconds("reduce_scatter")
        total = exposed = gather + scatter
        if mega:  # + the backward's re-gather for wgrad beside dgrad; the RS beside wgrad (L515-557)
            total = gather * (1 + grads) + scatter
            exposed = (gather + grads * np.maximum(0.0, gather - output_pass)
                       + np.maximum(0.0, scatter - grads * output_pass))
    else:  # the input gradient's all-reduce in backward, beside wgrad under Megatron-Core (L542-544)
        total = exposed = seconds("all_reduce")
        if mega:
            exposed = np.maximum(0.0, total - grads * output_pass)
    out_calls = micro_batches * on * (np.asarray(pp) == 1) * copies
    hidden = ", backward beside the output GEMMs" if mega else ""
    out = CollectiveCost("TP", f"output layer, {'AG + RS (SP)' if sp else 'all-reduce (no SP)'}{hidden}{fp32}",
                         out_calls, buffer, tp, out_calls * (total + casts), out_calls * (exposed + casts),
                         "all_gather" if sp else "all_reduce", group)
    return embed, out


