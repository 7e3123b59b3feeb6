"""--framework llmc refuses the setup options llm.c runs one way only (planner.framework_rules.LLMC_FIXED_OPTIONS):
any other value is one line naming the field and what train_gpt2.cu@f1e2ace runs, exit 2, on every door (CLI
train / memory / plan / budget, the web API, the Python API); a value equal to llm.c's own behaviour is taken.
Before review_w11_r1 M2 each was taken silently (--finetune lora and --mtp-layers 1 moved the time only)."""

import pytest
from helpers import field_refusal, web_refusal

TRAIN = ("train", "gpt2-large", "--framework", "llmc", "--gpu", "a100-sxm4-80gb", "--gpus", "8", "--tokens", "1e10",
         "--mfu", "predicted")
MEMORY = ("memory", "gpt2-large", "--framework", "llmc", "--gpu", "a100-sxm4-80gb", "--gpus", "8", "--micro-batch", "8")
REFUSED = [  # (flags, field, a fragment of what llm.c runs)
    (("--finetune", "lora"), "finetune", "trains every weight"),
    (("--finetune", "qlora"), "finetune", "trains every weight"),
    (("--lora-rank", "8"), "lora_rank", "has no adapters"),
    (("--mtp-layers", "1"), "mtp_layers", "no multi-token-prediction"),
    (("--optimizer", "sgd"), "optimizer", "AdamW only"),
    (("--implementation", "hf"), "implementation", "its own CUDA kernels"),
    (("--implementation", "megatron"), "implementation", "its own CUDA kernels"),
    (("--recipe", "amp"), "recipe", "fp32 master weights"),
    (("--loss", "hf-ce"), "loss", "fused_classifier"),
    (("--optimizer-impl", "forloop"), "optimizer_impl", "fused AdamW"),
    (("--allocator", "expandable"), "allocator", "cudaMalloc"),
]
TRAIN_ONLY = [(("--zero", "1", "--grad-all-reduce"), "grad_all_reduce", "reduce-scatters")]
MEMORY_ONLY = [(("--offload-optimizer",), "offload_optimizer", "on the GPU"),
               (("--dropout", "0.1"), "dropout", "no dropout")]


@pytest.mark.parametrize("flags, field, fragment", REFUSED + TRAIN_ONLY)
def test_train_refuses_what_llmc_has_no_choice_of(run_cli, flags, field, fragment):
    line = field_refusal(run_cli(*TRAIN, *flags), field, fragment)
    assert "--framework llmc" in line


@pytest.mark.parametrize("flags, field, fragment", REFUSED + MEMORY_ONLY)
def test_memory_refuses_what_llmc_has_no_choice_of(run_cli, flags, field, fragment):
    field_refusal(run_cli(*MEMORY, *flags), field, fragment)


@pytest.mark.parametrize("command", ["plan", "budget"])
def test_plan_and_budget_refuse_lora(run_cli, command):
    extra = ("--price", "2") if command == "budget" else ()
    args = (command, "gpt2-large", "--framework", "llmc", "--gpu", "a100-sxm4-80gb", "--gpus", "8", "--tokens", "1e10",
            *extra, "--finetune", "lora")
    field_refusal(run_cli(*args), "finetune", "trains every weight")


@pytest.mark.parametrize("flags", [(), ("--finetune", "full"), ("--optimizer", "adamw"), ("--mtp-layers", "0"),
                                   ("--recipe", "mixed"), ("--optimizer-impl", "fused"), ("--no-offload-optimizer",),
                                   ("--dropout", "0")])
def test_llmcs_own_values_are_taken_and_change_nothing(run_cli, flags):
    """A value equal to llm.c's own behaviour is accepted, and the peak is the one without it."""
    import json

    def peak(*extra):
        code, out, err = run_cli(*MEMORY, *extra, "--json")
        assert code == 0, err
        return json.loads(out)["results"]["peak_allocated"]

    assert peak(*flags) == peak()


def test_web_and_python_refuse_too(client):
    from gpuplan import estimate_memory, estimate_training
    from gpuplan.errors import InputError
    from gpuplan.jobs.memory.schema import MemoryInputs
    from gpuplan.jobs.training.schema import TrainingInputs

    body = {"model": "gpt2-large", "framework": "llmc", "gpu": "a100-sxm4-80gb", "gpus": 8, "mtp_layers": 1}
    web_refusal(client.post("/api/memory", json=body), "mtp_layers", "no multi-token-prediction")
    web_refusal(client.post("/api/training", json=body | {"tokens": 1e10, "mfu": "predicted"}), "mtp_layers")
    with pytest.raises(InputError, match="^finetune: got 'lora'; --framework llmc trains every weight"):
        estimate_training(TrainingInputs(model="gpt2-large", framework="llmc", gpus=8, tokens=1e10, finetune="lora"))
    with pytest.raises(InputError, match="^optimizer: got 'sgd'"):
        estimate_memory(MemoryInputs(model="gpt2-large", framework="llmc", gpus=8, optimizer="sgd"))


def test_memory_report_points_at_what_moves_llmc(run_cli):
    """Under llmc --recipe and --implementation are fixed (refused otherwise), so the report's 'assumptions that
    move it most' names recompute (-r 0 / -r 1) and the margin instead; megatron's list is unchanged."""
    code, out, err = run_cli(*MEMORY)
    assert code == 0, err
    moving = out.split("assumptions that move it most")[1].split("note:")[0]
    assert "--recipe" not in moving and "--implementation" not in moving and "--recompute" in moving
    code, out, err = run_cli(*(a if a != "llmc" else "megatron" for a in MEMORY))
    assert "--recipe" in out.split("assumptions that move it most")[1]
