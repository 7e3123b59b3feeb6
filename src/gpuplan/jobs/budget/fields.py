"""The budget's own fields (data, checkpoints, failures, prices, spot, contingency shares), shared by
``gpuplan train`` / ``budget`` (jobs/budget/schema.py BudgetInputs) and ``gpuplan plan`` (whose
budget is that of its chosen layout). Apart from the training schema, so that `plan` does not build
the train and budget schemas it never uses (~4 ms of its start-up)."""

# No `from __future__ import annotations` here: pydantic then reads the fields' annotations as the
# objects they are, not as text it compiles and evaluates per field when the class is made (issue 39).

from typing import Annotated, Any, Literal

from pydantic import field_validator, model_validator

from gpuplan.core.economics import checkpoint as C
from gpuplan.core.economics import cost as K
from gpuplan.core.economics import io as IO
from gpuplan.core.economics.evaluation import DEFAULT_EVAL_ITERS, MAX_EVAL_INTERVAL, MAX_EVAL_ITERS
from gpuplan.core.economics import reliability as R
from gpuplan.errors import InputError
from gpuplan.jobs.budget.bounds import MAX_FAILURE_RATE, MAX_RESTART_SECONDS, MAX_SPOT_PREEMPTIONS
from gpuplan.schema import types as T
from gpuplan.schema import vocabulary as V
from gpuplan.schema.base import JobInputs
from gpuplan.schema.shard_group import fixed_shard_group

CONTINGENCY_NAMES = ("restarts", "tuning", "failures", "evaluation")
WEEK = MAX_RESTART_SECONDS  # a week in seconds: --restart's and --step-time's bound, named once


def _interval(value: Any, info) -> Any:
    if isinstance(value, str) and value.strip().lower() == "optimal":
        return "optimal"
    return T.seconds(365 * 86400.0)(value, info)


def _failures_share(value: Any, info) -> Any:
    if isinstance(value, str) and value.strip().lower() in ("modelled", "modeled", "model"):
        return "modelled"
    return T.share()(value, info)


def _token_bytes(value: Any, info) -> int:
    number = T.number(1, 8, whole=True)(value, info)
    if number not in (1, 2, 4, 8):
        raise InputError("token_bytes", value, "must be 2 or 4 (1 or 8 for unusual formats)")
    return number


MIN_GBPS = 1e-6
"""The least --storage-read / --storage-write / --host-copy taken, GB/s: 1 kB/s a node. The rates are per node, so a
small filer's share behind a large cluster is small: 4 GB/s over 1,024 nodes is 0.0039 GB/s, and such asks are answered
(review s20 M3: wave 22's first floor, 1 MB/s, refused 0.0005). Below it `--storage-read 1e-300` printed a
2.1e+297 s step and `--storage-write 1e-12` a failure refusal no remedy it named could lift (wave 22)."""
GBps = T.typed(float, T.number(MIN_GBPS, 1e6))


def EvalCount(high: int):  # noqa: N802 (a type, as the others here)
    """A whole number of steps or iterations in [1, ``high``]."""
    return T.typed(int, T.count(high, low=1, whole=True))
Interval = T.typed(float | Literal["optimal"], _interval)
FailuresShare = T.typed(float | Literal["modelled"], _failures_share)


def _f(default: Any, help: str, shown: str | None = None) -> Any:
    return V.field(default, help, shown)


class BudgetFields(JobInputs):
    """The budget's own assumptions: data, checkpoints, failures, prices, spot, contingency.
    Shared by `train`/`budget` and `plan` (whose budget is that of its chosen layout)."""

    optimizer: V.Optimizer
    storage: Annotated[T.Name, _f("parallel_fs", "Where training data is read from: local_nvme, parallel_fs or "
                                  "object_store.")]
    checkpoint_storage: Annotated[T.Name | None, _f(None, "Storage for checkpoints.", "--storage")]
    storage_read: Annotated[GBps | None, _f(None, "Effective read GB/s per node.", "storage catalog")]
    storage_write: Annotated[GBps | None, _f(None, "Effective write GB/s per node.", "storage catalog")]
    token_bytes: Annotated[T.typed(int, _token_bytes) | None, _f(None, "Bytes per stored token id (2 or 4).",
                                                                 "2 below 65,500 ids, else 4")]
    tokenize: Annotated[T.Bool, _f(False, "Raw text is tokenised on the fly (default: pre-tokenised).")]
    bytes_per_token: Annotated[T.typed(float, T.number(IO.MIN_RAW_BYTES_PER_TOKEN, IO.MAX_RAW_BYTES_PER_TOKEN)), _f(
        IO.DEFAULT_RAW_BYTES_PER_TOKEN, "Raw text bytes per token, 1 to 1,000 (a token is at least one byte).")]
    tokens_per_core: Annotated[T.typed(float, T.count(1e12)), _f(IO.DEFAULT_TOKENS_PER_S_PER_CORE,
                                                                  "Tokens/s one CPU core tokenises.")]
    cpu_cores: Annotated[T.typed(int, T.count(1e5, whole=True)), _f(IO.DEFAULT_CPU_CORES_PER_NODE,
                                                                     "CPU cores per node.")]
    checkpoint_interval: Annotated[Interval, _f("optimal", "'optimal' (Young/Daly) or a duration, e.g. 30min.")]
    async_checkpoint: Annotated[T.Bool, _f(False, "Asynchronous checkpoint saves (default synchronous).")]
    keep_checkpoints: Annotated[T.typed(int, T.count(1e6, whole=True)), _f(C.DEFAULT_KEEP_CHECKPOINTS, "Checkpoints kept on storage.")]
    host_copy: Annotated[GBps, _f(C.DEFAULT_HOST_COPY_BYTES_PER_S / 1e9,
                                        "Device-to-host GB/s per GPU (async checkpoint staging).")]
    failure_rate: Annotated[T.typed(float, T.number(R.MIN_FAILURE_RATE, MAX_FAILURE_RATE)), _f(
        R.DEFAULT_FAILURE_RATE, "Job interruptions per GPU-hour (Llama 3: 1.97e-5).")]
    restart: Annotated[T.typed(float, T.seconds(WEEK, positive=True)), _f(R.DEFAULT_RESTART_SECONDS,
                                                            "Restart time per interruption, e.g. 15min.", "15min")]
    provider: Annotated[T.Name | None, _f(None, "Price one provider (aws, gcp, lambda, ...).",
                                          "median over providers")]
    price: V.Price
    spot_price: Annotated[V.Usd | None, _f(None, "Spot USD per GPU-hour.", "published spot prices")]
    spot_discount: Annotated[T.typed(float, T.share(K.MAX_SPOT_DISCOUNT)) | None, _f(
        None, "Spot discount off on-demand, e.g. 60%.", "published discount")]
    spot_preemption: Annotated[T.typed(float, T.number(0, MAX_SPOT_PREEMPTIONS)), _f(
        K.DEFAULT_SPOT_PREEMPTIONS_PER_NODE_MONTH, "Spot reclaims per node-month.")]
    contingency_restarts: Annotated[V.Share, _f(0.05, "Contingency share for restarts.")]
    contingency_tuning: Annotated[V.Share, _f(0.05, "Contingency share for tuning.")]
    contingency_failures: Annotated[FailuresShare, _f("modelled", "'modelled' (the failure model) or a share.")]
    contingency_evaluation: Annotated[V.Share, _f(0.05, "Contingency share for evaluation.")]
    eval_interval: Annotated[EvalCount(MAX_EVAL_INTERVAL) | None, _f(
        None, "Optimizer steps between in-loop evaluations, e.g. 1000 (Megatron/NeoX --eval-interval).", "none")]
    eval_iters: Annotated[EvalCount(MAX_EVAL_ITERS) | None, _f(
        None, "Forward-only iterations of the global batch per evaluation (needs --eval-interval).",
        f"{DEFAULT_EVAL_ITERS} with --eval-interval")]

    @model_validator(mode="after")
    def _eval_iters_need_interval(self):
        if self.eval_iters is not None and self.eval_interval is None:
            raise InputError("eval_iters", self.eval_iters, "needs eval_interval (--eval-interval, steps between "
                             "evaluations): "
                             "without it no evaluation runs")
        return self

    @field_validator("storage", "checkpoint_storage")
    @classmethod
    def _known_storage(cls, value: str | None, info) -> str | None:
        if value is not None:
            from gpuplan.catalog.storage import storage_kinds

            if value not in storage_kinds():
                raise InputError(info.field_name, value, f"must be one of {', '.join(storage_kinds())}")
        return value

    @field_validator("provider")
    @classmethod
    def _known_provider(cls, value: str | None) -> str | None:
        if value is not None:
            from gpuplan.catalog.pricing import resolve_provider

            resolve_provider(value)
        return value

    def adjust_spec(self, spec):
        """Refuse a --token-bytes too narrow for ``spec``'s vocabulary (jobs.budget.sections.token_id_bytes) as
        soon as the model is known, before any layout search; then the other field groups' checks."""
        if self.token_bytes is not None:
            from gpuplan.jobs.budget.sections import token_id_bytes

            token_id_bytes(self.budget_settings(), spec.vocab_size)
        return super().adjust_spec(spec)

    def _eval_ramp(self) -> tuple[tuple[float, float], ...]:
        """The batch ramp's phases as (tokens, tokens a step) for the evaluation count; () without evaluation or a
        ramp (BatchRampFields.ramp_phases: (tokens, sequences))."""
        phases = getattr(self, "ramp_phases", None)
        if self.eval_interval is None or phases is None:
            return ()
        return tuple((float(t), float(b) * int(self.seq_len)) for t, b in phases())

    def budget_settings(self, layout=None):
        """The budget assumptions as core-facing BudgetSettings; ``layout``: the answer's (its shard_group: the
        group --shard-group auto chose, which DeepSpeed's MiCS checkpoint is written from), else the group given."""
        from gpuplan.core.economics.checkpoint import mics_writer_group
        from gpuplan.jobs.budget.model import BudgetSettings

        gb = 1e9
        shares = tuple((name, None if getattr(self, f"contingency_{name}") == "modelled"
                        else float(getattr(self, f"contingency_{name}"))) for name in CONTINGENCY_NAMES)
        if "contingency" in self.given:  # the article's bare share replaces the named ones
            shares = (("given", float(self.contingency)),)  # type: ignore[attr-defined]
        return BudgetSettings(
            storage=self.storage, checkpoint_storage=self.checkpoint_storage,
            storage_read=None if self.storage_read is None else self.storage_read * gb,
            storage_write=None if self.storage_write is None else self.storage_write * gb,
            token_bytes=self.token_bytes, tokenize_on_the_fly=self.tokenize,
            raw_bytes_per_token=self.bytes_per_token, tokens_per_s_per_core=self.tokens_per_core,
            cpu_cores_per_node=self.cpu_cores, optimizer=self.optimizer,
            checkpoint_interval=None if self.checkpoint_interval == "optimal" else self.checkpoint_interval,
            async_checkpoint=self.async_checkpoint, keep_checkpoints=self.keep_checkpoints,
            host_copy=self.host_copy * gb, failure_rate=self.failure_rate, restart_seconds=self.restart,
            provider=self.provider, price=self.price, spot_price=self.spot_price, spot_discount=self.spot_discount,
            spot_preemptions=self.spot_preemption, contingency=shares, eval_interval=self.eval_interval,
            eval_iters=self.eval_iters if self.eval_iters is not None or self.eval_interval is None else
            DEFAULT_EVAL_ITERS, eval_ramp=self._eval_ramp(),
            checkpoint_writer_group=mics_writer_group(getattr(self, "framework", ""), getattr(
                layout, "shard_group", None) or fixed_shard_group(getattr(self, "shard_group", None))))  # MiCS
