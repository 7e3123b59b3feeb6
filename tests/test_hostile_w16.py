"""Hostile inputs, wave 16 (2026-12-06): questionable asks that were answered, decided from the framework's and the
catalog's own facts, and a fresh sweep (scripts outside the suite: in-process `gpuplan.cli.main` under a SIGALRM time
box, plan files, the web app through its TestClient, the Python API) over train, budget, memory, plan and infer. A
refusal is one line naming the field and what is valid (exit status 2, 4xx), the same at every door.

Found: (a) a stated CUDA / ROCm training framework on a TPU (`train --gpu tpu-v5e --framework megatron`, torchtitan,
deepspeed, hf, llmc) was answered as if it ran there; (b) --gpus-per-node above the part's scale-up domain in the
catalog (72 on H100 SXM, whose HGX board joins 8 over NVLink) was timed as one 72-GPU NVLink domain.
Decided and left answered (see each test): --zero 2 under --framework megatron (Megatron-FSDP's optim_grads) and
torchtitan (FSDP2 without reshard after forward); --contingency 100% and above (an additive reserve).
"""

import pytest
from helpers import field_refusal, four_door_refusal

pytestmark = pytest.mark.usefixtures("time_box")  # conftest: a hang fails the case, not the suite

TRAIN = {"model": "llama-3-8b", "gpus": 16}



# ---- (a) a CUDA / ROCm framework on a TPU ---------------------------------------------------------------------------

@pytest.mark.parametrize("job, route, framework, gpu", [("train", "training", "megatron", "tpu-v5e"),
                                                        ("budget", "budget", "torchtitan", "tpu-v5p"),
                                                        ("plan", "plan", "deepspeed", "v6e"),
                                                        ("train", "training", "hf", "tpu-v4")])
def test_a_cuda_framework_on_a_tpu_is_refused_at_every_door(run_cli, client, tmp_path, job, route, framework, gpu):
    """Megatron-Core allocates on torch.cuda.current_device() (param_and_grad_buffer.py@core_v0.16.1 L783-806),
    torchtitan's device is torch's available type or 'cuda' (tools/utils.py@b5bcd76 L54-57; XLA is none of them),
    DeepSpeed's accelerator list has no TPU (accelerator/real_accelerator.py@edaa722 L23), the hf profile is
    transformers on CUDA tensors: each was answered on a TPU. The refusal names generic, the neutral model."""
    web = four_door_refusal(run_cli, client, tmp_path, job, route, {**TRAIN, "gpu": gpu, "framework": framework},
                            "framework", "CUDA devices" if framework == "hf" else "runs on CUDA / ROCm devices")
    assert "not on a Google Cloud TPU v" in web
    # transformers' Trainer does run on TPUs (torch_xla): for hf the line says what gpuplan's profile models (R4 S3)
    assert ("gpuplan's hf profile models transformers on CUDA" in web) == (framework == "hf")


def test_memory_refuses_a_tpu_among_the_gpus_it_compares_under_a_cuda_framework(run_cli, client, tmp_path):
    four_door_refusal(run_cli, client, tmp_path, "memory", "memory", {"model": "llama-3-8b", "gpu": "h100",
                      "compare": "h100,tpu-v5p", "framework": "torchtitan"}, "framework", "give --framework generic")


def test_a_tpu_under_the_neutral_model_or_the_unstated_default_answers():
    """--framework generic is what the refusal names; a framework left unstated is generic on a TPU (schema.tpu_rules,
    w16 A5; tests/test_budget.py and tests/test_monotone_w15.py plan TPUs that way)."""
    from gpuplan import TrainingInputs, estimate_training

    for ask in ({"framework": "generic"}, {}):
        report = estimate_training(TrainingInputs(**TRAIN, gpu="tpu-v5e", **ask))
        assert report.value("gpus") == 16


# ---- (b) --gpus-per-node past the catalog's scale-up domain -----------------------------------------------------------

@pytest.mark.parametrize("job, route, gpu, per_node, fragment, most", [
    ("train", "training", "h100", 72, "NVIDIA H100 80GB SXM5 scale-up domain is 8 GPUs", 8),
    ("budget", "budget", "b200", 16, "scale-up domain is 8 GPUs", 8),
    # 4 bridged pairs on PCIe in a host of 8 (h100-nvl.toml devices_per_node; core.comm.host_tier, w16 A4)
    ("plan", "plan", "h100-nvl", 16, "H100 NVL 94GB server holds 8 GPUs (NVLink domains of 2 on PCIe)", 8),
    ("plan", "plan", "l40s", 10, "L40S 48GB server holds 8 GPUs (over PCIe)", 8),  # l40s.toml devices_per_node 8
    ("train", "training", "tpu-v5e", 512, "scale-up domain is 256 chips", 256),
])
def test_gpus_per_node_past_the_parts_domain_is_refused_at_every_door(run_cli, client, tmp_path, job, route, gpu,
                                                                      per_node, fragment, most):
    """The link model times a group inside the node on the scale-up fabric (core.comm.topology.Cluster.link): 72
    H100s a node were 72 on NVLink, where an HGX board joins 8 (catalog h100-sxm.toml domain_size 8)."""
    web = four_door_refusal(run_cli, client, tmp_path, job, route, {**TRAIN, "gpus": 144, "gpu": gpu,
                                                                    "gpus_per_node": per_node}, "gpus_per_node", fragment)
    assert web.endswith(f"give 1 to {most}")


@pytest.mark.parametrize("gpu, per_node", [("gb200", 72), ("gb200", 4), ("h100", 8), ("h100", 4), ("h100-pcie", 8),
                                           ("h100-pcie", 10), ("a100-pcie-80gb", 16), ("rtx-4090", 10),
                                           ("h100-nvl", 2), ("h100-nvl", 8), ("l40s", 8), ("tpu-v5e", 256)])
def test_a_node_within_the_catalogs_domain_or_pcie_server_answers(gpu, per_node):
    """An NVL72 rack (gb200.toml domain_size 72), a compute tray, an HGX board or part of one, a v5e pod
    (domain_size 256), an H100 NVL pair and an L40S server of 8 (devices_per_node) are taken. A PCIe-only part whose
    catalog entry states no server (h100-pcie, a100-pcie, rtx-4090: domain 1, no devices_per_node) has no cap beyond
    the field's range: the link model times its node on PCIe at any size, and 10-card single-root PCIe servers are
    sold (review w15 R4 M6; the 8 there before had no source)."""
    from gpuplan import TrainingInputs

    assert TrainingInputs(**TRAIN, gpu=gpu, gpus_per_node=per_node).gpus_per_node == per_node


# ---- decided: answered ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("framework", ["megatron", "torchtitan", "deepspeed"])
def test_zero_2_answers_under_each_framework_that_runs_it(framework):
    """Megatron-Core 0.16.1 has a gradient-and-optimizer sharding mode: Megatron-FSDP's
    --data-parallel-sharding-strategy optim_grads ('Shards gradients and optimizer states, this is conceptually close
    to "ZeRO-2"', megatron/core/distributed/fsdp/src/megatron_fsdp/megatron_fsdp.py@core_v0.16.1 L87; choices at
    megatron/training/arguments.py@core_v0.16.1 L2307-2309); torchtitan's is FSDP2 with
    fsdp_reshard_after_forward 'never' (config/configs.py@b5bcd76 L145-157; core.frameworks zero2_is_fsdp2_no_reshard);
    DeepSpeed runs stages 0-3. So --zero 2 is answered under each (without a pipeline)."""
    from gpuplan import TrainingInputs, estimate_training

    report = estimate_training(TrainingInputs(model="llama-3-8b", gpu="h100", gpus=8, zero=2, framework=framework))
    assert report.value("mem_layout")["zero"] == 2 and report.value("mem_fits")


def test_a_contingency_of_100_percent_or_more_is_an_additive_reserve_and_answers():
    """The budget is run x (1 + contingency) (jobs.training.sections: 'GPU-hours budget incl. contingency'): 100% is
    a reserve as large as the run, not a share of a whole that must stay below 1; the range 0 to 500% stands, and
    past it or below 0 is refused."""
    from gpuplan import InputError, TrainingInputs, estimate_training

    ask = {"model": "llama-3-8b", "gpu": "h100", "gpus": 8}
    plain = estimate_training(TrainingInputs(**ask, contingency=0))
    doubled = estimate_training(TrainingInputs(**ask, contingency="100%"))
    assert doubled.value("gpu_hours_budget") == pytest.approx(2 * plain.value("gpu_hours_budget"), rel=1e-9)
    for bad in ("-1%", "501%", "nan"):
        with pytest.raises(InputError, match="contingency"):
            TrainingInputs(**ask, contingency=bad)


# ---- (c) a plan file of many values under the size limit ------------------------------------------------------------

@pytest.mark.parametrize("body", ["x: [" + ",".join(["0"] * 400_000) + "]\n",  # 0.8 MB: 22 s to refuse before
                                  "".join(f"k{i}: {i}\n" for i in range(60_000))])  # 0.7 MB of keys: 6 s
def test_a_plan_file_of_many_values_is_refused_before_it_is_read_through(run_cli, tmp_path, body):
    """PyYAML composes in Python (~55 us a node): a plan file under the 1 MiB limit holding 400,000 list items took
    22 s to be told 'unknown field'. A plan file maps a few dozen names to values; past 10,000 nodes it is refused
    where the 10,001st starts (adapters.plan_formats.MAX_NODES)."""
    import time

    plan = tmp_path / "p.yaml"
    plan.write_text("model: llama-3-8b\ngpu: h100\n" + body, encoding="utf-8")
    started = time.perf_counter()
    line = field_refusal(run_cli("train", str(plan)), "plan file", "holds more than 10,000 values (line ")
    assert time.perf_counter() - started < 5  # 22 s / 6 s before; a margin for 2 shared cores (R4's note)
    assert "not valid YAML" not in line  # the file is valid YAML, refused for its size (review w15 R4 S4)


def test_a_plan_file_of_ten_thousand_values_is_read():
    from gpuplan.adapters.plan_formats import parse_yaml

    text = "x: [" + ",".join(["0"] * 9_998) + "]\n"  # the mapping, its key, the list and 9,998 items: 10,001 nodes
    with pytest.raises(Exception, match="more than 10,000 values"):
        parse_yaml(text, "plan file", "p.yaml")
    assert len(parse_yaml(text.replace("[0,", "["), "plan file", "p.yaml")["x"]) == 9_997  # 10,000 nodes


# ---- (d) an overlap share of communication a layout does not have ---------------------------------------------------

@pytest.mark.parametrize("job, route, ask, field", [
    ("train", "training", {"tp": 1, "tp_overlap": "50%"}, "tp_overlap"),
    ("plan", "plan", {"model": "mixtral-8x7b", "ep": 1, "ep_overlap": 0.5}, "ep_overlap"),
])
def test_an_overlap_of_communication_the_layout_lacks_is_refused_at_every_door(run_cli, client, tmp_path, job, route,
                                                                             ask, field):
    """llama-3-8b on 8 H100 at tp 1: 262.374 days with --tp-overlap 0.9 and without; mixtral-8x7b on 16 at ep 1:
    283.788 both (measured before the rule: the share multiplies a communication time of 0)."""
    four_door_refusal(run_cli, client, tmp_path, job, route, {**TRAIN, "gpu": "h100", **ask}, field, "there is none")


def test_an_overlap_of_zero_or_with_the_degree_left_to_the_planner_answers():
    """0 claims nothing (GPT-NeoX v1.0 rows state tp_overlap 0 at model-parallel-size 1, training_runs.yaml); with tp
    or ep unstated the planner may pick a degree where the share counts."""
    from gpuplan import TrainingInputs

    for ask in ({"tp": 1, "tp_overlap": 0}, {"tp_overlap": 0.5}, {"model": "mixtral-8x7b", "ep_overlap": 0.5}):
        assert TrainingInputs(**{**TRAIN, "gpu": "h100", **ask})


# ---- (e) QLoRA under a framework with no 4-bit base ------------------------------------------------------------------

@pytest.mark.parametrize("job, route, framework", [("train", "training", "megatron"), ("memory", "memory", "torchtitan")])
def test_qlora_under_a_framework_without_nf4_weights_is_refused_at_every_door(run_cli, client, tmp_path, job, route,
                                                                             framework):
    """git grep -il 'qlora|nf4|bitsandbytes': nothing in Megatron-LM core_v0.16.1, only a 'Future Enhancements' line
    in Megatron-Bridge@067f987 (src/megatron/bridge/models/README.md L314), nothing under torchtitan/ at b5bcd76 (its
    components/lora.py wraps Linear or Float8Linear). QLoRA's NF4 base is bitsandbytes' under transformers + peft."""
    ask = {"model": "llama-3-8b", "gpu": "h100", "finetune": "qlora", "framework": framework,
           **({"gpus": 8} if job == "train" else {})}
    four_door_refusal(run_cli, client, tmp_path, job, route, ask, "finetune", "give --finetune lora, or --framework hf")


@pytest.mark.parametrize("ask", [{"framework": "hf"}, {"framework": "deepspeed"}, {}, {"framework": "megatron",
                                                                                      "finetune": "lora"}])
def test_qlora_under_transformers_or_lora_under_megatron_answers(ask):
    """The published QLoRA rows run transformers + peft under DeepSpeed ZeRO-3 or FSDP (published_memory.yaml
    ds-peft-z3-qlora-llama2-70b-2x40gb, hf-fsdp-qlora-offload-llama2-70b-2x24gb); the default framework, unstated,
    is not refused (the rule reads a stated framework, as the TPU rule does)."""
    from gpuplan import TrainingInputs

    assert TrainingInputs(**{"model": "llama-3-8b", "gpu": "h100", "gpus": 8, "finetune": "qlora", **ask})


# ---- (f) llm.c off NVIDIA ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("job, route, ask", [("train", "training", {"gpu": "mi300x", "gpus": 8}),
                                             ("budget", "budget", {"gpu": "gaudi3", "gpus": 8}),
                                             ("memory", "memory", {"gpu": "h100", "compare": "h100,mi355x"})])
def test_llmc_on_a_part_that_is_not_nvidias_is_refused_at_every_door(run_cli, client, tmp_path, job, route, ask):
    """karpathy/llm.c@f1e2ace is 'pure C/CUDA' (README L3); AMD support is a separate fork (README L203-206)."""
    four_door_refusal(run_cli, client, tmp_path, job, route, {"model": "gpt2", "framework": "llmc", **ask}, "framework",
                      "is C and CUDA for NVIDIA GPUs only")


def test_llmc_memory_with_the_default_comparison_list_answers():
    """memory's default comparison list holds an MI300X the user did not name: its row is not refused for them."""
    from gpuplan import MemoryInputs, estimate_memory

    report = estimate_memory(MemoryInputs(model="gpt2", gpu="h100", framework="llmc"))
    assert report.value("model_states_total") > 0


# ---- (g) an optimizer the stated framework has not -------------------------------------------------------------------

@pytest.mark.parametrize("job, route, framework, optimizer", [("train", "training", "megatron", "lion"),
                                                              ("budget", "budget", "megatron", "adafactor"),
                                                              ("plan", "plan", "torchtitan", "sgd")])
def test_an_optimizer_the_framework_has_not_is_refused_at_every_door(run_cli, client, tmp_path, job, route, framework,
                                                                    optimizer):
    """Megatron-Core's --optimizer choices are adam, sgd, muon, dist_muon (megatron/training/arguments.py@core_v0.16.1
    L2056-2058); torchtitan's factories Adam, AdamW, DistMuon, else NotImplementedError('Optimizer {name} not added.')
    (components/optimizer/optimizer.py@b5bcd76 L143-150)."""
    four_door_refusal(run_cli, client, tmp_path, job, route, {**TRAIN, "gpu": "h100", "framework": framework,
                                                              "optimizer": optimizer}, "optimizer", f"has no {optimizer}")


@pytest.mark.parametrize("ask", [{"framework": "megatron", "optimizer": "muon"}, {"framework": "megatron",
                                 "optimizer": "adam8bit"}, {"framework": "torchtitan",
                                 "optimizer": "adamw"}, {"framework": "hf", "optimizer": "lion"},
                                 {"framework": "deepspeed", "optimizer": "adafactor"}, {"optimizer": "lion"}])
def test_an_optimizer_the_framework_runs_or_an_unstated_framework_answers(ask):
    from gpuplan import TrainingInputs

    assert TrainingInputs(**TRAIN, gpu="h100", **ask)


# ---- (h) an attention option the kernel does not read ----------------------------------------------------------------

@pytest.mark.parametrize("job, route, ask, field, fragment", [
    ("train", "training", {"framework": "torchtitan", "attention_kernel": "flash1"}, "attention_kernel",
     "imports no flash-attn"),
    ("memory", "memory", {"framework": "deepspeed", "attention_kernel": "flash1"}, "attention_kernel",
     "transformers' modules (--framework deepspeed with --implementation hf)"),
    ("train", "training", {"attention_kernel": "eager", "attention_efficiency": "30%"}, "attention_efficiency",
     "--attention-kernel eager is timed as its matmuls and softmax ops"),
    ("plan", "plan", {"framework": "hf", "attention_efficiency": 0.3}, "attention_efficiency",
     "--framework hf times PyTorch's SDPA on the NVIDIA H100 80GB SXM5 from cuDNN's measured speeds"),
])
def test_an_attention_option_that_changes_nothing_is_refused_at_every_door(run_cli, client, tmp_path, job, route, ask,
                                                                          field, fragment):
    """llama-3-8b on 16 H100 (tp 1, pp 1, ZeRO-1, mb 2, no recompute, predicted MFU): eager 11.3511 days with
    --attention-efficiency 0.3 and without; flash1 7.46027 both; torchtitan with flash1 7.48173 = with flash (measured
    before the rules). torchtitan's attention imports SDPA, FlexAttention and varlen_attn only
    (models/common/attention.py@b5bcd76 L24-39); the deepspeed profile trains transformers' modules (FA2 or SDPA)."""
    base = {"model": "llama-3-8b", "gpu": "h100", **({"gpus": 16} if job != "memory" else {})}
    four_door_refusal(run_cli, client, tmp_path, job, route, {**base, **ask}, field, fragment)


# ---- (i) a moment width the 8-bit optimizer does not have -------------------------------------------------------------

@pytest.mark.parametrize("job, route", [("memory", "memory"), ("train", "training")])
def test_a_moment_dtype_with_eight_bit_adam_is_refused_at_every_door(run_cli, client, tmp_path, job, route):
    """memory llama-3-8b on 8 H100 with --optimizer adam8bit: 1.873 GiB of optimizer states with --moment-dtype bf16,
    fp32 or neither (measured before the rule); with adamw 7.479 -> 3.739 GiB at bf16."""
    ask = {"model": "llama-3-8b", "gpu": "h100", "gpus": 8, "optimizer": "adam8bit", "moment_dtype": "bf16"}
    four_door_refusal(run_cli, client, tmp_path, job, route, ask, "moment_dtype", "keeps its moments in 8 bits")


# ---- review w15 R4: the rules above narrowed to where the option is a no-op or the framework refuses ---------------

L = {"model": "llama-3-8b", "gpus": 16, "tp": 1, "pp": 1, "zero": 1, "micro_batch": 2, "recompute": "none"}


def _days(**ask) -> float:
    from gpuplan import TrainingInputs, estimate_training

    return estimate_training(TrainingInputs(**ask)).value("wall_days")


def test_attention_efficiency_answers_where_the_kernel_reads_it():
    """R4 M1 / S2: FlashAttention 1 is timed never faster than the flash kernel the efficiency sets
    (attention_core.fa1_passes), and under --framework hf a part without cuDNN's measured SDPA tables (A100) times
    SDPA at it (attention.sdpa_seconds_per_token). llama-3-8b on 16 H100 (the layout above) flash1: 149.205 days
    with none, 236.573 at 0.05 (R4's parent-tree numbers, unchanged); hf on 16 A100 80GB (ZeRO 3, mb 1, full
    recompute): 589.01 days with none, 962.52 at 0.05, 539.21 at 0.9."""
    flash1 = {**L, "gpu": "h100", "attention_kernel": "flash1"}
    assert _days(**flash1) == pytest.approx(149.205, abs=1e-3)
    assert _days(**flash1, attention_efficiency=0.05) == pytest.approx(236.573, abs=1e-3)
    # the pins above are R4's measurements; the rule itself, a relation that can fail: flash1 never below flash
    assert _days(**flash1, attention_efficiency=0.05) >= _days(**{**flash1, "attention_kernel": "flash"},
                                                               attention_efficiency=0.05)
    hf = {**L, "gpu": "a100", "framework": "hf", "zero": 3, "micro_batch": 1, "recompute": "full"}
    assert _days(**hf, attention_efficiency=0.05) / _days(**hf) == pytest.approx(962.52 / 589.01, rel=1e-3)
    assert _days(**hf, attention_efficiency=0.9) < _days(**hf)  # read both ways: 539.21 < 589.01 days (docstring)


def test_flash1_under_megatron_deepspeed_answers():
    """R4 M2: --framework deepspeed --implementation megatron is Megatron-DeepSpeed, which has --use-flash-attn-v1
    (megatron/arguments.py@4efb479 L927); only transformers' modules (implementation hf, the default) refuse it."""
    from gpuplan import TrainingInputs

    ask = {"model": "llama-2-7b", "gpu": "a100", "gpus": 16, "framework": "deepspeed", "attention_kernel": "flash1"}
    assert TrainingInputs(**ask, implementation="megatron").attention_kernel == "flash1"


@pytest.mark.parametrize("job, route, optimizer, fragment", [
    ("memory", "memory", "sgd", "Megatron-Core never narrows"),
    ("train", "training", "muon", "support precision aware optimizer"),
])
def test_a_moment_dtype_with_an_optimizer_megatron_does_not_narrow_is_refused(run_cli, client, tmp_path, job, route,
                                                                               optimizer, fragment):
    """R4 M4: memory llama-3-8b on 8 H100 under megatron answered sgd 3.739 -> 1.870 GiB and muon 4.229 -> 2.114 GiB
    of optimizer states at --moment-dtype bf16; Megatron-Core passes exp_avg_dtype / exp_avg_sq_dtype to Adam only
    (optimizer/__init__.py@core_v0.16.1 L365-368, SGD L401-407) and Muon's buffer is zeros_like(p.data)
    (muon.py L207-212)."""
    ask = {"model": "llama-3-8b", "gpu": "h100", "gpus": 8, "framework": "megatron", "optimizer": optimizer,
           "moment_dtype": "bf16"}
    four_door_refusal(run_cli, client, tmp_path, job, route, ask, "moment_dtype", fragment)


def test_bf16_moments_under_torchtitan_answer_and_halve_the_states():
    """R4 S5: torchtitan@b5bcd76's optimizer.implementation 'fused_opt_states_bf16' keeps Adam / AdamW's exp_avg and
    exp_avg_sq in bf16 (components/optimizer/optimizer.py L109-123, L332-371): 2 x 4 B -> 2 x 2 B a parameter."""
    from gpuplan import MemoryInputs, estimate_memory

    ask = {"model": "llama-3-8b", "gpu": "h100", "gpus": 8, "framework": "torchtitan"}
    plain = estimate_memory(MemoryInputs(**ask)).value("bytes_optimizer")
    assert estimate_memory(MemoryInputs(**ask, moment_dtype="bf16")).value("bytes_optimizer") == pytest.approx(
        plain / 2, rel=1e-12)


@pytest.mark.parametrize("job, route, ask, field, fragment", [
    ("train", "training", {"zero": 3}, "zero", "Muon optimizer does not support distributed optimizer"),
    ("budget", "budget", {"zero": 2}, "zero", "give --zero 0 or 1"),
    ("plan", "plan", {"dtype": "fp16"}, "dtype", "'muon with fp16 is not supported.'"),
])
def test_megatron_muon_with_a_layout_megatron_refuses_is_refused(run_cli, client, tmp_path, job, route, ask, field,
                                                                 fragment):
    """R4 M5: arguments.py@core_v0.16.1 L1178-1186 asserts no distributed optimizer, torch FSDP2 or Megatron-FSDP
    with Muon; muon.py L192-196 raises under fp16. Each was answered (exit 0)."""
    four_door_refusal(run_cli, client, tmp_path, job, route, {**TRAIN, "gpu": "h100", "framework": "megatron",
                                                              "optimizer": "muon", **ask}, field, fragment)


@pytest.mark.parametrize("ask", [{"zero": 1}, {"zero": 0, "dtype": "bf16"}, {"framework": "deepspeed", "zero": 3},
                                 {"optimizer": "adamw", "zero": 3, "framework": "megatron"}])
def test_muon_at_zero_1_or_zero_3_outside_megatron_answers(ask):
    """dist_muon's layer-wise sharding keeps ZeRO-1-like memory; DeepSpeed takes any torch optimizer at any stage."""
    from gpuplan import TrainingInputs

    assert TrainingInputs(**{**TRAIN, "gpu": "h100", "framework": "megatron", "optimizer": "muon", **ask})


def test_the_free_search_and_memory_advice_keep_megatron_muon_to_zero_0_or_1():
    """R4 M5 in the search: llama-3-70b on 16 H100 under --framework megatron --optimizer muon was planned at ZeRO 3
    (dp 8, tp 2), a layout Megatron-Core asserts against (arguments.py@core_v0.16.1 L1178-1186); now the search offers
    0 and 1 (planner.framework_rules.OPTIMIZER_ZERO_STAGES), and memory's advice names ZeRO-1, not ZeRO-3. adamw
    keeps all four stages."""
    import json

    from gpuplan import MemoryInputs, TrainingInputs, estimate_memory, estimate_training
    from gpuplan.planner.framework_rules import optimizer_zero_stages

    ask = {"model": "llama-3-70b", "gpu": "h100", "framework": "megatron", "optimizer": "muon"}
    assert estimate_training(TrainingInputs(**ask, gpus=16)).value("mem_layout")["zero"] in (0, 1)
    advice = json.dumps(estimate_memory(MemoryInputs(**ask, gpus=8)).to_dict())
    assert "ZeRO-1" in advice and "ZeRO-2" not in advice and "ZeRO-3" not in advice
    assert optimizer_zero_stages("megatron", "adamw") == optimizer_zero_stages("deepspeed", "muon") == (0, 1, 2, 3)


@pytest.mark.parametrize("job, route, framework", [("train", "training", "hf"), ("plan", "plan", "deepspeed")])
def test_attention_efficiency_on_a_model_transformers_runs_eager_is_refused(run_cli, client, tmp_path, job, route,
                                                                           framework):
    """gemma2 refuses SDPA in transformers (_supports_sdpa = False), so its modules run eager attention whatever the
    kernel: gemma-2-9b on 16 A100 (ZeRO 3, mb 1, full recompute) 1,149.10 days under hf and 950.37 under deepspeed,
    with --attention-efficiency 0.05 and without (measured before the rule)."""
    ask = {"model": "gemma-2-9b", "gpu": "a100", "gpus": 16, "framework": framework, "attention_efficiency": 0.05}
    four_door_refusal(run_cli, client, tmp_path, job, route, ask, "attention_efficiency", "with eager attention")


def test_attention_efficiency_on_that_model_under_megatron_deepspeed_answers():
    """Megatron-DeepSpeed's own attention reads it: 911.65 -> 1,409.49 days at 0.05 (same layout)."""
    ask = {**L, "model": "gemma-2-9b", "gpu": "a100", "framework": "deepspeed", "implementation": "megatron",
           "zero": 3, "micro_batch": 1, "recompute": "full"}
    assert _days(**ask, attention_efficiency=0.05) / _days(**ask) == pytest.approx(1409.4909 / 911.6533, rel=1e-4)
