"""A training campaign's document: a ``stages:`` list of budget plans, read and checked before any stage runs.

The document is a mapping (a YAML / TOML plan file, a JSON body, a Python dict). ``stages`` is a list of 1 to
MAX_STAGES mappings, each of exactly the fields a `gpuplan budget` plan file takes (BudgetInputs: the same schema
object, its own refusals) plus an optional ``name``. Every other top-level key is a budget field that each stage
inherits unless it states its own; a top-level ``name`` titles the campaign. A refusal names the stage by its
position in the list, counted from 0 as JSON and Python count (``stages[2].gpus: got ...``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from gpuplan.errors import CAMPAIGN_KEY, STAGES_NULL_TEXT, InputError, closest_names, null_refusal, printable

MAX_STAGES = 32
"""Stages in one campaign: Llama 3's campaign had four phases (pre-training, two long-context steps, annealing;
arXiv:2407.21783 Sec. 3.4) and OLMo 3 7B's three; 32 is far past any published one and bounds the work of one ask."""
MAX_NAME_CHARS = 64
"""Characters of a stage's (or the campaign's) name: a label for the table row."""
STAGES_KEY = CAMPAIGN_KEY
NAME_KEY = "name"
Prepare = Callable[[dict[str, Any]], dict[str, Any]]
"""A face's own reading of a stage's raw fields before the schema sees them (the CLI: paths beside the plan file;
the web API: catalog models only, never a path)."""


@dataclass(frozen=True)
class CampaignStage:
    """One stage: ``index`` its position in ``stages`` (from 0), ``name`` its label, ``raw`` the fields it runs on
    (the campaign's defaults with the stage's own keys over them, as written) and ``inputs`` those fields checked by
    the budget's schema (BudgetInputs)."""

    index: int
    name: str
    raw: Mapping[str, Any]
    inputs: Any

    @property
    def label(self) -> str:
        """How refusals name the stage: ``stages[2]``."""
        return stage_label(self.index)


def stage_label(index: int) -> str:
    """The stage at ``index`` (from 0) as refusals name it: ``stages[2]``."""
    return f"{STAGES_KEY}[{index}]"


@dataclass(frozen=True)
class Campaign:
    """A checked campaign: its title and its stages, run one after another in this order."""

    title: str
    stages: tuple[CampaignStage, ...]
    where: str | None = None
    """The plan file it was read from (None: a body or a mapping), named before every refusal's field."""


def read_campaign(document: Any, where: str | None = None, prepare: Prepare | None = None) -> Campaign:
    """Check ``document`` (module docstring) and every stage by the budget's schema, before anything runs: the first
    fault is an InputError naming it (``where``: the plan file's name, put before the field as plan-file refusals
    are). ``prepare``: the face's reading of a stage's raw fields (Prepare)."""
    from gpuplan.jobs.budget.schema import BudgetInputs

    head = f"{printable(str(where))}: " if where else ""
    if not isinstance(document, Mapping):
        raise InputError(where or "campaign", type(document).__name__, "expected a mapping with a `stages:` list")
    stages = _stage_list(document, head)
    fields = BudgetInputs.model_fields
    defaults = {k: v for k, v in document.items() if k not in (STAGES_KEY, NAME_KEY)}
    _known_keys(defaults, fields, head, (STAGES_KEY, NAME_KEY))
    defaults = prepare(dict(defaults)) if prepare else defaults  # the face's reading first: the web's catalog check
    BudgetInputs.check_values(defaults, where)  # a default every stage overrides is still a value written
    title = _name(document, f"{head}{NAME_KEY}", "")
    checked: list[CampaignStage] = []
    for index, stage in enumerate(stages):
        label = f"{head}{stage_label(index)}"
        if not isinstance(stage, Mapping):
            raise InputError(label, _kind(stage), f"expected a mapping of `gpuplan budget` fields (and a `{NAME_KEY}`)")
        name = _name(stage, f"{label}.{NAME_KEY}", f"stage {index + 1}")
        if any(done.name == name for done in checked):
            raise InputError(f"{label}.{NAME_KEY}", name, "is the name of an earlier stage; give each stage its own")
        own = {k: v for k, v in stage.items() if k != NAME_KEY}
        if STAGES_KEY in own:  # not 'did you mean storage?' (hostile wave 22, H's item 1)
            raise InputError(f"{label}.{STAGES_KEY}", own[STAGES_KEY], "stages do not nest: each stage is one "
                             "`gpuplan budget` run; list every stage in the campaign's own `stages:`")
        _known_keys(own, fields, f"{label}.", (NAME_KEY,))
        with _named(label, head):
            own = prepare(dict(own)) if prepare else own
            raw = _inherited(defaults, own) | own
            BudgetInputs.check_values(own, where)
            inputs = BudgetInputs.parse(raw, where)
        checked.append(CampaignStage(index, name, MappingProxyType(raw), inputs))
    return Campaign(title, tuple(checked), where)


MODEL_KEYS = ("model", "params")
"""A stage naming its model either way replaces the inherited one, as a flag does a plan file's (commands.build
raw_inputs): a campaign of `params: 7B` whose last stage says `model: llama-3.1-8b` is not refused as both."""


def _inherited(defaults: Mapping[str, Any], own: Mapping[str, Any]) -> dict[str, Any]:
    """The defaults a stage inherits: all of them, less the inherited model when the stage names its own."""
    if any(key in own for key in MODEL_KEYS):
        return {k: v for k, v in defaults.items() if k not in MODEL_KEYS}
    return dict(defaults)


def _stage_list(document: Mapping[str, Any], head: str) -> list[Any]:
    """The ``stages`` value: a list of 1 to MAX_STAGES entries."""
    shape = f"a list of 1 to {MAX_STAGES} stages, each a mapping of `gpuplan budget` fields (docs/campaign.md)"
    if STAGES_KEY not in document:
        raise InputError(f"{head}{STAGES_KEY}", None, f"is required: {shape}")
    stages = document[STAGES_KEY]
    if stages is None:  # the plan file's and the web body's words (errors.STAGES_NULL_TEXT)
        raise InputError(f"{head}{STAGES_KEY}", "null", STAGES_NULL_TEXT)
    if not isinstance(stages, list | tuple):
        raise InputError(f"{head}{STAGES_KEY}", _kind(stages), f"must be {shape}")
    if not stages:
        raise InputError(f"{head}{STAGES_KEY}", "[]", f"is empty; give {shape}")
    if len(stages) > MAX_STAGES:
        raise InputError(f"{head}{STAGES_KEY}", f"{len(stages):,} stages", f"at most {MAX_STAGES}; {shape}")
    return list(stages)


def _known_keys(raw: Mapping[str, Any], fields: Mapping[str, Any], head: str, extra: tuple[str, ...]) -> None:
    """Every key a budget field (or one of ``extra``) and none null: else refused naming it (``head``: its place)."""
    for key, value in raw.items():
        if not isinstance(key, str):  # a Python caller's {1: 2}: the schema's words (schema.base.key_text)
            from gpuplan.schema.base import key_text

            raise InputError(f"{head}{key!r}", value, key_text(key))
        if key not in fields:
            near = closest_names(str(key), (*extra, *fields))
            hint = f"did you mean {', '.join(near)}? " if near else ""
            raise InputError(f"{head}{key}", value, f"unknown field; {hint}a campaign takes {', '.join(extra)} and "
                             "the fields of `gpuplan budget` (docs/cli.md)")
        _not_null(value, f"{head}{key}")


def _not_null(value: Any, field: str) -> Any:
    """``value``, refused naming ``field`` where it is null: every key of the document, the names too (a `name: null`
    was the default name in disguise at every door: hostile wave 27)."""
    if value is None:
        raise null_refusal(field)  # the one wording at every door (errors.NULL_TEXT)
    return value


def _name(mapping: Mapping[str, Any], field: str, default: str) -> str:
    """A stage's (or the campaign's) name, ``mapping``'s NAME_KEY: text of 1 to MAX_NAME_CHARS printable characters;
    ``default`` where absent, refused where null."""
    if NAME_KEY not in mapping:
        return default
    value = _not_null(mapping[NAME_KEY], field)
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_NAME_CHARS or not value.isprintable():
        raise InputError(field, value if isinstance(value, str) else _kind(value),
                         f"must be text of 1 to {MAX_NAME_CHARS} printable characters")
    return value.strip()


def _kind(value: Any) -> str:
    """A refused value's type as a message names it (a mapping or list is not quoted whole)."""
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list | tuple):
        return f"a list of {len(value)}"
    if value is None:  # `stages: [null]` (review s19b N2): the document's word, not NoneType
        return "null"
    return value if isinstance(value, str | int | float | bool) else type(value).__name__


@contextmanager
def _named(label: str, head: str) -> Iterator[None]:
    """Re-label any InputError raised inside as the stage's: ``head`` (the file) then ``stages[i].`` before the
    field the schema named, once (a field already inside the stage is left as it is)."""
    try:
        yield
    except InputError as exc:
        raise in_stage(exc, label, head) from None


def in_stage(exc: InputError, label: str, head: str = "") -> InputError:
    """``exc`` naming its field inside the stage ``label`` (``head``: the file's name and ': ', or '')."""
    field = exc.field
    if field.startswith(label):
        return exc
    if head and field.startswith(head):
        field = field[len(head):]
    return exc.retold(f"{label}.{field}", exc.value, exc.expected)
