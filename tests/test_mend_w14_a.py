"""Review w14 R2 M1 / S1 (mender MA): one sequence-split rule per framework (planner.framework_rules.sequence_divisor),
stated by schema.layout_rules.check_sequence_split and searched by planner.space. torchtitan at b5bcd76 raises unless
(tp if sequence parallel) x (2 cp if cp > 1) divides micro_batch x seq_len (torchtitan/trainer.py L296-308);
Megatron asserts tp divides seq_len / cp (tensor_parallel/mappings.py@00caa53 L67-70); generic holds neither."""

import numpy as np
import pytest
from helpers import field_refusal, web_refusal

from gpuplan.planner.framework_rules import sequence_divisor, sequence_split_runs, split_tokens

BASE = {"model": "llama-3-8b", "gpu": "h100", "gpus": 8, "tp": 8, "seq_len": 4100}


@pytest.mark.parametrize("framework, sp, tp, cp, divisor", [
    ("torchtitan", True, 4, 2, 16),   # 4 x (2 x 2), trainer.py L299-301
    ("torchtitan", False, 4, 2, 4),   # no SP: 2 x cp only
    ("torchtitan", True, 8, 1, 8),    # cp 1: tp only
    ("megatron", True, 4, 2, 4),      # tp; cp enters through the tokens (seq_len / cp)
    ("megatron", False, 8, 1, 1),
    ("generic", True, 8, 1, 1),       # framework-neutral: none
])
def test_sequence_divisor_per_framework(framework, sp, tp, cp, divisor):
    assert sequence_divisor(framework, sp, tp, cp) == divisor


def test_split_tokens_count_the_micro_batch_under_torchtitan_only():
    assert split_tokens("torchtitan", 4100, 1, 2) == 8200   # num_tokens_per_microbatch_per_dp_rank = mb x seq_len
    assert split_tokens("megatron", 4104, 2, 2) == 2052     # [s, b, h]: s = seq_len / cp, b not in it
    assert not sequence_split_runs("torchtitan", True, tp=8, cp=1, seq_len=4100, micro_batch=1)  # 4,100 % 8 = 4
    assert sequence_split_runs("torchtitan", True, tp=8, cp=1, seq_len=4100, micro_batch=2)      # 8,200 % 8 = 0
    assert sequence_split_runs("torchtitan", True, tp=8, cp=1, seq_len=4100, micro_batch=None)   # not chosen yet


def test_memory_refuses_the_torchtitan_layout_its_trainer_raises_on():
    """`memory --model llama-3-8b --gpus 8 --tp 8 --seq-len 4100 --framework torchtitan` answered 'fits yes'; a
    micro-batch of 2 (8,200 tokens) divides and answers, as do --no-sequence-parallel and generic."""
    from gpuplan import InputError, MemoryInputs, estimate_memory

    with pytest.raises(InputError, match=r"tp: got 8; must divide the 4,100 tokens of a micro-batch .*divisible by 8"):
        estimate_memory(MemoryInputs(**BASE, framework="torchtitan"))
    for other in ({"framework": "torchtitan", "micro_batch": 2},
                  {"framework": "torchtitan", "sequence_parallel": False}, {"framework": "generic"}):
        assert estimate_memory(MemoryInputs(**BASE, **other)).value("model_states_total") > 0


def test_the_torchtitan_search_keeps_the_micro_batches_that_divide():
    """The search applies torchtitan's form where it picks the micro-batch: on seq 4,097 (odd) tp t keeps only the
    micro-batches t divides; Megatron's form (mb-free) leaves tp 1 only, as before."""
    from gpuplan import PlanInputs
    from gpuplan.planner.space import SpaceLimits, enumerate_layouts

    spec = PlanInputs(model="llama-3-70b", gpu="h100", gpus=64, seq_len=4097, tokens=1e12).spec()
    titan = enumerate_layouts(spec, (64,), 4097, 256, 8, SpaceLimits(framework="torchtitan", sequence_split=True))
    assert set(titan["tp"].tolist()) == {1, 2, 4, 8}
    assert not np.any((titan["micro_batch"] * 4097) % titan["tp"])
    assert set(titan["micro_batch"][titan["tp"] == 8].tolist()) == {8, 16, 32, 64, 128, 256}
    megatron = enumerate_layouts(spec, (64,), 4097, 256, 8, SpaceLimits(framework="megatron", sequence_split=True))
    assert set(megatron["tp"].tolist()) == {1}


def test_plan_search_limits_hold_torchtitan_to_its_form():
    """jobs.plan.search.space_limits turned the rule on for megatron only: `plan --seq-len 4097 --framework
    torchtitan --gpus 64` offered tp 8 at micro-batch 1 (4,097 tokens, which torchtitan's trainer refuses)."""
    from gpuplan import PlanInputs
    from gpuplan.jobs.plan.search import space_limits
    from gpuplan.planner.space import enumerate_layouts

    ask = {"model": "llama-3-70b", "gpu": "h100", "gpus": 64, "seq_len": 4097, "tokens": 1e12}
    titan = PlanInputs(**ask, framework="torchtitan")
    rows = enumerate_layouts(titan.spec(), (64,), 4097, 256, 8, space_limits(titan))
    assert 8 in set(rows["tp"].tolist()) and not np.any((rows["micro_batch"] * 4097) % rows["tp"])
    generic = PlanInputs(**ask, framework="generic")  # framework-neutral: tp 8 at micro-batch 1 stays
    rows = enumerate_layouts(generic.spec(), (64,), 4097, 256, 8, space_limits(generic))
    assert np.any((rows["tp"] == 8) & (rows["micro_batch"] == 1))


def test_the_no_fit_refusal_names_the_sequence_split_when_it_left_tp_1_only():
    """Review w14 R2 N1: `plan --model llama-3.1-405b --gpus 64 --gpu h100 --seq-len 4097` named more GPUs only; 4,097
    = 17 x 241, so Megatron's rule leaves tp 1 (4,096 fits on 128 GPUs, --no-sequence-parallel on 192)."""
    from gpuplan import InputError, PlanInputs
    from gpuplan.jobs.plan.search import search
    from gpuplan.planner.space import SpaceLimits, sequence_split_note

    spec = PlanInputs(model="llama-3.1-405b", gpu="h100", gpus=64, seq_len=4097, tokens=1e12).spec()
    megatron = SpaceLimits(framework="megatron", sequence_split=True)
    assert sequence_split_note(spec, 64, 4097, 8, megatron).endswith("--seq-len multiple of 8")
    assert sequence_split_note(spec, 64, 4098, 8, megatron) == ""  # tp 2 divides 4,098
    assert sequence_split_note(spec, 64, 4097, 8, SpaceLimits(framework="torchtitan", sequence_split=True)) == ""
    assert sequence_split_note(spec, 64, 4097, 8, SpaceLimits(framework="megatron", sequence_split=True,
                                                              fixed={"tp": 1})) == ""
    with pytest.raises(InputError, match=r"256 GPUs.*sequence parallelism left tp 1 only.*--no-sequence-parallel"):
        search(PlanInputs(model="llama-3.1-405b", gpu="h100", gpus=64, seq_len=4097, tokens=1e12))


def test_plans_empty_torchtitan_search_names_the_sequence_split_at_every_door(run_cli, client):
    """Review w14 R3 S2: `plan --framework torchtitan --tp 8 --seq-len 4097 --global-batch 4` on 8 GPUs said only 'no
    layout can use these GPU counts'. dp = 1 leaves micro-batches 1, 2 and 4; 4,097 x m is odd for each, so none is a
    multiple of tp 8 (trainer.py@b5bcd76 L296-308). `memory`'s words (schema.layout_rules.torchtitan_split_error),
    one line, exit 2, the same at the CLI, the web and the Python API; 4,096 answers."""
    from gpuplan import InputError, PlanInputs
    from gpuplan.jobs.plan.search import search

    ask = {"model": "llama-3-8b", "gpu": "h100", "gpus": 8, "framework": "torchtitan", "tp": 8, "seq_len": 4097,
           "global_batch": 4, "tokens": 1e9}
    fragment = ("got 8; must divide the tokens of a micro-batch (micro_batch 1, 2 or 4 x seq_len 4,097): torchtitan "
                "raises 'The number of tokens per pipeline microbatch ... must be divisible by 8'")
    flag = field_refusal(run_cli("plan", "--model", "llama-3-8b", "--gpu", "h100", "--gpus", "8", "--framework",
                                 "torchtitan", "--tp", "8", "--seq-len", "4097", "--global-batch", "4",
                                 "--tokens", "1e9"), "tp", fragment)
    web = web_refusal(client.post("/api/plan", json=ask), "tp", fragment)
    with pytest.raises(InputError) as api:
        search(PlanInputs(**ask))
    assert flag.strip() == f"error: {web}" == f"error: {api.value}"
    assert len(search(PlanInputs(**{**ask, "seq_len": 4096})).table)  # the rule, not the GPUs, was the cause


@pytest.mark.parametrize("command", ["train", "budget"])
def test_train_and_budget_name_torchtitans_sequence_split_as_plan_does(run_cli, command):
    """The same ask through `train` / `budget` (planner.plan.best_plan's empty search) said 'no layout can use these
    GPU counts' after plan's refusal was given the cause (B2 w14): one line naming tp, exit 2, plan's words."""
    args = ("--model", "llama-3-8b", "--gpu", "h100", "--gpus", "8", "--framework", "torchtitan", "--tp", "8",
            "--seq-len", "4097", "--global-batch", "4", "--tokens", "1e9")
    field_refusal(run_cli(command, *args), "tp", "must divide the tokens of a micro-batch (micro_batch 1, 2 or 4 x "
                  "seq_len 4,097): torchtitan raises")
