"""The base of every job's input schema, and the translation of schema violations into the one
error gpuplan shows everywhere (InputError: field, value, what would be valid).

A job schema is a frozen pydantic model whose fields come from gpuplan.schema.vocabulary (shared
options: same name, meaning and default in every command) or are the job's own. The CLI builds
its options from the fields, plan files are checked against them, FastAPI uses the model as the
request body, and the Python API constructs it directly: one schema, one set of messages.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from gpuplan.errors import CAMPAIGN_KEY, InputError, PythonNone, a_or_an, as_typed, closest_names, null_refusal


def _where(loc: tuple, prefix: str | None) -> str:
    field = ".".join(str(part) if str(part) else "''" for part in loc) or "inputs"  # a key '' named as such
    return f"{prefix}: {field}" if prefix else field


def input_error(exc: ValidationError, schema: type[BaseModel], prefix: str | None = None) -> InputError:
    """The first violation of ``exc`` as an InputError naming the field (``prefix``: where the
    value came from, e.g. a plan file's name)."""
    return error_from_detail(exc.errors(include_url=False)[0], tuple(schema.model_fields), prefix)


def error_from_detail(err: Mapping[str, Any], valid: tuple[str, ...] = (), prefix: str | None = None) -> InputError:
    """One pydantic error (a dict of ``ValidationError.errors()``) as an InputError; ``valid``
    names the fields to suggest for an unknown one. FastAPI's 422 uses this too, so the API and
    the CLI print the same message."""
    loc = tuple(part for part in err.get("loc", ()) if part not in ("body", "query"))
    kind, value = err.get("type", ""), err.get("input")
    original = (err.get("ctx") or {}).get("error")
    if isinstance(original, InputError):
        field = original.field if not loc else _where(loc, None)
        if isinstance(original.field, str) and original.field.startswith(f"{field}: "):
            field = original.field  # a place inside the field ('calibration: factors.x'), as the web API names it
        if prefix:
            field = f"{prefix}: {field}"
        return InputError(field, original.value, original.expected)
    field = _where(loc, prefix)
    if kind == "extra_forbidden":
        near = closest_names(str(loc[-1]) if loc else "", valid)
        hint = f"did you mean {', '.join(near)}? " if near else ""
        listing = f"valid fields: {', '.join(valid)}" if valid else "see the schema for the valid fields"
        return InputError(field, value, f"unknown field; {hint}{listing}")
    if kind == "literal_error":
        expected = str((err.get("ctx") or {}).get("expected", "")).replace("'", "")
        return InputError(field, value, f"must be one of {expected.replace(' or ', ', ')}")
    if kind == "missing":
        return InputError(field, None, "is required")
    if kind.endswith("_type") or kind.endswith("_parsing"):
        return InputError(field, value, err.get("msg", "has the wrong type").lower())
    message = str(err.get("msg", "is invalid"))
    return InputError(field, value, message[len("Value error, "):] if message.startswith("Value error, ") else message)


def key_refusal(key: Any, value: Any, where: str | None = None) -> InputError:
    """A mapping key that is no text (a YAML plan file's `1: 2` / `true: x`, a Python caller's {1: 2}): one wording at
    every door, a plan file's refusal prefixed with its name (session 25: a file said 'is not valid YAML (line 3):
    keys must be names (text), got 1', Python '1: got 2; is not a field name (an int)'). JSON keys are always text."""
    shown = value if value is not None else "null" if where else PythonNone()  # `1: null`, {1: None}
    return InputError(f"{where}: {key!r}" if where else repr(key), shown, key_text(key))


def key_text(key: Any) -> str:
    """What key_refusal says of ``key`` (a YAML plan file's unhashable top-level key says it too)."""
    return f"is not a field name ({a_or_an(type(key).__name__)}); field names are text, e.g. 'model'"


def campaign_refusal(stages: Any, where: str | None = None) -> InputError:
    """The refusal of a campaign's ``stages`` given to a one-run job (a plan file's: ``where`` its name): wave 22
    found `gpuplan budget campaign.yaml` told 'name: unknown field; valid fields: ...' or 'stages: ... did you mean
    storage?'."""
    shown = f"a list of {len(stages)} stage{'s' * (len(stages) != 1)}" if isinstance(stages, list | tuple) else stages
    return InputError(f"{where}: {CAMPAIGN_KEY}" if where else CAMPAIGN_KEY, shown,
                      "a `stages:` list makes a campaign, each stage a run of its own: give it to `gpuplan campaign "
                      "FILE`, POST /api/campaign or gpuplan.estimate_campaign (docs/campaign.md)")


def _check_mapping(raw: Any, where: str | None = None) -> None:
    """Refuse raw inputs that are no mapping, or a key that is no text ({1: 2}: pydantic's bare TypeError, wave 27),
    naming ``where`` (a plan file's name; None: the Python caller's inputs): JobInputs.parse's and model_validate's
    one check."""
    if not isinstance(raw, Mapping):
        raise InputError(where or "inputs", type(raw).__name__, "expected a mapping of field names to values")
    for odd in (k for k in raw if not isinstance(k, str)):
        raise key_refusal(odd, raw[odd], where)


@contextmanager
def _source(where: str | None) -> Iterator[None]:
    """Values are read from ``where`` (a plan file's name; None: flags, an API body, Python) while
    inside: types.seconds reads a plan file's bare number as the command line's text. A context
    variable, not pydantic's validation context, which JobInputs' own __init__ does not pass on."""
    from gpuplan.schema.types import PLAN_FILE

    token = PLAN_FILE.set(where)
    try:
        yield
    finally:
        PLAN_FILE.reset(token)


class JobInputs(BaseModel):
    """Base of the job schemas: unknown fields refused, values immutable after checking.

    Construct directly (``TrainingInputs(params="7B", tokens="2T")``) or with :meth:`parse` from
    raw values; both raise InputError naming the first bad field."""

    # defer_build: a schema's validator is built on first use, so a command pays only for its own
    # schema (not for the bases and siblings it imports) at start-up.
    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True,
                              validate_default=False, protected_namespaces=(), defer_build=True)

    def __init__(self, /, **data: Any) -> None:  # /: a field named self is refused as unknown, not a TypeError
        try:
            super().__init__(**data)
        except ValidationError as exc:  # a cross-field check quoting a converted value: the text passed
            loc = exc.errors(include_url=False)[0].get("loc", ())
            if len(loc) == 1 and loc[0] in type(self).model_fields and data.get(loc[0], ...) is None:
                # a Python None the field's type refuses: the files' and the web's words (not a cross-field rule
                # naming a field left None, nor an unknown key given None: an unknown field, as over the web)
                raise null_refusal(loc[0], python=True) from None
            raise as_typed(input_error(exc, type(self)), data) from None
        _remember_typed(self, data)

    @model_validator(mode="before")
    @classmethod
    def _not_a_campaign(cls, data: Any) -> Any:
        """A campaign's ``stages`` list given to a one-run job is named with what runs it (campaign_refusal), before
        any other key of the campaign reads as an unknown field of this job."""
        if isinstance(data, Mapping) and CAMPAIGN_KEY in data and CAMPAIGN_KEY not in cls.model_fields:
            raise campaign_refusal(data[CAMPAIGN_KEY])
        return data

    @model_validator(mode="after")
    def _defaults_from_the_model(self) -> Self:
        """Defaults that follow the model the inputs name (ModelFields.follow_model: GPT-2's 1,024 positions
        for the 4,096-token sequence), set before any other check reads them: pydantic runs the after-validators
        of the bases first, and this is the base of every job schema."""
        return self.follow_model()

    def follow_model(self) -> Self:
        """These inputs with the defaults the model sets (as they are: a job without a model)."""
        return self

    @classmethod
    def parse(cls, raw: Mapping[str, Any], where: str | None = None) -> Self:
        """Check raw values (flags, plan-file fields, an API body); ``None`` means not given."""
        _check_mapping(raw, where)
        data = {k: v for k, v in raw.items() if v is not None}
        with _source(where):
            try:
                inputs = super().model_validate(data)  # pydantic's own: JobInputs.model_validate is the caller's door
            except ValidationError as exc:
                raise as_typed(input_error(exc, cls, where), data) from None
        return _remember_typed(inputs, data)

    @classmethod
    def model_validate(cls, obj: Any, **options: Any) -> Self:
        """Pydantic's model_validate refusing as the constructor does (session 25: it raised pydantic's
        ValidationError, not InputError naming the field): a mapping is the constructor's keywords, an instance of
        the class is returned as it is; ``options`` (strict, context, ...) go to pydantic, its refusal converted."""
        if options:
            try:
                return _remember_typed(super().model_validate(obj, **options), obj if isinstance(obj, Mapping) else {})
            except ValidationError as exc:
                raise as_typed(input_error(exc, cls), obj if isinstance(obj, Mapping) else {}) from None
        if isinstance(obj, cls):
            return obj
        _check_mapping(obj)
        return cls(**obj)

    @classmethod
    def model_validate_json(cls, json_data: str | bytes | bytearray, **options: Any) -> Self:
        """JSON text read as the web API reads a body (web.body.read_body's rules: one object, each key once --
        pydantic's own kept the last of a key given twice --, no null for a field), then checked by :meth:`parse`;
        InputError naming the field. ``options`` are not read."""
        import json

        from gpuplan.adapters.keys_once import KeysOnce

        keys = KeysOnce()  # the web body's reader of repeated keys (web.body.read_body)
        try:
            data = json.loads(json_data, object_pairs_hook=keys)
        except (ValueError, RecursionError) as exc:  # JSONDecodeError, bad UTF-8, too deep
            raise InputError("inputs", type(json_data).__name__, f"is not one valid JSON object ({exc})") from None
        keys.check("inputs", "the JSON")
        if not isinstance(data, dict):
            raise InputError("inputs", type(data).__name__, "expected a JSON object of field names to values")
        for name in (k for k, v in data.items() if v is None):
            raise null_refusal(name)
        return cls.parse(data)

    @classmethod
    def model_validate_strings(cls, obj: Any, **options: Any) -> Self:
        """Pydantic's model_validate_strings (field names to text, as the flags give them) refusing as the
        constructor does, which reads text ('7B', '8K'): InputError naming the field (hostile w30: pydantic's
        ValidationError, where model_validate and model_validate_json already refused so). ``options`` are not read."""
        _check_mapping(obj)
        return cls(**obj)

    @classmethod
    def check_values(cls, raw: Mapping[str, Any], where: str | None = None) -> None:
        """Check each value on its own, by its field's type and range only (no cross-field rules):
        a plan-file value a flag overrides is still a value the user wrote (``gpus: 1e400`` with
        ``--gpus 8`` was accepted), and a null is refused naming the key; a path inside the field that the refusal
        names is kept (``calibration: compute_time.value``: it was cut to ``calibration``, hostile wave 27b)."""
        from typing import Annotated

        from pydantic import TypeAdapter

        for name, value in raw.items():
            field = cls.model_fields.get(name)
            if field is None:
                continue  # unknown keys are refused by parse, with the valid names
            if value is None:
                raise null_refusal(name, where)
            kind = Annotated[(field.annotation, *field.metadata)] if field.metadata else field.annotation
            adapter = TypeAdapter(kind)
            try:
                with _source(where):
                    adapter.validate_python(value)
            except (InputError, ValidationError) as exc:
                error = exc if isinstance(exc, InputError) else error_from_detail(exc.errors(include_url=False)[0])
                inner = error.field if error.field.startswith((f"{name}:", f"{name}.", f"{name}[")) else name
                raise InputError(f"{where}: {inner}" if where else inner, error.value, error.expected) from None

    def adjust_spec(self, spec):
        """A job's own reading of the model it names (ModelFields.spec); as is unless a job's
        fields say otherwise (training: SetupFields, the MTP modules trained)."""
        return spec

    @property
    def given(self) -> frozenset[str]:
        """The fields the user set (the rest are defaults): marks assumptions as set."""
        return frozenset(self.model_fields_set)

    def stated_otherwise(self, name: str, unstated: Any = None) -> bool:
        """Whether ``name`` was given a value other than its default: a rule that refuses an option where nothing
        reads it asks this, so a stated default is answered, as unstated (the lead's rule, review w16 R5 S3; wave
        18: --lora-rank 16 without adapters, --sequence-parallel under --framework hf were refused). The default is
        the field's, and ``unstated`` too where given: the value the option is read as when left out, where the
        field default is None or another (--flex-backend deepep, infer's --free-gpu-memory-fraction 0.9, the
        framework's --tp-overlap). The one shape of the rule (review of wave 18, N4)."""
        if name not in self.model_fields_set:  # first: a rule may ask of a field this job does not have
            return False
        value = getattr(self, name)
        return value != type(self).model_fields[name].default and (unstated is None or value != unstated)

    def replace(self, **changes: Any) -> Self:
        """A copy with ``changes`` applied and checked again (what was typed for the rest kept, and the text of
        ``changes``: a later refusal quotes `days='90min'`, not 0.0625)."""
        copy = type(self)(**(self.given_values() | changes))
        return _remember_typed(copy, {k: v for k, v in typed_values(self).items() if k not in changes} | changes)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy. With ``update``, :meth:`replace`: the changes checked again and the defaults that follow the
        model set anew (pydantic's own model_copy does not validate: ``MemoryInputs(model="gpt2")
        .model_copy(update={"model": "llama-2-7b"})`` kept gpt2's 1,024-token seq_len). Without, pydantic's copy
        with the text the caller passed kept (refusals quote it)."""
        if update:
            return self.replace(**update)
        return _remember_typed(super().model_copy(deep=deep), typed_values(self))

    def __copy__(self) -> Self:  # copy.copy / copy.deepcopy keep the text passed, as model_copy() does
        return _remember_typed(super().__copy__(), typed_values(self))

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Self:
        return _remember_typed(super().__deepcopy__(memo), typed_values(self))

    def given_values(self) -> dict[str, Any]:
        """The fields the user set, as checked values (objects kept as they are)."""
        return {name: getattr(self, name) for name in self.model_fields_set}


_TYPED: dict[int, tuple[Any, dict[str, tuple[str, Any]]]] = {}
"""id(inputs) -> (a weak reference to them, {field: (the text the caller passed, the value it became)}): kept
beside the frozen model, not in it (pydantic compares private attributes, so equal inputs would not be equal)."""


def _remember_typed(inputs: JobInputs, raw: Mapping[str, Any]) -> Any:
    """Note the text ``raw`` gave each field of ``inputs`` (Python API refusals quote it: as_passed)."""
    import weakref

    typed = {k: (v, getattr(inputs, k)) for k, v in raw.items() if isinstance(v, str) and k in type(inputs).model_fields}
    if typed:
        key = id(inputs)
        _TYPED[key] = (weakref.ref(inputs, lambda _, key=key: _TYPED.pop(key, None)), typed)
    return inputs


def typed_values(inputs: Any) -> dict[str, str]:
    """The text the caller passed for each field of ``inputs`` whose value is still the one that text became
    (a model_copy(update=...) that changed a field drops its text); a mapping as it is."""
    if isinstance(inputs, Mapping):
        return dict(inputs)
    ref, typed = _TYPED.get(id(inputs), (None, {}))
    if ref is None or ref() is not inputs:
        return {}
    return {k: text for k, (text, value) in typed.items() if getattr(inputs, k, None) == value}


def as_passed(error: InputError, inputs: Any) -> InputError:
    """``error`` quoting what the Python API's caller passed for its field (``inputs``: the job's inputs, or
    the mapping given) where a check after parsing quoted the converted value (`days='90min'` refused as
    'got 0.0625'); errors.as_typed, as the CLI and web doors apply it to the flags or body."""
    return as_typed(error, typed_values(inputs))


def job_inputs(inputs: Any, schema: type[JobInputs]) -> Any:
    """``inputs`` for a job's estimate (the Python API): an instance of ``schema`` as it is, a
    mapping of its fields checked by it (JobInputs.parse); anything else, another job's inputs
    included, an InputError naming the schema (an AttributeError from deep in the estimate
    before: estimate_memory(TrainingInputs(...)), estimate_training({...}))."""
    if isinstance(inputs, schema):
        return inputs
    if isinstance(inputs, Mapping):
        return schema.parse(inputs)
    raise InputError("inputs", type(inputs).__name__, f"expected {schema.__name__}(...) or a mapping of its fields")
