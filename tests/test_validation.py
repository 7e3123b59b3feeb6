"""The validation harness over the packaged reference set."""

from pathlib import Path

import pytest

from gpuplan.jobs.validation.estimate import (
    KIND_GIVEN,
    KIND_PREDICTED,
    KIND_PRIOR,
    accuracy_markdown,
    validation_report,
)
from gpuplan.jobs.validation.gpu_hours import EIGHTH_SET, FIFTH_SET, FOURTH_SET, SEVENTH_SET, SIXTH_SET
from helpers import reference_runs_by_id, validation_cases_once


def cases_by(kind):
    return {c.id: c for c in validation_cases_once() if c.kind == kind}


def test_llama1_65b_from_its_reported_throughput():
    # LLaMA Sec. 2.4: 380 tokens/s/GPU; 1.4e12 tokens / 380 / 3600 = 1,023,392 GPU-hours
    # vs 1,022,362 reported in Table 15 -> +0.10%
    case = cases_by(KIND_GIVEN)["llama1-65b"]
    assert case.predicted == pytest.approx(1.4e12 / 380 / 3600, rel=1e-9)
    assert case.error == pytest.approx(0.0010, abs=2e-4)


def test_bloom_strips_recompute_from_hardware_tflops():
    # 156 TFLOP/s counted with full recompute -> model-FLOPs rate 156 x 3/4 (to within the LM-head share)
    case = cases_by(KIND_GIVEN)["bloom-176b"]
    mfu = float(case.basis.split("MFU ")[-1])
    assert mfu == pytest.approx(156 / 312 * 0.75, abs=0.005)


def test_prior_kind_covers_every_run():
    # 33 = 20 + 6 (issue 37: Llama 3.1 8B / 70B, SmolLM3, TinyLlama 1.1B, MPT-7B, StarCoderBase) + 3 (the third set,
    # wave 7: SantaCoder, llm.c GPT-2 774M / 1558M) + 1 (llm.c's 350M, wave 12) + 1 (BioMedLM 2.7B, wave 13)
    # + 2 (Llemma 7B / 34B, wave 15, the fifth set): every row under training_runs.yaml's `runs`
    assert len(cases_by(KIND_PRIOR)) == 40  # + OLMo 3 7B / 32B (wave 19's sixth set), BloombergGPT (wave 20's seventh),
    # Skywork-13B, GLM-130B and SEA-LION 7B / 3B (session 25's eighth)
    assert set(cases_by(KIND_PRIOR)) == set(reference_runs_by_id())
    # Llama 2 7B, hand: 6 x 6,738,415,616 x 2e12 / (312e12 x 0.4 x 3600) = 179,979 vs 184,320 reported
    assert cases_by(KIND_PRIOR)["llama2-7b"].predicted == pytest.approx(179_979, abs=1)


MODERN_RUNS = ("llama3.1-405b", "deepseek-v3", "llmc-gpt2-774m", "llmc-gpt2-1558m", "llmc-gpt2-350m", "olmo3-7b", "olmo3-32b")
SECOND_SET = ("pythia-160m", "pythia-410m", "pythia-1.4b", "pythia-2.8b", "pythia-6.9b", "pythia-12b", "mpt-7b",
              "starcoderbase-15.5b")
"""The end-to-end runs entered by training_runs.yaml's written criterion (issue 37 point 4, second set), their data
committed before their predictions were computed."""
THIRD_SET = ("santacoder-1.1b", "llmc-gpt2-774m", "llmc-gpt2-1558m", "llmc-gpt2-350m")
"""The third set by the same criterion (wave 7; the 350M entered in wave 12; tests/test_gpu_hours_runs_third_set.py)."""


def _predicted_note_ranges() -> tuple[tuple[float, float], tuple[float, float]]:
    """The two measured / predicted GPU-hours ranges `train --mfu predicted` prints (jobs/training/sections.py):
    (the packaged 2022-23 runs, Llama 3.1 405B and DeepSeek-V3 2024), read from the note itself."""
    import re

    from gpuplan.jobs.training.estimate import estimate_training
    from gpuplan.jobs.training.schema import TrainingInputs

    report = estimate_training(TrainingInputs(model="llama-3-8b", gpu="h100", gpus=64, tokens=1e12, mfu="predicted"))
    note = next(str(n) for n in report.notes if str(n).startswith("--mfu predicted is the steady state"))
    old = re.search(r"2022-23 runs used (\d\.\d\d)-(\d\.\d\d)x", note)
    new = re.search(r"2024-25, (\d\.\d\d)-(\d\.\d\d)x", note)
    assert old and new, note
    return tuple(map(float, old.groups())), tuple(map(float, new.groups()))


def test_predicted_gpu_hours_note_matches_the_packaged_runs():
    """`train --mfu predicted` prints the range of measured / predicted GPU-hours of the packaged 2022-23 runs
    (with the recompute, attention kernel and network their sources state) and of the two 2024 runs (Llama 3.1
    405B, DeepSeek-V3): the note's two ranges, parsed from the note, are the data's min and max to its two
    decimals (a change that moves a run moves the note with it)."""
    cases = cases_by(KIND_PREDICTED)
    old = [c.measured / c.predicted for i, c in cases.items() if i not in MODERN_RUNS + ("smollm3-3b",)]
    new = [cases[i].measured / cases[i].predicted for i in MODERN_RUNS]
    # TinyLlama 1.1B (2023, added with issue 37 point 4): 0.965; the second set (Pythia 160M-12B, MPT-7B,
    # StarCoderBase, chosen by training_runs.yaml's criterion before their predictions were computed) 1.00-1.77
    # (1.18-1.88 before the GPT-NeoX v1.0 rows' FlashAttention 1, tests/test_flash_attention_1.py)
    # + SantaCoder (2022, wave 7): 1.39; + BioMedLM 2.7B (2022, wave 13): 1.40 (2.43 before U1); + Llemma 7B / 34B
    # (2023, wave 15's fifth set): 1.34 / 2.10, the 34B the range's top (its stated layout, not the planner's)
    # + BloombergGPT 50B (2023, wave 20's seventh set): 1.96, under Llemma 34B's top
    # + Skywork-13B (2023) and GLM-130B (2022), session 25's eighth set: 1.15 / 1.63, inside the range; + SEA-LION 7B /
    # 3B (2023, the set extended): 1.71 / 2.11, the 3B the range's new top
    assert len(old) == 23 and set(FIFTH_SET + SEVENTH_SET + EIGHTH_SET) <= set(cases)  # OLMo 3 (2025, wave 19): 1.26 / 1.51, the modern range's top
    note_old, note_new = _predicted_note_ranges()
    assert note_old == (round(min(old), 2), round(max(old), 2))
    assert note_new == (round(min(new), 2), round(max(new), 2))


def test_predicted_gpu_hours_note_quotes_the_held_out_end_to_end_means():
    """The same note quotes the end-to-end GPU-hours error of every held-out run (docs/accuracy.md, kind
    'train --mfu predicted, end to end ... held out'): 'N% mean over twenty-three held-out runs, predicted low on
    average; the worst BioMedLM 2.7B, A% ..., llm.c's GPT-2 350M and MPT-7B, B / C%'. The mean, the count, the
    sign of the bias and the three quoted errors are recomputed here from the cases, to the note's one decimal; the three are
    the largest misses. The subsets (the twenty before wave 13: tests/test_cluster_model.py; the fourth and fifth
    sets: tests/test_gpu_hours_w13.py, tests/test_gpu_hours_w15.py) are pinned where they are documented."""
    import re

    from gpuplan.jobs.training.estimate import estimate_training
    from gpuplan.jobs.training.schema import TrainingInputs
    from gpuplan.jobs.validation.estimate import KIND_END_TO_END

    report = estimate_training(TrainingInputs(model="llama-3-8b", gpu="h100", gpus=64, tokens=1e12, mfu="predicted"))
    note = next(str(n) for n in report.notes if str(n).startswith("--mfu predicted is the steady state"))
    found = re.search(r"(\d+\.\d)% mean over thirty held-out runs, predicted low on average; the worst SEA-LION 3B, "
                      r"([+-]\d+\.\d)%, whose card's 14 days on 240 A100 40GB hold (\d+\.\d\d) s a step where the model "
                      r"times (\d+\.\d\d) s, BloombergGPT 50B, ([+-]\d+\.\d)%, whose paper states a 32\.5 s step where "
                      r"the model times (\d+\.\d) s .*, GLM-130B, ([+-]\d+\.\d)%, whose training notes measure an 88\.5 s "
                      r"step where the model times (\d+\.\d) s and whose total holds 22% beyond those steps, and OLMo 3 "
                      r"32B, ([+-]\d+\.\d)% against its developers' total, which holds 31% beyond their steady rate", note)
    assert found, note
    every = {c.id: c for c in validation_cases_once() if c.kind == KIND_END_TO_END.format(role="held out")}
    assert len(every) == 30 and set(FOURTH_SET + FIFTH_SET + SIXTH_SET + SEVENTH_SET + EIGHTH_SET) <= set(every)
    assert float(found[1]) == round(100 * sum(abs(c.error) for c in every.values()) / 30, 1)
    assert sum(c.error for c in every.values()) < 0  # 'predicted low on average'
    # session 25: SEA-LION 3B first (the set extended), GLM-130B third; OLMo 3 32B fourth, SEA-LION 7B (-33.1%) fifth
    quoted = ("sea-lion-3b", "bloomberggpt-50b", "glm-130b", "olmo3-32b")
    assert [float(found[k]) for k in (2, 5, 7, 9)] == [round(100 * every[i].error, 1) for i in quoted]
    assert f"the total is {found[3]} s a step, the model's step {found[4]} s" in every["sea-lion-3b"].basis
    assert f"the model's step {found[6]} s" in every["bloomberggpt-50b"].basis  # the step the note quotes is the case's
    assert f"the model's step {found[8]} s" in every["glm-130b"].basis
    from gpuplan.jobs.validation.gpu_hours import KIND_BUDGET

    budget = [c for c in validation_cases_once() if c.kind == KIND_BUDGET.format(role="held out")]
    tail = re.search(r"the GPU-hours budget line adds restarts, tuning and evaluation at 5% each: (\d+\.\d)% mean against "
                     r"the twenty-two of them whose totals are wall-clock, bias ([+-]\d+\.\d)%", note)
    assert tail and len(budget) == 22, note
    assert float(tail[1]) == round(100 * sum(abs(c.error) for c in budget) / 22, 1)
    assert float(tail[2]) == round(100 * sum(c.error for c in budget) / 22, 1)
    # the four named are the four largest misses of the thirty (session 25: SEA-LION 3B, BloombergGPT, GLM-130B, OLMo 3
    # 32B)
    assert sorted(every, key=lambda i: -abs(every[i].error))[:4] == sorted(quoted, key=lambda i: -abs(every[i].error))


def test_predicted_gpu_hours_uses_the_runs_stated_batch():
    """Llama 3.1 405B on 16,384 H100 with its stated 2,048 x 8,192-token batch: the planner's
    layout lands at 40.6% MFU, inside the 38-43% of the paper's Table 4 (a 4M-token default
    batch would leave a quarter of a sequence per GPU and a far slower layout)."""
    case = cases_by(KIND_PREDICTED)["llama3.1-405b"]
    mfu = float(case.basis.split("MFU ")[-1])
    assert 0.38 <= mfu <= 0.43
    # hand: 4.0957e25 model FLOPs (15.6T tokens x core.time.step.model_flops_per_token at 8,192) /
    # (989.4 TFLOP/s x 0.406 x 3,600) = 28.32M GPU-hours vs 30.84M on the model card -> -8.2%
    assert case.predicted == pytest.approx(4.0957e25 / (989.4e12 * mfu * 3600), rel=2e-3)
    # wave 12 moved it -12.5% (MFU 0.426, at 43b7127) -> -8.2% (0.406), re-run at each commit from git-archive trees:
    # 617b869 (TE's CP ring kernels in the step's element-wise work) -12.5 -> -10.7% (0.417); 02f8c12 (the untied
    # embedding's dense gradient added every micro-batch) -10.7 -> -7.9% (0.405); 03000ea (NeMo / Bridge's DP bucket)
    # -7.9 -> -8.2% (0.406); 0d4052f (chunk-wise DP syncs) moved nothing here. The pin: what the planner gives now,
    # +-1 point (a step-model change that moves the 405B layout's MFU by ~0.005 fails here)
    assert case.error == pytest.approx(-0.082, abs=0.01)


def test_docs_accuracy_is_generated_from_the_current_code(monkeypatch):
    """validation_report() of the current code, its two slowest parts (the end-to-end cases ~2.8 s, the planner's
    choices ~2.0 s of its ~6.7 s) taken from this session's once-computed lists (tests/helpers.py: the same
    functions, unpatched), not computed a second time."""
    from gpuplan.jobs.validation import estimate, planner_choice
    from helpers import planner_choice_cases_once

    # computed unpatched first: once patched, a first computation would call the patched name itself
    # (RecursionError when this test runs before any other that fills the caches)
    validation_cases_once(), planner_choice_cases_once()
    monkeypatch.setattr(estimate, "validation_cases", validation_cases_once)
    monkeypatch.setattr(planner_choice, "planner_choice_cases", planner_choice_cases_once)
    doc = Path(__file__).resolve().parents[1] / "docs" / "accuracy.md"
    assert doc.read_text(encoding="utf-8") == accuracy_markdown(validation_report()), (
        "docs/accuracy.md is stale: run `gpuplan validate --out docs/accuracy.md`")


def test_packaged_prediction_band_is_the_held_out_error_of_the_current_code():
    from importlib import resources

    from gpuplan.jobs.validation.band import band_toml, held_out_errors

    packaged = (resources.files("gpuplan.catalog") / "reference" / "prediction_band.toml").read_text("utf-8")
    assert packaged == band_toml(), "regenerate with: python -m gpuplan.jobs.validation.band"
    errors = held_out_errors()
    assert len(errors["bf16"]) >= 10 and len(errors["fp8"]) >= 5 and len(errors["moe"]) >= 10  # enough runs


def test_moe_plans_carry_the_moe_band_and_dense_plans_do_not():
    """A MoE plan's range is the MoE rows' held-out error (wider: releases move the same MoE
    layout by up to 2x), a dense plan's the dense rows' of its precision."""
    from gpuplan.catalog import prediction_band
    from gpuplan.jobs.plan.estimate import plan_report
    from gpuplan.jobs.plan.schema import PlanInputs

    moe_error, source = prediction_band("bf16", moe=True)
    assert moe_error == prediction_band("fp8", moe=True)[0] and "MoE" in source
    # wider than either dense band, which is what the range claims (13.85% against 5.09% / 7.29% after issue 37's
    # backward host and GPT-OSS activation sync, 2.7x / 1.9x; 3.07x / 2.04x at 54c46f5): no fixed ratio asserted,
    # as the MoE rows' error is the model's own and moves with it
    assert moe_error > max(prediction_band("bf16")[0], prediction_band("fp8")[0])
    for model, error in (("mixtral-8x7b", moe_error), ("llama-3.1-8b", prediction_band("bf16")[0])):
        days = plan_report(PlanInputs(model=model, tokens="1T", gpu="h100", gpus=256)).line("best_days")
        assert (days.low, days.high) == pytest.approx((days.value * (1 - error), days.value * (1 + error)))


def test_plan_headline_carries_the_band():
    from gpuplan.catalog import prediction_band
    from gpuplan.jobs.plan.estimate import plan_report
    from gpuplan.jobs.plan.schema import PlanInputs

    report = plan_report(PlanInputs(model="llama-3.1-70b", tokens="15T", gpu="h100", gpus=1024, price=2.0))
    error, _ = prediction_band("bf16")
    days = report.line("best_days")
    assert (days.low, days.high) == pytest.approx((days.value * (1 - error), days.value * (1 + error)))
    cost = report.line("best_cost")
    assert cost.low < cost.value < cost.high and cost.high / cost.low == pytest.approx((1 + error) / (1 - error))


def test_software_facts_passed_to_predicted_gpu_hours_carry_their_source():
    """recompute / attention_kernel / nic_gbit_per_gpu reach `train --mfu predicted` only where a
    run's source states them, each run naming where (cluster_source); with them the seven runs'
    GPU-hours are within 15% mean, issue 15's bar (13.7% in docs/step.md; 32.7% with the planner
    free to pick flash attention, no recompute and a 400 Gb/s network)."""
    from gpuplan.catalog import reference_runs

    stated = [r for r in reference_runs()["runs"]
              if any(k in r for k in ("attention_kernel", "nic_gbit_per_gpu", "framework", "ep_dispatcher"))
              or ("recompute" in r and "gpus" in r)]
    # smollm3-3b: its nanotron config (huggingface/smollm stage1_8T.yaml) states no recompute and flash attention
    # llama1-65b: the LLaMA paper's Sec. 2.4 keeps the linear outputs and recomputes the rest (selective)
    # tinyllama-1.1b: its lit-gpt pretrain script checkpoints no activations, its README runs flash attention 2
    assert {r["id"] for r in stated} == {"bloom-176b", "palm-540b", "pythia-70m", "pythia-1b", "deepseek-v3",
                                         "smollm3-3b", "llama1-65b", "tinyllama-1.1b", *SECOND_SET, *THIRD_SET,
                                         *FOURTH_SET, *FIFTH_SET, *SIXTH_SET, *SEVENTH_SET, *EIGHTH_SET}
    assert all(r.get("cluster_source") for r in stated)
    # issue 15's bar holds on the runs it was set on; the second set (issue 37, chosen by training_runs.yaml's
    # criterion before its predictions were computed) is 21.9% mean on this kind at 0f09bc2 (the 29.1% quoted
    # here was older), all predicted low; the third set (wave 7) 23.1% at bf88697 (-28.1 / +31.4 / +9.9%), 20.2% with
    # 0f09bc2's SantaCoder shape: both stated in validate's 'by set' table (gpu_hours.predicted_sets_table,
    # tests/test_w3_mend_r2_predicted_sets) and docs/training.md
    errors = [abs(c.error) for i, c in cases_by(KIND_PREDICTED).items()
              if i not in ("smollm3-3b",) + SECOND_SET + THIRD_SET + FOURTH_SET + FIFTH_SET + SIXTH_SET + SEVENTH_SET
              + EIGHTH_SET]
    assert len(errors) == 8 and sum(errors) / 8 <= 0.15


def test_second_set_rows_match_their_sources_arithmetic():
    """The second held-out set (training_runs.yaml header criterion): each Pythia row's stated layout reproduces
    the paper's 1,024-sequence batch with its configuration's gradient accumulation (EleutherAI/pythia
    models/*.yml @a19eecb: 1 for 160M-2.8B, 2 for 6.9B / 12B), and the two duration-based totals are the cards'
    GPUs x days x 24 (MPT-7B 440 x 9.5 x 24 = 100,320; StarCoder 512 x 24 x 24 = 294,912)."""
    from gpuplan.catalog import reference_runs

    runs = {r["id"]: r for r in reference_runs()["runs"]}
    accumulation = {"pythia-160m": 1, "pythia-410m": 1, "pythia-1.4b": 1, "pythia-2.8b": 1, "pythia-6.9b": 2,
                    "pythia-12b": 2}
    for rid, steps in accumulation.items():
        run, layout = runs[rid], runs[rid]["layout"]
        data_parallel = run["gpus"] // (layout["tp"] * layout["pp"])
        assert data_parallel * layout["micro_batch"] * steps == run["global_batch"] == 1024, rid
    assert runs["mpt-7b"]["measured_gpu_hours"] == 440 * 9.5 * 24 and runs["mpt-7b"]["gpus"] == 440
    assert runs["starcoderbase-15.5b"]["measured_gpu_hours"] == 512 * 24 * 24
    assert all("gpus" in runs[r] and runs[r].get("cluster_source") for r in SECOND_SET)
