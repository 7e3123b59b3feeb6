"""Pipeline stages as core.time.step.step_time splits and paces them: the decoder layers on one pipeline
rank, and which of the first (fullest) and last stage sets the step's micro-batch time. One rule for
step_time's once-a-step terms (core.time.titan_float8's float8 all-gather change, Megatron's FP8 weight
casts) and for the breakdown by op class (jobs.step_classes.paced_stage). Units: layers (counts) and the
seconds of one micro-batch on a stage; degrees may be scalars or numpy arrays."""

from __future__ import annotations

import numpy as np

from gpuplan.core.bulk import scalar_or_array
from gpuplan.core.memory.model_states import stage_span
from gpuplan.core.model.mtp import mtp_stage_layer_shed
from gpuplan.core.model.spec import ModelSpec


def rank_layers(spec: ModelSpec, pp, rank):
    """Decoder layers on pipeline rank ``rank`` of ``pp`` (core.memory.model_states.stage_span: the first ranks
    take a remainder, ceil-like, e.g. Llama 3.1 405B's 126 layers at pp 4: 32, 32, 31, 31; the last rank sheds
    layer slots to the others for any MTP modules: core.model.mtp.mtp_stage_layer_shed). Scalars or arrays."""
    return stage_span(spec.num_layers, pp, rank, mtp_stage_layer_shed(spec, spec.mtp_layers))[1]


def last_stage_paces(t_first, t_last):
    """True where the last stage's micro-batch (``t_last`` seconds: its layers, the LM head and its loss, any MTP
    modules) is slower than the first's (``t_first``), so step_time's t_mb = max(t_first, t_last) is the last
    stage's; ties and pp 1 keep the first. Scalars or arrays."""
    return np.asarray(t_last) > t_first


def paced_stage_layers(first_layers, last_layers, t_first, t_last):
    """Decoder layers on the stage that paces core.time.step.step_time's micro-batch (last_stage_paces): the last
    stage's ``last_layers`` where it is the slower (pp not dividing the layers: one layer fewer but the LM head;
    Llama 3.1 8B at pp 3, 11 / 11 / 10 layers), else the first's ``first_layers``. Each stage's time already holds
    its own layers' weight casts, so a once-a-step term that takes a cast off (torchtitan's float8 all-gather) or
    adds one (Megatron's FP8 weight cache) does so on the stage whose time the step keeps. Scalars or arrays."""
    return scalar_or_array(np.where(last_stage_paces(t_first, t_last), last_layers, first_layers))
