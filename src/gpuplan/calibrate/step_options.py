"""The step options calibrate takes from train (calibrate.schema declares each with train's own field) and what a
calibration records of them (calibrate.model.Reference.options): names and the one reading of a job's inputs, with no
import, so the calibration loader (calibrate.model) reads them without the schema. Units: none."""

from __future__ import annotations

LOG_STEP_OPTIONS = ("recipe", "fp8_recipe",
                    # the layout's own (schema.training_fields.LayoutFields)
                    "vpp", "cp", "etp", "recompute_modules", "recompute_layers", "partition_activations",
                    # how the step runs (SetupFields)
                    "compile", "implementation", "optimizer", "optimizer_impl", "loss", "finetune", "lora_rank",
                    "grad_dtype", "moment_dtype", "low_precision_weights", "embedding_loss_slots", "offload_layers",
                    "mtp_layers",
                    # the step model's cluster and knobs (StepFields)
                    "gpus_per_node", "nic_gbit_per_gpu", "dp_overlap", "tp_overlap", "tp_comm_overlap", "tp_comm_dtype", "sequence_parallel",
                    "grad_all_reduce", "ep_overlap", "ep_dispatcher", "ep_a2a_overlap", "flex_backend",
                    "moe_expert_kernels", "attention_kernel", "attention_efficiency", "fp8_attention",
                    "fsdp_float8_all_gather", "cuda_graph_scope", "full_iteration_graph")
"""calibrate options besides the layout, precision and --framework that change train's step or memory and that a log
does not state, passed to train's schema as given (not given: train's defaults, the framework's recipe among them).
calibrate declares each with train's own field (calibrate.schema._train). Left out: --shard-group (its auto is a
search, and the step calibrate times takes no HSDP group; docs/calibration.md), --global-batch-tokens (--global-batch
states the batch), --margin and --allocator (the reserve a plan keeps, not the allocated peak calibrate fits), and the
budget's options."""


LAYOUT_OPTIONS = ("cp", "vpp", "tp_overlap")
"""Options calibrate.model.Reference.layout records by the value timed (a plan's layout may choose cp and vpp, and
--tp-overlap not given is the framework's share): compared there (jobs.calibration_notice.layout_warning)."""
GIVEN_ONLY = ("dp_overlap",)
"""Options the step reads only where given (jobs.plan.step_settings: --dp-overlap caps the schedule's overlap when
given, its 0.9 default is not read): recorded as null where not given."""
RECORDED_OPTIONS = tuple(name for name in LOG_STEP_OPTIONS if name not in LAYOUT_OPTIONS)
"""calibrate.model.Reference.options' keys."""


def option_values(inputs) -> dict:
    """{option: value} of training ``inputs`` (a log's PlanInputs, or a plan's train / plan / memory inputs) for each
    of RECORDED_OPTIONS its schema has (memory's lacks the step's overlaps: left out), as JSON holds them (a tuple as
    a list): what calibrate.model.Reference.options records and jobs.calibration_notice.options_warning compares."""
    fields, given = type(inputs).model_fields, inputs.given
    values = {name: getattr(inputs, name) if name in given or name not in GIVEN_ONLY else None
              for name in RECORDED_OPTIONS if name in fields}
    return {name: list(value) if isinstance(value, tuple) else value for name, value in values.items()}
