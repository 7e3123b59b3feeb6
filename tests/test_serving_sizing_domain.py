"""The serving searches take TP up to the part's scale-up domain, not its host (issue 38 point 2, wave 15 helper B1):
a GB200 / GB300 compute tray holds 4 GPUs but every GPU of an NVL72 reaches the other 71 over NVLink, so a replica
may be tp 8 or 16 (a multi-node launch, its all-reduces timed as NCCL's for vLLM / SGLang); an HGX H100 / B200 node
still stops at tp 8. And a GPU type with no catalog price is shown in the search table, after the priced ones."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from gpuplan.catalog import load_accelerator
from gpuplan.core.serving import kernels as KR
from gpuplan.core.serving import memory as M
from gpuplan.core.serving.load import LoadTarget
from gpuplan.core.serving.releases import parse_release
from gpuplan.jobs.inference import sizing
from gpuplan.jobs.inference.alternatives import UNPRICED_LAST, search_table
from gpuplan.jobs.inference.resolve import resolve_plan
from gpuplan.jobs.inference.schema import InferenceInputs
from gpuplan.jobs.inference.serving import max_sequences_at, search_tps

GB = 1e9


@pytest.mark.parametrize("gpu, tps", [
    ("gb200", (1, 2, 4, 8, 16)),  # 4 a tray, NVLink domain 72
    ("gb300", (1, 2, 4, 8, 16)),
    ("h100", (1, 2, 4, 8)),  # HGX: node = domain = 8, as before
    ("b200", (1, 2, 4, 8)),
    ("mi250x", (1, 2, 4)),  # 4-GPU node
    ("a10", (1, 2, 4, 8)),  # PCIe card, no host size: the search's default server of 8
    ("tpu-v6e", (1, 2, 4, 8)),  # a 256-chip pod, but no engine's launch across its hosts was read: the host
])
def test_tp_candidates_reach_the_nvlink_domain_not_the_tray(gpu, tps):
    assert search_tps(load_accelerator(gpu)) == tps


@pytest.fixture(scope="module")
def plan_405b():
    return resolve_plan(InferenceInputs(model="llama-3.1-405b", gpu="gb200"))


def test_405b_needs_tp8_on_gb200_and_is_sized_there_with_the_launch_and_nccl_note(plan_405b, monkeypatch):
    """Hand-worked: Llama-3.1-405B bf16 is 811.7 GB of weights; a GB200 leaves (189,471 MiB - 512 MiB reserve) x 0.92
    = 169.77 GiB = 182.29 GB usable (vLLM gpu_memory_utilization). tp 4: 811.7 / 4 = 202.9 GB > 182.29, nothing fits
    (the sizing stopped here before: 'none on gb200 meets the target'); tp 8: 182.29 - 101.47 weights - 1.19 profiled
    activations - 4.52 runtime (non-torch 0.27, NCCL 1.95, CUDA graphs 2.29) = 75.11 GB for the KV cache; KV 126 layers
    x 8 KV heads x 128 x 2 x 2 B / 8 = 63 KiB a token, 264.2 MB a 4,096-token sequence: floor(75.11 / 0.2642) = 284.
    On H100 (80 GB, 8 a node) 811.7 / 8 = 101.5 GB > 80: the search tries no tp past 8 and finds nothing."""
    gb200, h100 = load_accelerator("gb200"), load_accelerator("h100")
    memory_tp4 = M.serving_memory_on(plan_405b.spec, plan_405b.groups, plan_405b.setup, 4, 1, gb200)
    assert memory_tp4.usable == pytest.approx(182.29 * GB, rel=1e-4)
    assert memory_tp4.weights == pytest.approx(811.7 * GB / 4, rel=2e-3) and memory_tp4.weights > memory_tp4.usable
    assert max_sequences_at(plan_405b, gb200, 4) <= 0
    assert max_sequences_at(plan_405b, gb200, 8) == 284
    steps = sizing._replica_steps(plan_405b, gb200)
    assert sorted(steps) == [8, 16]  # tp 1 / 2 / 4 hold no sequence
    assert sizing._replica_steps(plan_405b, h100) == {}  # stops at 8, where nothing fits

    monkeypatch.setattr(sizing, "serving_gpus", lambda plan: iter([gb200]))
    target = LoadTarget(2.0, 0.05, 1.0)  # 1 request/s, TTFT p99 2 s, TPOT 50 ms
    configs = sizing.size_for_target(plan_405b, target, timed={"gb200": steps})
    section = sizing.sizing_section(plan_405b, target, configs, "gb200")
    lines = {line.key: line for line in section.lines}
    assert lines["sized_config"].value["tp"] == 8 and lines["sized_config"].value["gpu"] == "gb200"
    launch = lines["sized_multi_node"]
    assert "tp 8 spans 2 compute trays of 4" in launch.text and "--nnodes 2" in launch.text
    assert "NCCL" in launch.formula
    assert sum(1 for line in section.lines if line.label == "launch across trays") == 1


def test_tp8_over_two_gb200_trays_is_nccls_for_vllm_and_sglang_not_trtllm():
    """vLLM's CustomAllreduce leaves the kernel off when its group 'spans across nodes' (custom_all_reduce.py@00d618aa
    :90-96; in_the_same_node_as is a shared-memory probe, one host): tp 8 over two 4-GPU trays gets 0 bytes (NCCL),
    tp 4 inside one tray the 8 MiB bound. TensorRT-LLM keeps its own rule."""
    gb200 = load_accelerator("gb200")
    for engine in ("vllm==0.10.1", "sglang==0.5.6"):
        release = parse_release(engine)
        assert KR.custom_allreduce_limit(release, 8, gb200) == 0.0
        assert KR.custom_allreduce_limit(release, 4, gb200) == KR.CUSTOM_ALLREDUCE_MAX_BYTES
    assert KR.custom_allreduce_limit(parse_release("trtllm==1.0"), 8, gb200) > 0


def test_unpriced_gpu_types_are_shown_after_the_priced_with_na():
    """The search's order is fewest GPUs first; a GB200 (no catalog price) at 1 GPU would sit above an H100 at 2 and
    read as the cheapest. Shown after the priced rows, 'n/a' in both price columns; the title says so."""
    def row(gpu_id, tp, price):
        serving = SimpleNamespace(tp=tp, gpus=tp, max_sequences=5, tpot=(SimpleNamespace(total=0.02),))
        return load_accelerator(gpu_id), serving, price, "test"

    rows = [row("gb200", 1, None), row("h100", 2, 4.0), row("b200", 1, 6.0)]  # as the search sorts: GPUs, memory
    table = search_table(SimpleNamespace(context=4096), rows, SimpleNamespace(batch=1))
    assert [r[0] for r in table.rows] == ["h100-sxm", "b200", "gb200"]
    assert table.rows[-1][-2:] == ("n/a", "n/a")
    # h100: 1 sequence / 0.02 s = 50 tokens/s on 2 GPUs at $4/GPU-h: 8 / (50 x 3,600) x 1e6 = $44.444 per 1M tokens
    assert table.rows[0][-1] == "44.444"
    assert UNPRICED_LAST in table.title
