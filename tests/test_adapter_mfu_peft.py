"""The MFU numerator under LoRA on an MoE follows the step model's peft rule (wave 9 polish, item 4).

peft 0.21 on a fused-experts MoE under --framework hf folds the expert adapters into the expert weights once a step
(core.time.eager_step), so a token multiplies only the attention adapters;
core.time.trained_params.trained_params_per_gpu reads that count whenever StepSettings.eager_ops is set (--framework
hf). The model-FLOPs numerator counted the per-token expert adapters anyway (core.model.flops.training_flops_per_token
never passed ``peft_experts``): Qwen3-30B-A3B r16 at 4,096 tokens, 193.5 vs 80.2 MFLOP of adapter work a token, ~0.5% of
the numerator, so the plan's MFU and `train`'s predicted budget stood on a count the timed step does not run.
"""

import pytest

from gpuplan.adapters.resolve import resolve_gpu, resolve_model
from gpuplan.core.model import flops as F

QWEN3_MOE = "qwen3-30b-a3b"  # 48 layers, hidden 2048, 32 q heads and 4 KV heads of 128, 128 experts (8 active)
ATTENTION_ADAPTERS_PER_LAYER = 16 * ((2048 + 4096) + 2 * (2048 + 512) + (4096 + 2048))
"""Hand-worked rank-16 LoRA parameters of one layer's q, k, v, o projections: r x (in + out) each =
98,304 + 40,960 + 40,960 + 98,304 = 278,528 (the router and the folded experts add none a token)."""


def test_peft_adapter_flops_per_token_are_the_attention_adapters_by_hand():
    """6 FLOPs per adapter parameter a token multiplies (forward 2, backward 4): 6 x 48 x 278,528 = 80,216,064."""
    spec = resolve_model(QWEN3_MOE)
    per_token = F.training_flops_per_token(spec, 4096, "full", finetune="lora", lora_rank=16, peft_experts=True)
    assert 3 * per_token.adapter_forward == pytest.approx(6 * 48 * ATTENTION_ADAPTERS_PER_LAYER, rel=1e-12)
    dense = F.training_flops_per_token(spec, 4096, "full", finetune="lora", lora_rank=16)
    # the dense rule (lora_params_per_layer) on every layer: 16 x (17,408 attention widths + 3 x (2,048 + 6,144),
    # the config's dense intermediate_size) = 671,744 a layer; 6 x 48 x 671,744 = 193,462,272
    assert 3 * dense.adapter_forward == pytest.approx(193.462272e6, rel=1e-9)  # per-token expert adapters counted
    assert dense.model - per_token.model == pytest.approx(193.462272e6 - 80.216064e6, rel=1e-9)


def test_plan_mfu_under_hf_uses_the_peft_count(run_json):
    """The plan's MFU x GPUs x dense peak / tokens per second is the numerator it divided by: the peft count (1.0
    within 1e-9); the parent's was the per-token count, 0.514% larger (ratio 0.99486)."""
    results = run_json("plan", QWEN3_MOE, "--finetune", "lora", "--framework", "hf", "--gpus", "8", "--gpu",
                       "h100")["results"]
    implied = results["best_mfu"] * results["best_gpus"] * resolve_gpu("h100").peak("bf16") \
        / results["best_tokens_per_second"]
    spec = resolve_model(QWEN3_MOE)
    peft = F.training_flops_per_token(spec, 4096, "full", finetune="lora", lora_rank=16, peft_experts=True).model
    assert implied == pytest.approx(peft, rel=1e-9)


@pytest.mark.parametrize("framework, peft", [("hf", True), ("megatron", False)])
def test_train_flops_follow_the_framework(framework, peft):
    """jobs.training.timing.count_flops (the budget's FLOPs: --mfu predicted divides them by the plan's MFU) takes
    the same rule: peft's fold under hf only (eager_stack sets eager_ops for hf alone)."""
    import gpuplan
    from gpuplan.jobs.training.timing import count_flops

    inputs = gpuplan.TrainingInputs(model=QWEN3_MOE, finetune="lora", framework=framework, tokens="1B", seq_len=4096)
    spec = resolve_model(QWEN3_MOE)
    expected = F.training_flops_per_token(spec, 4096, "full", finetune="lora", lora_rank=16, peft_experts=peft).model
    assert count_flops(spec, inputs, "none").exact == pytest.approx(expected * 1e9, rel=1e-9)


def test_a_dense_model_is_unchanged_by_the_rule():
    """No fused experts: peft's count is the per-token one (llama-2-7b r16: 6 x 32 x 16 x (4 x 8,192 + 3 x 15,104))."""
    spec = resolve_model("llama-2-7b")
    a, b = (F.training_flops_per_token(spec, 4096, "full", finetune="lora", lora_rank=16, peft_experts=p).model
            for p in (True, False))
    assert a == b
    by_hand = 6 * 32 * 16 * (4 * (4096 + 4096) + 2 * (4096 + 11008) + (11008 + 4096))
    assert 3 * F.training_flops_per_token(spec, 4096, "full", finetune="lora", lora_rank=16).adapter_forward \
        == pytest.approx(by_hand, rel=1e-12)
