"""The batch a no-completion refusal offers, checked on the door that refuses (jobs.plan.completes.no_completion
writes it; answering_offer re-runs the door on it). No numpy here: jobs.training.timing wraps its estimate with
it at import (tests/test_startup.py)."""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable
from typing import TypeVar

from gpuplan.errors import InputError

T = TypeVar("T")


class NoCompletion(InputError):
    """no_completion's refusal naming the global batch, with the batch it offers (``offered``: tokens, as printed),
    so a door can check that the offer answers (answering_offer)."""

    def __init__(self, field: str, value: object, expected: str, offered: str = ""):
        super().__init__(field, value, expected)
        self.offered_text = offered

    @property
    def offered(self) -> float:
        return float(self.offered_text) if self.offered_text else 0.0


OFFER_SLOWDOWN = 2.0
"""The most an offered batch's expected wall-clock with failures may be, as a multiple of its failure-free
wall-clock (review w10 r4 M1: the batch at the completion cut-off, 7.9429632e8 for `budget llama-3.1-405b
--gpus 8192 --global-batch-tokens 1e12 --failure-rate 0.01 --zero 0`, answered 4.36e21 days, since Daly's
expected wall grows as e^(step/MTBI) up to e^50 there). A bound on the answer the user is offered, not a fit."""

_CHECKING_OFFER = contextvars.ContextVar("checking_offer", default=False)


def checking_offer() -> bool:
    """Whether a door runs as answering_offer's re-run: then a run whose expected wall-clock with failures is over
    OFFER_SLOWDOWN x its failure-free one is refused as not completing (jobs.plan.completes), with its own offer."""
    return _CHECKING_OFFER.get()


OFFER_ROUNDS = 4
"""Re-runs of a door on the batch its refusal offers (answering_offer): a round takes the offer of the refusal
before it; two settled every ask of tests/test_w2_completion_offer.py."""


def answering_offer(answer: Callable[[], T], rerun: Callable[[float], object]) -> T:
    """``answer()`` (a door), where it refuses with a NoCompletion offering a global batch: the same refusal, its
    offer replaced by one the door answers. The offer is the most a step may hold at the throughput of the batch
    asked (largest_step_tokens); a smaller batch runs fewer micro-batches a step, so the pipeline bubble and the
    per-step costs weigh more and its tokens/s is lower (wave 10 review M1: `budget llama-3.1-405b
    --global-batch-tokens 1e12 --gpus 8192 --failure-rate 0.01 --zero 0` offered 7.9822848e8 at 627,003 tok/s,
    which ran at 623,912 tok/s and was refused, offering 7.9429632e8). ``rerun(batch)``: the door with
    --global-batch-tokens ``batch``; each offer it refuses is replaced by that refusal's own (smaller) one, at
    most OFFER_ROUNDS re-runs; a re-run counts as answering only where its expected wall-clock with failures is at
    most OFFER_SLOWDOWN x its failure-free one (checking_offer; review w10 r4 M1). Only an offer a re-run answered is printed: where none answers within the rounds,
    is refused for another reason or does not shrink, the refusal offers no batch and says so (unverified_words;
    review w10 r3 S2: the fourth round's offer, or one refused for memory, was printed unchecked)."""
    try:
        return answer()
    except NoCompletion as refusal:
        if not refusal.offered > 0:
            raise
        offer, tried, why = refusal, [], "did not complete within twice its failure-free time"
        for _ in range(OFFER_ROUNDS):
            tried.append(offer.offered_text)
            token = _CHECKING_OFFER.set(True)
            try:
                rerun(offer.offered)
            except NoCompletion as again:
                if not 0 < again.offered < offer.offered:
                    break
                offer = again
                continue
            except InputError as other:
                why = f"was refused on {getattr(other, 'cause', other.field)}"  # jobs.plan.no_fit: memory
                break
            finally:
                _CHECKING_OFFER.reset(token)
            if offer is refusal:
                raise
            text = refusal.expected.replace(offer_words(refusal.offered_text), offer_words(offer.offered_text))
            raise NoCompletion(refusal.field, refusal.value, text, offer.offered_text) from None
        text = refusal.expected.replace(offer_words(refusal.offered_text), unverified_words(tried, why))
        raise NoCompletion(refusal.field, refusal.value, text) from None


def unverified_words(tried: list[str], why: str) -> str:
    """The refusal's words where no batch it offered was answered: the batches re-run (tokens, as printed) and
    ``why`` ('did not complete', 'was refused on FIELD')."""
    if len(tried) == 1:
        return f"a smaller global batch; no offer: the batch tried ({tried[0]} tokens a step) {why}"
    return (f"a smaller global batch; no offer: of the batches tried ({tried[0]} down to {tried[-1]} tokens a step) "
            f"the last {why}")


def offer_words(written: str) -> str:
    """The refusal's words for the batch it offers (``written``: tokens as printed)."""
    return (f"a global batch of at most {written} tokens a step, the largest batch whose expected time with "
            f"failures is at most twice the failure-free time")


def offers_answering_batch(door: Callable[..., T]) -> Callable[..., T]:
    """``door(inputs, ...)`` whose no-completion refusal offers a batch the same door answers (answering_offer):
    re-run with ``inputs`` given --global-batch-tokens the offer (and no --global-batch)."""
    @functools.wraps(door)
    def answered(inputs, *args, **kwargs):
        return answering_offer(lambda: door(inputs, *args, **kwargs), lambda batch: door(
            inputs.replace(global_batch_tokens=batch, global_batch=None), *args, **kwargs))

    return answered
