"""The serving searches take TP up to the part's scale-up domain, not its host (issue 38 point 2, wave 15 helper B1):
a GB200 / GB300 compute tray holds 4 GPUs but every GPU of an NVL72 reaches the other 71 over NVLink, so a replica
may be tp 8 or 16 (a multi-node launch; tp 8's all-reduces are vLLM >= 0.19's FlashInfer MNNVL fused kernel up to
1 MiB (GB200) / 2 MiB (GB300), NCCL's for older vLLM, SGLang 0.5.6 and at tp 16); an HGX H100 / B200 node still stops
at tp 8. One launch line an answer, counting pp, with the flags the release has (review w15 R2 M1-M4). And a GPU type with no catalog price is shown in the search table, after the priced ones."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from gpuplan.catalog import load_accelerator
from gpuplan.core.serving import kernels as KR
from gpuplan.core.serving import memory as M
from gpuplan.core.serving.load import LoadTarget
from gpuplan.core.serving.releases import parse_release
from gpuplan.errors import InputError
from gpuplan.jobs.inference import sizing
from gpuplan.jobs.inference.alternatives import UNPRICED_LAST, search_table
from gpuplan.jobs.inference.resolve import resolve_plan
from gpuplan.jobs.inference.schema import InferenceInputs
from gpuplan.jobs.inference.serving import max_sequences_at, search_tps
from gpuplan.jobs.inference.sizing_text import multi_node_launch
from gpuplan import estimate_inference

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


def test_405b_needs_tp8_on_gb200_and_is_sized_there_with_the_launch_and_allreduce_note(plan_405b, monkeypatch):
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
    assert "MNNVL" in launch.formula and "1 MiB at tp 8" in launch.formula  # the default vllm==0.29 (>= 0.19)


MiB = 2**20


@pytest.mark.parametrize("engine, gpu, tp8", [
    ("vllm==0.10.1", "gb200", 0.0),  # CustomAllreduce off across nodes (custom_all_reduce.py@00d618aa:90-96): NCCL
    ("vllm==0.18.1", "gb200", 0.0),  # backend 'trtllm' (envs.py@v0.18.1:171), no multi-node: the fusion pass off
    ("vllm==0.19", "gb200", 1 * MiB),  # 'mnnvl' past one node (flashinfer_all_reduce.py@v0.19.0:98-101), sm100 tp 8
    ("vllm", "gb200", 1 * MiB),  # the default vllm==0.29, read at 0.23.0 (allreduce_rms_fusion.py@v0.23.0:94-98)
    ("vllm", "gb300", 2 * MiB),  # sm103 tp 8: 2 MiB (@v0.23.0:99-103)
    ("sglang==0.5.6", "gb200", 0.0),  # its FlashInfer fusion only where nnodes == 1 (server_args.py@v0.5.6:1028-1031)
])
def test_tp8_over_two_trays_by_release(engine, gpu, tp8):
    """tp 8 over two 4-GPU trays: the bound the engine's own kernels take, by release; tp 4 inside one tray keeps
    the 8 MiB custom-kernel bound; tp 16 is NCCL for every release (FI_SUPPORTED_WORLD_SIZES [2, 4, 8])."""
    part, release = load_accelerator(gpu), parse_release(engine)
    assert KR.custom_allreduce_limit(release, 8, part) == tp8
    assert KR.custom_allreduce_limit(release, 4, part) == KR.CUSTOM_ALLREDUCE_MAX_BYTES
    assert KR.custom_allreduce_limit(release, 16, part) == 0.0
    assert KR.custom_allreduce_limit(parse_release("trtllm==1.0"), 8, part) > 0  # TensorRT-LLM keeps its own rule


def test_mnnvl_bound_is_whole_tokens_and_needs_pp1():
    """The fusion runs forwards of up to max_size // (hidden x 2 B) tokens (config/vllm.py@v0.19.0:1518-1528): hidden
    16,384 (405B): 1 MiB / 32 KiB = 32 tokens = 1 MiB exactly; hidden 5,120: 10,240 B a token, floor(1,048,576 /
    10,240) = 102 tokens = 1,044,480 B. pp 2 turns the fusion off (config/vllm.py@v0.19.0:116-135): NCCL, 0."""
    gb200, release = load_accelerator("gb200"), parse_release("vllm==0.19")
    assert KR.custom_allreduce_limit(release, 8, gb200, hidden=16384) == 1 * MiB
    assert KR.custom_allreduce_limit(release, 8, gb200, hidden=5120) == 1_044_480
    assert KR.custom_allreduce_limit(release, 8, gb200, hidden=16384, pp=2) == 0.0


def test_tp8_decode_all_reduce_on_gb200_is_the_one_shot_kernels_time():
    """Llama-3-70B decode at batch 1: 8,192 x 2 B = 16 KiB a message, under the 1 MiB bound, so vLLM >= 0.19 times it
    as the own one-shot kernel (8 us + 2 x 7/8 x 16,384 B / (1,800e9 / 2 x 0.8) = 8.0398 us) over the same NVLink fabric;
    vLLM 0.18.1 takes NCCL's model across the two trays, slower."""
    gb200, message = load_accelerator("gb200"), 8192 * 2
    times = {}
    for engine in ("vllm", "vllm==0.18.1"):
        limit = KR.custom_allreduce_limit(parse_release(engine), 8, gb200, hidden=8192)
        times[engine] = KR.tp_allreduce_seconds(message, 8, gb200.scale_up_bandwidth, 8e-6, fabric=gb200,
                                                custom_max_bytes=limit)
    assert gb200.scale_up_bandwidth == 1800e9
    assert times["vllm"] == pytest.approx(8e-6 + 2 * 7 / 8 * message / (900e9 * 0.8), rel=1e-9)
    assert times["vllm"] == pytest.approx(8.0398e-6, rel=1e-4)
    assert times["vllm==0.18.1"] == pytest.approx(KR.nccl_all_reduce_seconds(message, 8, gb200), rel=1e-12)
    assert times["vllm==0.18.1"] > times["vllm"]


@pytest.mark.parametrize("engine, tp, pp, has, lacks", [
    ("vllm", 4, 2, ("tp 4 x pp 2 spans 2 compute trays", "--pipeline-parallel-size 2 --nnodes 2"), ("Ray",)),
    ("vllm", 8, 2, ("tp 8 x pp 2 spans 4 compute trays", "--nnodes 4", "--headless"), ()),
    ("vllm==0.11.1", 8, 1, ("--nnodes 2 --node-rank R --master-addr HEAD",), ("Ray",)),  # arg_utils.py@v0.11.1:757-760
    ("vllm==0.11.0", 8, 1, ("--distributed-executor-backend ray", "ray start --head"), ("--nnodes 2", "--headless")),
    ("vllm==0.4.0", 8, 1, ("--worker-use-ray", "vllm.entrypoints.openai.api_server"), ("--distributed-executor",)),
    ("sglang==0.3.2", 8, 1, ("--nccl-init-addr", "--nnodes 2"), ("--dist-init-addr",)),  # server_args.py@v0.3.2:429
    ("sglang==0.3.3", 8, 1, ("--dist-init-addr", "--nnodes 2"), ()),  # @v0.3.3:415
    ("sglang==0.4.6.post2", 4, 2, ("--pp-size 2", "--nnodes 2"), ()),  # @v0.4.6.post2:656
    ("trtllm==1.0", 8, 2, ("srun --ntasks 16 --ntasks-per-node 4", "trtllm-serve --tp_size 8 --pp_size 2"), ()),
    ("trtllm==0.9", 8, 1, ("one MPI world of 8 ranks over the 2 trays",), ("trtllm-serve --tp_size",)),
])
def test_launch_counts_pp_and_follows_the_release(engine, tp, pp, has, lacks):
    """Trays = ceil(tp x pp / 4) on GB200; the flags each release has (sizing_text's *_SINCE, read in the wheels)."""
    text, _ = multi_node_launch(parse_release(engine), tp, load_accelerator("gb200"), 4, pp)
    assert all(h in text for h in has), text
    assert not any(word in text for word in lacks), text


def test_sglang_before_pp_size_never_reaches_the_launch():
    """sizing_text.launch_command has no words for pp > 1 on an SGLang release before --pp-size (0.4.6.post2): the
    only caller that passes a pp above 1 passes the one asked, and InferenceInputs refuses it first
    (inputs_releases.check_pipeline; the searches try pp 1). The branch that worded it was dead (w17 D item 1)."""
    with pytest.raises(InputError) as refused:
        InferenceInputs(model="llama-3.1-405b", gpu="gb200", tp=4, pp=2, engine="sglang==0.4.6.post1")
    assert refused.value.field == "pp" and "0.4.6.post2" in str(refused.value)
    InferenceInputs(model="llama-3.1-405b", gpu="gb200", tp=4, pp=2, engine="sglang==0.4.6.post2")  # accepted


def test_no_launch_within_one_tray():
    assert multi_node_launch(parse_release("vllm"), 4, load_accelerator("gb200"), 4) is None
    assert multi_node_launch(parse_release("vllm"), 2, load_accelerator("gb200"), 4, pp=2) is None


@pytest.mark.parametrize("disaggregate", [False, True])
def test_launch_line_said_once_in_the_whole_answer(monkeypatch, disaggregate):
    """Llama-3.1-405B on GB200 at 1 request/s: the sizing's answer (2 x tp 8), the disaggregated pools and 'Does not fit:
    what would' (tp 8 would fit) each offer the line; the answer (every section, as every door renders it) says it
    once (review w15 R2 M2: twice before)."""
    gb200 = load_accelerator("gb200")
    monkeypatch.setattr(sizing, "serving_gpus", lambda plan: iter([gb200]))
    report = estimate_inference(InferenceInputs(model="llama-3.1-405b", gpu="gb200", rps=1, ttft_p99="2s",
                                                tpot="50ms", disaggregate=disaggregate))
    lines = [line for section in report.sections for line in section.lines]
    assert any(line.key == "instead_gpus" and "tp 8" in line.text for line in lines)  # the second offer is there
    launches = [line for line in lines if line.label == "launch across trays"]
    assert len(launches) == 1 and "tp 8 spans 2 compute trays" in launches[0].text


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


@pytest.mark.parametrize("gpu, tp, pp, said", [
    ("gb200", 8, 1, "tp 8 spans 2 compute trays of 4"),
    ("gb200", 4, 2, "tp 4 x pp 2 spans 2 compute trays of 4"),
    ("gb200", 4, 1, None),  # one tray
    ("h100", 8, 1, None),  # one HGX node
    ("h100-nvl", 4, 1, None),  # past its NVLink pair: the 'spans scale-up domains' note instead, no tray launch
])
def test_a_tp_the_user_gives_past_a_tray_gets_the_launch_note(gpu, tp, pp, said):
    """review w15 R2 S3: `--gpu gb200 --tp 8` showed no launch, although its timing assumes the multi-node launch."""
    notes = resolve_plan(InferenceInputs(model="llama-3-70b", gpu=gpu, tp=tp, pp=pp)).notes
    launch = [n for n in notes if n.startswith("launch across trays: ")]
    assert (launch[0].startswith(f"launch across trays: {said}") and len(launch) == 1) if said else launch == []


def test_kv_projections_are_whole_on_each_gpu_past_the_kv_heads(plan_405b):
    """review w15 R2 S1: at tp 16 > 8 KV heads vLLM's QKVParallelLinear keeps one whole KV head's k/v_proj a rank
    (linear.py@v0.23.0:1026-1041). Hand-worked, bf16: 405B (126 layers, hidden 16,384, head_dim 128) 0.5 x 2 x 16,384
    x 128 x 126 x 2 B = 528,482,304 B; at pp 2 the fullest stage's 63 layers, half that; 70B (80 layers, hidden 8,192)
    0.5 x 2 x 8,192 x 128 x 80 x 2 = 167,772,160 B; 0 at tp 8 (no replica)."""
    from gpuplan.core.serving import weights as W

    spec, fmt = plan_405b.spec, plan_405b.setup.fmt
    assert W.kv_replica_bytes(spec, fmt, 16) == 528_482_304
    assert W.kv_replica_bytes(spec, fmt, 16, pp=2) == 528_482_304 / 2
    assert W.kv_replica_bytes(spec, fmt, 8) == 0.0
    assert W.kv_replica_bytes(resolve_plan(InferenceInputs(model="llama-3-70b")).spec, fmt, 16) == 167_772_160
    gb200 = load_accelerator("gb200")
    memory = M.serving_memory_on(spec, plan_405b.groups, plan_405b.setup, 16, 1, gb200)
    split = W.weight_bytes_per_gpu(plan_405b.groups, fmt, spec.num_layers, 16, 1)
    assert memory.weights - split == pytest.approx(528_482_304, rel=1e-12)
