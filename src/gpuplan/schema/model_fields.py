"""The fields that name the model of a job: a catalog name / Hugging Face id / config.json, or a
bare parameter count, and how to read a config.json whose model_type gpuplan does not know."""

# No `from __future__ import annotations` here: pydantic then reads the fields' annotations as the
# objects they are, not as text it compiles and evaluates per field when the class is made (issue 39).

from typing import Annotated

from pydantic import model_validator

from gpuplan.errors import InputError
from gpuplan.schema import types as T
from gpuplan.schema import vocabulary as V
from gpuplan.schema.base import JobInputs
from gpuplan.schema.precision_rules import check_default_dtype, follow_recipe
from gpuplan.schema.tpu_rules import follow_device
from gpuplan.schema.vendor_rules import check_vendor_options

DEFAULT_PARAMS = 7e9  # the article's 7B example

ModelType = Annotated[T.Name | None, V.field(
    None, "Read the config.json as this model_type when its own is not supported, e.g. llama (Llama-style: "
          "gated MLP, RMSNorm, no biases).", "the config's own")]


class ModelFields(JobInputs):
    """model | params, and the model_type override."""

    model: V.Model
    params: V.Params
    model_type: ModelType

    @model_validator(mode="after")
    def _one_model(self) -> "ModelFields":
        if self.model is not None and self.params is not None:
            raise InputError("model/params", f"{self.model} / {self.params:g}", "give either a model or --params, "
                             "not both")
        pasted = getattr(self, "config", None) is not None  # the API's request model: a pasted config.json
        if self.model_type is not None and self.model is None and not pasted:
            raise InputError("model_type", self.model_type, "applies to a model's config.json (give --model)")
        return self

    @property
    def model_params(self) -> tuple[str | None, float | None]:
        """(model, params) with the article's bare 7B when neither was given."""
        if self.model is None and self.params is None:
            return None, DEFAULT_PARAMS
        return self.model, self.params

    def spec(self):
        """The ModelSpec these fields name."""
        from gpuplan.adapters.resolve import resolve_model

        model, params = self.model_params
        return job_spec(self, resolve_model(model, params, model_type=self.model_type,
                                            checkpoint_format=reads_checkpoint_format(self)))

    def follow_model(self) -> "ModelFields":
        """The sequence length the model sets where none was given (follow_position_limit), a training ask's
        framework on a TPU with its CUDA-only options (schema.tpu_rules.follow_device), the compute dtype a --recipe
        names where --dtype was not given (schema.precision_rules.follow_recipe), and those options on Intel
        Gaudi / Huawei Ascend parts (schema.vendor_rules)."""
        follow_position_limit(self)
        follow_device(self)
        follow_recipe(self)  # --dtype left out: the compute dtype --recipe names (fp8), schema.precision_rules
        check_default_dtype(self)  # --dtype left out on a --gpu without bf16: refused naming gpu, the option typed
        check_vendor_options(self)
        return self

    def model_position_limit(self) -> int | None:
        """The model's position limit (position_limit: its learned table, else max_position_embeddings); None where
        there is no model or it cannot be read (refused where the job reads it, spec, with the message it always
        had). The web API's request models replace this with a reading that opens no path and calls no Hub
        (web.models.door_position_limit)."""
        return position_limit_of(self)


def position_limit(spec) -> int:
    """Tokens a sequence of ``spec`` may hold as its config states it: the rows of a learned position table (GPT-2's
    n_positions), else max_position_embeddings (a RoPE / ALiBi model's trained length: PaLM's 2,048, Pythia's
    2,048; the spec's 4,096 where the config has none, core.model.spec.ModelSpec)."""
    return spec.learned_positions or spec.max_position_embeddings


def position_limit_of(inputs) -> int | None:
    """ModelFields.model_position_limit for any job schema with ``model`` (and perhaps ``model_type``): the
    model resolved as the job resolves it (a catalog name, a config.json, a Hub id)."""
    if inputs.model is None:
        return None
    from gpuplan.adapters.resolve import resolve_model

    try:  # read as the job reads it (the same build, kept by adapters.resolve.spec_of_config)
        return position_limit(resolve_model(inputs.model, None, model_type=getattr(inputs, "model_type", None),
                                            checkpoint_format=reads_checkpoint_format(inputs)))
    except InputError:
        return None


def reads_checkpoint_format(inputs) -> bool:
    """Whether the job reads the checkpoint's quantization_config (and so checks it): not where infer
    --quantization names a format other than auto, which replaces the checkpoint's."""
    return getattr(inputs, "quantization", "auto") == "auto"


def follow_position_limit(inputs) -> None:
    """A sequence length left to its default is min(default, the model's position limit): GPT-2's learned table of
    1,024 (no framework runs a row past it, check_positions), PaLM's or Pythia's max_position_embeddings of 2,048
    (the length they were trained at; a RoPE / ALiBi model may run longer, so a typed longer one is planned as
    typed). One rule for train, budget, plan, memory, measure and profile: run by JobInputs' first after-validator
    (``inputs``: a job schema with ``model`` and ``seq_len``), so every later check reads it; sequence_note says so
    in the answer. The limit is ``inputs.model_position_limit()``: in the web API's request models a catalog entry
    or the pasted config.json only, never a path or the Hub a request names (web.models.door_position_limit)."""
    if "seq_len" not in type(inputs).model_fields or "seq_len" in inputs.model_fields_set:
        return
    reader = getattr(inputs, "model_position_limit", None)  # ModelFields' (the web door's in request models)
    limit = reader() if reader is not None else position_limit_of(inputs)
    if limit and limit < inputs.seq_len:
        inputs.__dict__["seq_len"] = limit  # frozen for callers; set once, before any check reads it


def sequence_note(inputs, spec) -> str | None:
    """The note an answer carries where its sequence length is the model's position limit in place of the
    default (follow_position_limit); None otherwise."""
    field = type(inputs).model_fields.get("seq_len")
    limit = position_limit(spec)
    if (field is None or "seq_len" in inputs.model_fields_set or not inputs.seq_len == limit < field.default):
        return None
    if spec.learned_positions:
        return (f"sequence length {inputs.seq_len:,}: {spec.name}'s learned position table has {limit:,} rows, "
                f"fewer than the {field.default:,}-token default (--seq-len sets it, up to {limit:,})")
    return (f"sequence length {inputs.seq_len:,}: {spec.name}'s max_position_embeddings is {limit:,}, below the "
            f"{field.default:,}-token default (--seq-len sets it; a longer one is planned as typed)")


def job_spec(inputs, spec):
    """``spec`` as the job ``inputs`` reads it (ModelFields.spec, profile's RealModelInputs.spec): its sequence
    length checked against the learned positions (check_positions), sequence_note among its notes (the answers
    of train, plan and memory show them), then the job's own adjust_spec (SetupFields' MTP modules trained,
    plan's --gpus range note)."""
    check_positions(spec, getattr(inputs, "seq_len", None))
    note = sequence_note(inputs, spec)
    if note is not None:
        from dataclasses import replace

        spec = replace(spec, notes=(*spec.notes, note))
    return inputs.adjust_spec(spec)


def check_positions(spec, seq_len: int | None) -> None:
    """A sequence within a learned position table (GPT-2's n_positions): its nn.Embedding has no row past
    it, so no framework runs one (`profile gpt2 --seq-len 2048`: IndexError, exit 70; train and measure
    answered for it). RoPE and ALiBi models may run longer sequences (with a quality note in `infer`)."""
    if seq_len and spec.learned_positions and seq_len > spec.learned_positions:
        raise InputError("seq_len", seq_len, f"is past {spec.name}'s {spec.learned_positions:,} learned positions "
                         f"(n_positions: a table with no row beyond it); at most {spec.learned_positions:,}")
