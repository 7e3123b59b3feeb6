"""The sizing's TTFT p99 lines name every term their number adds (closing note s8, leftovers: the text of
sized_ttft_p99 said 'prefill + M/M/1 queueing wait p99' while the value also held vLLM's server hold, and the
disaggregated line named only the KV transfer). Now each term is printed in ms and they sum to the value."""

from __future__ import annotations

import dataclasses
import math
import re

import pytest

from gpuplan import estimate_inference
from gpuplan.jobs.inference.schema import InferenceInputs

ASK = dict(model="llama-3.1-8b", rps=20, ttft_p99="500ms", tpot="50ms", prompt="2K", output_tokens=512, gpu="h100")


def _line(report, key):
    return next(ln for s in report.sections for ln in s.lines if ln.key == key)


def _terms(formula: str) -> dict[str, float]:
    """'server hold 2.0 ms + prefill 21.0 ms + ...' -> {name: seconds}."""
    return {name.strip(): float(ms.replace(",", "")) / 1e3
            for name, ms in re.findall(r"([A-Za-z/0-9 ]+?) ([\d,]+\.\d) ms", formula.split(": ", 1)[1])}


@pytest.mark.parametrize("disaggregate, key, hold_ms", [(False, "sized_ttft_p99", 4.9), (True, "disagg_ttft_p99", 9.7)])
def test_ttft_p99_text_names_every_term_it_adds(disaggregate, key, hold_ms):
    """vLLM (the default engine, >= 0.10) holds a request for its tokeniser's 2 ms batch window
    (request_path.TOKENIZER_BATCH_WAIT_S, utils/async_utils.py@v0.23.0:36), then tokenises the 2,048-token prompt
    (L116-132, 1.4 us a token: 2.867 ms; 0 before review w11 r3 M2), 4.867 ms printed 4.9; a disaggregated request
    passes two servers in turn (9.734 ms, printed 9.7). The printed terms (each rounded to 0.1 ms) add up to the value within 0.15 ms, and the wait
    term is the M/M/1 p99 of the printed prefill at the load asked: t ln(100 rho) / (1 - rho), rho = rate x t."""
    report = estimate_inference(InferenceInputs(**ASK, disaggregate=disaggregate))
    line = _line(report, key)
    terms = _terms(line.formula)
    assert terms["server hold"] == pytest.approx(hold_ms / 1e3, abs=1e-9)
    assert {"server hold", "prefill", "M/M/1 queueing wait p99"} <= set(terms)
    assert ("KV transfer" in terms) == disaggregate
    assert sum(terms.values()) == pytest.approx(line.value, abs=0.15e-3)
    # the colocated line carries its rate in the value's text (14d0c89), the disaggregated one in its formula
    rate = float(re.search(r"at ([\d.]+) requests/s", line.text + " " + line.formula).group(1))
    t = terms["prefill"]
    rho = rate * t
    assert terms["M/M/1 queueing wait p99"] == pytest.approx(t * math.log(100 * rho) / (1 - rho), rel=0.02)


def test_sglang_sizing_prints_its_tokenising_hold():
    """SGLang's server holds a request while its TokenizerManager tokenises the prompt (prompt_tokenize: 1.4 us a
    token; no batch window, request_path.api_server_seconds 0 for other engines): the 2,048-token prompt's hold
    term reads 2,048 x 1.4 us = 2.87 ms (printed to 0.1 ms) and the rest still sums to the value."""
    report = estimate_inference(InferenceInputs(**ASK, engine="sglang"))
    line = _line(report, "sized_ttft_p99")
    terms = _terms(line.formula)
    assert terms["server hold"] == pytest.approx(2048 * 1.4e-6, abs=0.06e-3)
    assert sum(terms.values()) == pytest.approx(line.value, abs=0.15e-3)


def test_the_chosen_configuration_is_not_timed_again(monkeypatch):
    """size_for_target keeps each configuration's timed steps (SizedConfig.steps), so the answer's load line
    (_at_load) reads them: with _tp_steps made to fail, the section is still built, with the same numbers as
    when the steps are timed afresh (the parent timed the chosen (GPU, TP) a second time here)."""
    from gpuplan.core.serving.load import LoadTarget
    from gpuplan.jobs.inference import sizing
    from gpuplan.jobs.inference.resolve import resolve_plan
    from gpuplan.schema.base import job_inputs

    plan = resolve_plan(job_inputs(InferenceInputs(**ASK), InferenceInputs))
    target = LoadTarget(0.5, 0.05, 20)
    configs = sizing.size_for_target(plan, target)
    fresh = sizing.sizing_section(plan, target, [dataclasses.replace(c, steps=None) for c in configs], "h100")

    def timed_again(*args, **kwargs):
        raise AssertionError("the chosen configuration's prefill was timed again")

    monkeypatch.setattr(sizing, "_tp_steps", timed_again)
    kept = sizing.sizing_section(plan, target, configs, "h100")
    assert [(ln.key, ln.value, ln.text, ln.formula) for ln in kept.lines] == [
        (ln.key, ln.value, ln.text, ln.formula) for ln in fresh.lines]
