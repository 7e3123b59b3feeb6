"""What the second held-out GPU-hours set (issue 37 point 4) ran, as `train --mfu predicted` receives it
(jobs/validation/gpu_hours.py; training_runs.yaml; docs/training.md 'Why the second set is predicted fast')."""

import pytest
from helpers import NEOX_V1_ROWS
from helpers import reference_runs_by_id as _runs

from gpuplan.jobs.validation.gpu_hours import UNSTATED_VPP, end_to_end_gpu_hours, run_inputs


def test_gpt_neox_v1_rows_hide_no_dp_or_tp_communication():
    """GPT-NeoX v1.0 trains pipe-parallel-size 1 through DeepSpeed's PipelineEngine, which all-reduces the
    gradients after the last backward (DeeperSpeed@eb7f5cff pipe/engine.py L234-246), and reduces TP outputs
    with a synchronous all_reduce (mpu/mappings.py L29-45): the rows pass --dp-overlap 0 --tp-overlap 0."""
    runs = _runs()
    for rid in NEOX_V1_ROWS:
        inputs = run_inputs(runs[rid])
        assert (inputs.dp_overlap, inputs.tp_overlap) == (0.0, 0.0), rid
        assert "DeeperSpeed@eb7f5cff" in runs[rid]["cluster_source"], rid


def test_unhidden_dp_communication_moves_gpu_hours_by_the_exposed_seconds_alone():
    """Pythia 2.8B on its stated dp64 ZeRO-1 mb16 layout: the row's --dp-overlap 0 leaves every DP collective on
    the critical path; the GPU-hours move by (step + extra exposed seconds) / step and nothing else (by hand
    at this commit: 4.199 s + (0.0790 - 0.0132) s = 4.265 s, x1.0157: 10,698 -> 10,865 GPU-hours; with the row's
    FlashAttention 1 at its measured speed (tests/test_flash_attention_1.py) 4.818 s + 0.0658 s, x1.0137:
    12,248 -> 12,415; with the row's 50 Gb/s a GPU, Stability AI's EFA v1 (training_runs.yaml network_source),
    the collectives take 0.2689 s, 0.0451 s exposed at --dp-overlap 0.9: 4.850 s + 0.2239 s, x1.0462:
    12,329 -> 12,898; with the row's --grad-all-reduce, DeeperSpeed's all-reduce then gather (core/comm/dp_costs.py
    ALL_REDUCE_THEN_GATHER), 0.4109 s, 0.0688 s exposed at 0.9: 4.873 s + 0.3421 s, x1.0702: 12,389 -> 13,259)."""
    from gpuplan.jobs.budget.estimate import estimate_budget

    run = _runs()["pythia-2.8b"]
    stated, default = run_inputs(run), run_inputs(run).model_copy(update={"dp_overlap": 0.9})
    rep_stated, rep_default = estimate_budget(stated), estimate_budget(default)
    exposed_stated, exposed_default = rep_stated.value("class_comm"), rep_default.value("class_comm")
    assert exposed_stated > 4 * exposed_default  # 90% hidden by default, none by the run's code
    steps = run["tokens"] / (run["global_batch"] * run["seq_len"])  # 143,000
    step = rep_default.value("gpu_hours_with_comm") * 3600 / run["gpus"] / steps  # seconds a step
    # The step by hand: dp64 tp1 pp1 ZeRO-1 mb16 = one micro-batch of 16 x 2,048 = 32,768 tokens a GPU, 32 layers,
    # h 2,560, 32 heads of 80, vocab 50,304 (catalog pythia-2.8b); A100 40GB: 312 TFLOP/s fp16, 1,555 GB/s
    # (catalog/hardware/a100-sxm4-40gb.toml); full recompute: every layer's forward runs twice.
    tok, h, layers, vocab = 16 * 2048, 2560, 32, 50304
    gemm_rate = 312e12 * 0.869 * h / (h + 512)  # MAMF 0.869 (efficiency.MAMF_FRACTION) x d / (d + 512) = 225.9 TF/s
    layer_gemm = 8 * 12 * h * h * layers * tok / gemm_rate  # 12 h^2 weights x 2 FLOPs x (fwd + recompute + 2 bwd): 2.9198 s
    head_gemm = 3 * 2 * vocab * h * tok / gemm_rate  # LM head, fwd + 2 bwd: 0.1121 s
    # FA1 at 69 / 312 x 80 / 128 of peak (Dao 2023 Fig. 4, head dim 80 on the 128 kernel; test_flash_attention_1):
    # 4 h (s + 1) / 2 causal FLOPs a token and layer x (1 fwd + 1 recompute + 2.5 bwd) = 1.1479 s
    attention = 4.5 * 2 * h * 2049 * layers * tok / (312e12 * 69 / 312 * 80 / 128)
    # fitted element-wise term 6 x activation bytes at 75% of HBM, x 4/3 with the recomputed forward third:
    # 32 h (Korthikanti et al. 2022's 34 h less the two dropout masks Pythia does not keep) + 4 B x 32 heads
    # (FlashAttention's softmax statistics) + 16 B (two LayerNorms' mean / rstd) = 82,064 B a token: 0.5903 s
    elementwise = 6 * (32 * h + 4 * 32 + 16) / (1.555e12 * 0.75) * layers * tok * 4 / 3
    loss = 28 * vocab * tok / (1.555e12 * 0.89) + 4 * 7.84e-6  # native cross-entropy: 28 B a logit, 4 kernels: 0.0334 s
    optimizer = 32 * 2_775_208_960 / 64 / (1.555e12 * 0.75)  # ~32 B a parameter, ZeRO-1 shard of 64: 0.0012 s
    # Megatron DDP's add of the embedding's dense gradient (the default framework, core.time.megatron_grad_passes):
    # zeros 2 + read 2 + main grad 2 + 2 B over 50,304 x 2,560, two kernels: 0.0008 s
    embedding = 8 * vocab * h / (1.555e12 * 0.89) + 2 * 7.84e-6
    by_hand = layer_gemm + head_gemm + attention + elementwise + loss + optimizer + embedding  # 4.8054 s
    # + the exposed DP collectives (what dp_overlap 0.9 leaves of them on the row's 50 Gb/s a GPU with its
    # all-reduce then gather: 0.0732 s, the report's own line, in 21 buckets of 128 Mi parameters (the megatron
    # framework's Bridge setup; 0.0688 s in Megatron-Core's default 44), at the 2 B an fp16 run's gradients hold and
    # move under Megatron-Core, core.memory.recipe_facts.default_grad_bytes; 0.0451 s with ZeRO-1's reduce-scatter;
    # 0.0132 s on the catalog's 200 Gb/s) = 4.8785 s
    assert by_hand + exposed_default == pytest.approx(4.8785, abs=1e-4)
    assert step == pytest.approx(by_hand + exposed_default, rel=1e-6)  # every term above is exact arithmetic
    ratio = rep_stated.value("gpu_hours_with_comm") / rep_default.value("gpu_hours_with_comm")
    assert ratio == pytest.approx((step + exposed_stated - exposed_default) / step, rel=2e-3)


def test_a_stated_pipeline_without_virtual_stages_runs_one_chunk_per_stage():
    """StarCoderBase's paper states tp 4, pp 4, micro-batch 1 and no virtual stages: Megatron-LM's default
    (--num-layers-per-virtual-pipeline-stage unset) is one chunk a stage, so vpp is 1 (the planner had picked
    vpp 12, one layer a chunk); a run that names its vpp keeps it, and one without pp > 1 gets no vpp."""
    runs = _runs()
    inputs = run_inputs(runs["starcoderbase-15.5b"])
    assert (inputs.tp, inputs.pp, inputs.vpp, inputs.micro_batch) == (4, 4, UNSTATED_VPP, 1) == (4, 4, 1, 1)
    named = dict(runs["starcoderbase-15.5b"], degrees={"tp": 4, "pp": 4, "vpp": 2, "micro_batch": 1})
    assert run_inputs(named).vpp == 2
    assert run_inputs(runs["llama1-65b"]).vpp is None  # degrees {zero: 0}: the planner's schedule
    hours, basis = end_to_end_gpu_hours(runs["starcoderbase-15.5b"])
    assert "(no virtual stages named: --vpp 1): dp32 tp4 pp4 ZeRO-1 mb1" in basis  # the layout timed: no vpp


def test_starcoder_tokens_are_its_steps_times_its_batch():
    """The card's 250k pre-training steps x the paper's 512 sequences of 8,192 tokens = 1,048,576,000,000 tokens
    (the card's '1 trillion' rounded)."""
    assert _runs()["starcoderbase-15.5b"]["tokens"] == 250_000 * 512 * 8_192 == 1_048_576_000_000
