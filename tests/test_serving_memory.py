"""Engine memory profiles by release (core/serving/releases.py, profile.py, memory.py): worked by
hand against the engines' logs, and the held-out accuracy of every quantity their logs print
(catalog/reference/serving_memory_logs.yaml)."""

from statistics import mean

import pytest

from gpuplan.catalog import load_accelerator, load_model
from gpuplan.core.serving import memory as M
from gpuplan.core.serving import profile as P
from gpuplan.core.serving import releases as REL
from gpuplan.core.serving import setup as SU
from gpuplan.core.serving import weights as W
from gpuplan.errors import InputError
from gpuplan.jobs.validation.serving_memory import capacity_kind, memory_kind, serving_memory_cases

GiB = 2**30
CASES = serving_memory_cases()


def errors(kind: str) -> dict[str, float]:
    return {c[0]: (c[3] - c[2]) / c[2] for c in CASES if c[1] == kind}


def test_release_parsing_names_itself():
    assert REL.parse_release("vllm").label == "vllm==0.29" and not REL.parse_release("vllm").stated
    assert REL.parse_release("vllm==0.19").version == (0, 19, 0)
    assert REL.parse_release("VLLM==v0.10.1.post1").version == (0, 10, 1)
    assert REL.parse_release("sglang==0.4.9").label == "sglang==0.4.9"
    assert REL.parse_release("tensorrt-llm==1.0").engine == "trtllm"
    assert "newest modelled" in REL.parse_release("vllm==0.35").described
    for bad in ("vllm==abc", "vllm==0.1", "tgi==1.0"):
        with pytest.raises(InputError) as err:
            REL.parse_release(bad)
        assert err.value.field == "engine"


def test_each_release_runs_its_own_rules():
    """The rule changes, each named in releases.py: PR 2031 (0.2.5), PR 9352 (0.6.4), the V1 engine
    (0.8), Triton top-k/top-p (0.17), CUDA-graph profiling (0.21), Model Runner V2 (0.28 dense, 0.29
    all, batch-sharded sampling)."""
    assert REL.vllm_rules((0, 2, 4)).profile == "allocated"
    assert REL.vllm_rules((0, 2, 7)).holds_allreduce_inputs and not REL.vllm_rules((0, 3, 3)).holds_allreduce_inputs
    assert REL.vllm_rules((0, 16, 0)).sampler_bytes == 38 and REL.vllm_rules((0, 17, 0)).sampler_bytes == 14
    assert not REL.vllm_rules((0, 20, 1)).counts_graphs and REL.vllm_rules((0, 21, 0)).counts_graphs
    assert REL.vllm_rules((0, 28, 0)).sampler_bytes == 2 and REL.vllm_rules((0, 28, 0), moe=True).sampler_bytes == 14
    assert REL.vllm_rules((0, 29, 0), moe=True).sampler_sharded
    assert REL.vllm_rules((0, 20, 0)).default_util == 0.90 and REL.vllm_rules((0, 21, 0)).default_util == 0.92


def test_v019_sampler_profile_by_hand():
    """llm-d-planner's vLLM 0.19 Qwen3-8B on an H100 logs 'torch peak memory increase: 2.21GiB': the
    Triton sampler holds 14 B per logit of 1,024 x 151,936, its buffer 132 x 151,936 x 4 B, the
    forward's 8,192 x 4,096 x 2 B hidden states, and V1's 0.052 GiB: 2.167 GiB (-2.0%)."""
    spec = load_model("qwen3-8b")
    peak = P.profiled_peak(spec, 8192, 1024, 1, REL.vllm_rules((0, 19, 0)))
    by_hand = 1024 * 151_936 * 14 + 132 * 151_936 * 4 + 8192 * 4096 * 2 + 0.052 * GiB
    assert peak.sampler == pytest.approx(by_hand) and peak.peak == peak.sampler
    assert peak.peak / GiB == pytest.approx(2.21, rel=0.025)


def test_moe_workspace_by_hand():
    """Mixtral-8x7B at tp 2 under vLLM 0.19 logs a 1.21 GiB torch peak: the fused-MoE workspace for
    8,192 tokens x top-2, [M k, max(2 x 7,168, 4,096)] + [M k, 7,168] bf16 = 0.656 GiB, stays
    allocated through the sampler step (1,024 x 32,000 x 14 B + buffer + hidden states + 0.052 GiB)."""
    spec = load_model("mixtral-8x7b")
    workspace = 8192 * 2 * (14336 + 7168) * 2
    assert P.moe_workspace_bytes(spec, 8192, 2) == workspace
    peak = P.profiled_peak(spec, 8192, 1024, 2, REL.vllm_rules((0, 19, 0)))
    sampler = 1024 * 32000 * 14 + 132 * 32000 * 4 + 8192 * 4096 * 2 + 0.052 * GiB
    assert peak.peak == pytest.approx(workspace + sampler)
    assert peak.peak / GiB == pytest.approx(1.21, rel=0.02)


def test_v019_kv_budget_by_hand():
    """llm-d-planner's vLLM 0.19 Llama-3.1-8B on an H100 at utilization 0.95 logs 'Available KV cache
    memory: 58.11 GiB': 0.95 x (85.52 GB - 0.5 GiB) - weights 16.06 GB - the profiled peak - the
    0.25 GiB of non-torch memory; the CUDA graphs come later, out of the headroom."""
    spec, gpu = load_model("llama-3.1-8b"), load_accelerator("h100")
    setup = SU.ServingSetup(W.FORMATS["bf16"], 2, SU.Runtime(version=(0, 19, 0), gpu_memory_utilization=0.95))
    m = M.serving_memory(spec, W.param_groups(spec), gpu.memory_bytes, setup, 1, 1, gpu.name, gpu.scale_up_bandwidth)
    peak = P.profiled_peak(spec, 8192, 1024, 1, REL.vllm_rules((0, 19, 0))).peak
    usable = 0.95 * (85_520_809_984 - 0.5 * GiB)
    assert m.kv_budget == pytest.approx(usable - 2 * 8_030_261_248 - peak - 0.25 * GiB)
    assert not m.graphs_counted and m.kv_budget / GiB == pytest.approx(58.11, rel=0.005)
    # from 0.21 the estimated graphs come off first, at the same utilization
    later = SU.ServingSetup(W.FORMATS["bf16"], 2, SU.Runtime(version=(0, 21, 0), gpu_memory_utilization=0.95))
    m21 = M.serving_memory(spec, W.param_groups(spec), gpu.memory_bytes, later, 1, 1, gpu.name,
                           gpu.scale_up_bandwidth)
    assert m21.graphs_counted and m.kv_budget - m21.kv_budget == pytest.approx(m21.cuda_graphs)


def test_cuda_graph_estimate_by_hand():
    """vLLM's estimate (profile_cudagraph_memory): the larger first capture, which holds its own
    graph, plus (n - 1) further graphs per mode; 1,024 sequences capture 51 piecewise and 51 full
    sizes (up to 512: the v0.19.0 logs' 'PIECEWISE=51 (largest=512), FULL=51 (largest=512)'),
    gpt-oss up to 1,024 (83). A graph costs whole 2 MiB pages: Llama-3.1-8B's 32 layers x 0.1656 MiB
    = 5.30 MiB -> 6 MiB (its log: 6 and 6)."""
    piecewise, full = REL.graph_capture_sizes(1024)
    assert (len(piecewise), max(piecewise), len(full), max(full)) == (51, 512, 51, 512)
    assert [len(x) for x in REL.graph_capture_sizes(128)] == [35, 19]
    assert [len(x) for x in REL.graph_capture_sizes(1024, 1024)] == [83, 83]
    spec = load_model("llama-3.1-8b")
    # full first capture: FlashAttention's accumulators, 32 splits x 32 heads x 512 tokens x
    # (128 + 1) x 4 B = 258 MiB (the log: 260); piecewise: 2 x 512 x 2 B x 55,296 = 108 MiB
    accum = 32 * 32 * 512 * 129 * 4
    assert P.split_kv_accumulator_bytes(spec, 512, 1) == pytest.approx(accum)
    assert accum / 2**20 == pytest.approx(258.0)
    assert P.per_graph_bytes(spec, 32) == 6 * 2**20
    # 258 + 6 x (1 + 50 + 50) = 864 MiB = 0.844 GiB; 0.84 logged (one of the three fitted rows)
    assert P.graph_bytes(spec, 1024, 1, 32) == pytest.approx(accum + 101 * 6 * 2**20)
    assert P.graph_bytes(spec, 1024, 1, 32) / 2**30 == pytest.approx(0.84, rel=0.01)
    # an fp32 model runs on Triton attention: no accumulators, the piecewise activations decide
    first = 2 * 512 * 4 * (3 * 14336 + 3 * 4096)
    assert P.graph_bytes(spec, 1024, 1, 32, act_bytes=4) == pytest.approx(first + 101 * 6 * 2**20)
    # tensor parallelism splits the heads: tp 4 keeps 8 of them (the log's FULL first capture 70 MiB)
    assert P.split_kv_accumulator_bytes(spec, 512, 4) / 2**20 == pytest.approx(64.5)
    # the capture stream's cuBLAS workspace lands in the pool with the piecewise first capture: 32 MiB
    # on Hopper (PyTorch CublasHandlePool.cpp), 8.125 MiB on Ampere / Ada; fp32 on an H100: 216 + 32 +
    # 6 = 254 MiB against the log's 224 MiB piecewise first capture
    h100, l40s = load_accelerator("h100"), load_accelerator("l40s")
    assert P.cublas_workspace_bytes(h100.collective_arch) == 32 * 2**20
    assert P.cublas_workspace_bytes(l40s.collective_arch) == 8.125 * 2**20
    fp32 = P.graph_bytes(spec, 1024, 1, 32, act_bytes=4, blas_workspace=32 * 2**20)
    assert fp32 == pytest.approx(first + 32 * 2**20 + 101 * 6 * 2**20)
    assert (first + 32 * 2**20 + 6 * 2**20) / 2**20 == pytest.approx(254.0)
    # ... and where the accumulators are larger it changes nothing (bf16 tp 1: 258 MiB > 108 + 32)
    assert P.graph_bytes(spec, 1024, 1, 32, blas_workspace=32 * 2**20) == P.graph_bytes(spec, 1024, 1, 32)


def test_moe_layers_add_graph_bytes_by_hand():
    """An MoE layer adds GRAPH_BYTES_PER_MOE_LAYER (0.0445 MiB) per graph to the dense 0.1656
    (fitted on Qwen3-30B-A3B tp 1 and Mixtral tp 2, v0.19.0 logs). Qwen3-30B-A3B, 48 MoE layers:
    48 x 0.2101 = 10.08 MiB -> 10 MiB a graph (its log: 10 and 10), 101 of them beside FlashAttention's
    accumulators (258 MiB): 1,268 MiB = 1.238 GiB against 1.24 logged. A pipeline stage of 24
    layers: 5.04 MiB -> 6 MiB. A dense model gets no MoE term."""
    spec = load_model("qwen3-30b-a3b")
    assert spec.num_moe_layers == spec.num_layers == 48
    first = P.split_kv_accumulator_bytes(spec, 512, 1)
    assert first / 2**20 == pytest.approx(258.0)
    assert P.per_graph_bytes(spec, 48) == 10 * 2**20
    assert P.graph_bytes(spec, 1024, 1, 48) - first == pytest.approx(101 * 10 * 2**20)
    assert P.graph_bytes(spec, 1024, 1, 48) / GiB == pytest.approx(1.24, rel=0.01)
    assert P.graph_bytes(spec, 1024, 1, 24) - first == pytest.approx(101 * 6 * 2**20)
    dense = load_model("llama-3.1-8b")
    assert P.per_graph_bytes(dense, 32) == P.per_graph_bytes(dense, 32, activation_quant=False) == 6 * 2**20
    # held out: DeepSeek-V2-Lite (MoE + MLA) within 8% (24% low before the MLA term)
    found = errors(memory_kind("vllm", "CUDA-graph estimate", False))
    assert -0.08 < found["llmd019-deepseek-v2-lite-chat-tp1"] < 0


def test_sglang_fraction_by_release():
    """SGLang before 0.5.3 (server_args.py __post_init__): 0.88 / 0.87 / 0.85 / 0.81 / 0.79 by GPU
    count; from 0.5.3 (PR 10975) the reserve rule, 0.835 on one H100."""
    from gpuplan.core.serving.engines import sglang_mem_fraction_static as f

    h100 = load_accelerator("h100").memory_bytes
    assert [f(h100, tp, 1, (0, 4, 9)) for tp in (1, 2, 4, 8, 16)] == [0.88, 0.87, 0.85, 0.81, 0.79]
    assert f(h100, 1) == 0.835


def test_engine_log_lines_read_like_the_engine():
    """--full shows the split as vLLM prints it, one line per term."""
    from gpuplan.jobs.inference.estimate import estimate_inference
    from gpuplan.jobs.inference.schema import InferenceInputs

    r = estimate_inference(InferenceInputs(model="llama-3.1-8b", gpu="h100", engine="vllm==0.19",
                                           gpu_memory_utilization=0.95, search=False))
    texts = [line.text for s in r.sections if s.title.startswith("Engine start-up log") for line in s.lines]
    assert texts[0] == "Model loading took 14.96 GiB memory"
    assert "torch peak memory increase: 1.89GiB; non-torch forward increase memory: 0.25GiB" in texts[2]
    assert texts[4].startswith("Available KV cache memory: 58.") and texts[5].startswith("GPU KV cache size: 475,")  # 476,016 logged
    v0 = estimate_inference(InferenceInputs(model="llama-3.1-8b", gpu="h100", engine="vllm==0.6.5", search=False))
    assert any("PyTorch activation peak memory takes" in line.text for s in v0.sections for line in s.lines)
    sg = estimate_inference(InferenceInputs(model="llama-3.1-8b", gpu="h100", engine="sglang", search=False))
    assert any(line.text.startswith("KV Cache is allocated. #tokens:") for s in sg.sections for line in s.lines)


def test_held_out_memory_quantities_within_the_issue_bounds():
    """Issue 38: each memory quantity <= 5% mean, held out. vLLM rows of 0.2.4-0.28 on RTX 3090 / 4090,
    L40S, A100, H100 and H200 and SGLang rows of 0.4-0.5 (serving_memory_logs.yaml)."""
    for quantity in ("weights", "activation peak", "non-torch memory", "available KV memory"):
        found = errors(memory_kind("vllm", quantity, False))
        assert len(found) >= 30 and mean(abs(e) for e in found.values()) < 0.05, (quantity, found)
    capacity = errors(capacity_kind("vllm", False))
    assert len(capacity) >= 30 and mean(abs(e) for e in capacity.values()) < 0.02
    assert mean(abs(e) for e in errors(capacity_kind("sglang", False)).values()) < 0.05
    # the outliers, named: V0 0.7.1's sampler profile on L40S (+17% on 1.26 GiB), vLLM 0.28 on RTX
    # 4090s and V1 July 2025 on four H100s (~1 GiB each of non-torch memory the logs do not break down)
    activation = errors(memory_kind("vllm", "activation peak", False))
    assert all(abs(e) < 0.06 for k, e in activation.items() if k != "vllm15815-qwen2.5-32b-tp2-l40s"), activation
    # and vLLM 0.10.1 on A100 (added later, held out): its logs name FlashInfer's top-k/top-p sampler,
    # which the rows state (sampler: flashinfer, 14 B x 256 x 152,064 logits = 0.51 GiB where the
    # torch sort was 1.38): TP 1 +1.7 / +0.6% (was -15.7 / -2.9%); TP 2 at utilization 0.25 -0.7%
    # (-7.0% when the rows said SXM4 and took 0.10's NVLink rule, 1.01 GiB of NCCL buffers: the TP 2
    # logs say the two GPUs have no P2P, PCIe cards, tests/test_serving_nccl_memory.py; -14.3% before)
    assert all(abs(e) < 0.08 for e in capacity.values()), capacity
    assert -0.01 < capacity["dennis0101-qwen2-7b-a100-tp2-util025"] < -0.004, capacity
    assert all(abs(capacity[f"dennis0101-qwen2-7b-a100-tp1-util0{u}"]) < 0.02 for u in ("25", "5")), capacity


def test_graph_estimate_is_a_rough_term():
    """The CUDA-graph estimate: 5.1% on average over 25 held-out 0.19 logs, above the issue's 5%: 4.5%
    over the 21 it was developed against (4.7% before a MoE layer's routed caches were taken as
    vLLM 0.19's workspace views and gpt-oss's MXFP4 experts charged their own two buffers: gpt-oss-20b
    +4.7% -> -2.3%) (10.2% over 25 before the graph's own pages, the MLA and W8A8
    terms, FlashAttention's unsplit batches above 992 and the excluded row) and the four llm-d-planner
    logs added afterwards, held out: Gemma 3 4B / 12B / 27B IT -0.5 / -8.8 / +11.6% (vLLM runs these
    multimodal checkpoints on TRITON_ATTN, which gpuplan now picks from their config: no FlashAttention
    split accumulators, the piecewise first capture the larger; +2.5 / +2.0 / +17.9% with the
    accumulators charged, the 12B's per-graph page off by one either way) and Phi-4 +11.9% (its
    FULL per-graph sample 4 MiB, gpuplan's 6). Up to 31% on the tensor-parallel
    Qwen2.5-7B rows, where one 2 MiB page of a per-graph sample is 100 MiB of a 0.61-0.69 GiB total
    (their samples 4 / 6 and 6 / 6 MiB against 4 / 4 at tp 1). Llama-3.1-8B at tp 2 is excluded: its
    second piecewise capture took 26 MiB where tp 1 and 4 took 6 (one more 20 MiB caching-allocator
    segment) and its log measures 0.76 GiB actual against 1.69 estimated. The dense single-GPU
    Llama-3.1-8B variants (kv fp8, fp16, fp32, w4a16, w8a8, fp8) are within 5%."""
    found = errors(memory_kind("vllm", "CUDA-graph estimate", False))
    added = {"llmd019-gemma-3-4b-it-tp1": -0.005, "llmd019-gemma-3-12b-it-tp1": -0.088,
             "llmd019-gemma-3-27b-it-tp1": 0.116, "llmd019-phi-4-tp1": 0.119}
    assert all(found[k] == pytest.approx(e, abs=0.002) for k, e in added.items()), found
    first = [abs(e) for k, e in found.items() if k not in added]
    assert found["llmd019-gpt-oss-20b-tp2"] == pytest.approx(-0.023, abs=0.002)
    assert len(first) == 21 and mean(first) == pytest.approx(0.0455, abs=0.0015)
    # (21 x 4.55% + 0.5 + 8.8 + 11.6 + 11.9%) / 25 = 5.1%
    assert len(found) == 25 and mean(abs(e) for e in found.values()) == pytest.approx(0.0513, abs=0.0015)
    assert "llmd019-llama-3.1-8b-tp2" not in found
    from gpuplan.jobs.validation.serving_memory import serving_memory_excluded

    reasons = dict(serving_memory_excluded())
    assert "0.76 GiB (actual), 1.69 GiB (estimated)" in reasons["llmd019-llama-3.1-8b-tp2"]
    llama = {k: e for k, e in found.items() if "llama-3.1-8b" in k and "tp4" not in k}
    assert len(llama) >= 6 and all(abs(e) < 0.05 for e in llama.values()), llama


def test_the_excluded_row_is_scored_in_a_kind_of_its_own():
    """The summary shows the held-out CUDA-graph figure both ways: with Llama-3.1-8B tp 2 scored,
    its 0.72 GiB predicted against 1.69 logged (-57.5%) joins the 25 held-out rows, whose errors are
    the same in both kinds: 26 rows, mean |error| = (25 x 5.13% + 57.5%) / 26 = 7.1%, max 57.5%."""
    from gpuplan.jobs.validation.serving_memory import excluded_scored_kind

    held = errors(memory_kind("vllm", "CUDA-graph estimate", False))
    both = errors(excluded_scored_kind("vllm", "CUDA-graph estimate"))
    assert set(both) == set(held) | {"llmd019-llama-3.1-8b-tp2"}
    assert all(both[k] == held[k] for k in held)
    assert both["llmd019-llama-3.1-8b-tp2"] == pytest.approx(0.72 / 1.69 - 1, abs=0.005)
    # (25 x 5.13% + 57.5%) / 26 from the docstring's figures (the held-out 5.13% checked on its own)
    assert mean(abs(e) for e in held.values()) == pytest.approx(0.0513, abs=0.0015)
    assert mean(abs(e) for e in both.values()) == pytest.approx((25 * 0.0513 + 0.575) / 26, abs=0.0015)
    # no other quantity excludes a row, so no other such kind
    assert {c[1] for c in CASES if "excluded rows scored" in c[1]} == {excluded_scored_kind("vllm", "CUDA-graph estimate")}


def _log(**extra):
    return {"logs": [{"id": "row-x", "engine": "vllm==0.19", "logged": {"graphs_gib": 1.0}, **extra}]}


def test_a_misspelt_fitted_or_excluded_key_is_one_clear_error(run_cli, monkeypatch):
    """serving_memory_logs.yaml's `excluded` / `fitted` name logged quantities; 'graph' for 'graphs'
    used to leave the row scored (log_cases) and crash `gpuplan validate` with a KeyError
    (serving_memory_excluded). Now the load names the row, the key and the valid keys; the CLI
    prints that one line and exits 2."""
    from gpuplan.jobs.validation import serving_memory as S

    for bad, field in ((_log(excluded={"graph": "why"}), "row-x.excluded"), (_log(fitted=["non-torch"]), "row-x.fitted"),
                       (_log(excluded=["graphs"]), "row-x.excluded"), (_log(fitted="graphs"), "row-x.fitted")):
        with pytest.raises(InputError) as err:
            S.checked_logs(bad)
        assert err.value.field.endswith(field) and "graphs" in str(err.value), str(err.value)
    assert "valid keys: weights, activation, non_torch, graphs, non_kv, kv" in str(
        pytest.raises(InputError, S.checked_logs, _log(excluded={"graph": "why"})).value)
    assert S.checked_logs(_log(excluded={"graphs": "why"}, fitted=["non_torch"]))[0]["id"] == "row-x"
    monkeypatch.setattr(S, "memory_logs", lambda: S.checked_logs(_log(excluded={"graph": "why"})))
    code, out, err = run_cli("validate")
    assert code == 2 and out == "" and "row-x.excluded" in err and "'graph'" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err


def test_held_allreduce_inputs_by_hand():
    """vLLM 0.2.5-0.3.2 (PR 2031's profile reads the device memory in use after the forward; 0.3.3
    sets TORCH_NCCL_AVOID_RECORD_STREAMS=1): Llama-2-70B at TP 4 with 4,096 profile tokens holds one
    [4096 x 8192] fp16 message (64 MiB) per all-reduce, the embedding's and two per layer: 161 x 64
    MiB = 10.0625 GiB; nothing without tensor parallelism."""
    spec = load_model("llama-2-70b")
    assert P.held_allreduce_input_bytes(spec, 4096, 4) == 161 * 64 * 2**20
    assert P.held_allreduce_input_bytes(spec, 4096, 1) == 0.0
    args = (spec, W.param_groups(spec), 80 * GiB)

    def memory(version):
        runtime = SU.Runtime(version=version, prefill_tokens=4096, max_num_seqs=256)
        return M.serving_memory(*args, SU.ServingSetup(W.weight_format("fp16"), 2, runtime), 4, 1)

    held, released = memory((0, 2, 5)), memory((0, 3, 3))
    assert held.activations - released.activations == 161 * 64 * 2**20
    assert held.kv_budget == released.kv_budget - 161 * 64 * 2**20


def test_tp_group_memory_by_release():
    """comm_bytes: before vLLM 0.11 (and for SGLang / TensorRT-LLM) the NCCL communicators the
    profile sees x NCCL's per-communicator buffers (688 MB for a group of more than 2 ranks, 544 MB
    for 2, on A100 NVLink, NVIDIA/nccl#964; x 1.5 on H100-class links); 0.11-0.17 the lazily created
    group, 0.41 GiB; from 0.18 2.07 - 0.25 = 1.82 GiB; without NVLink 0.25 GiB, nothing from 0.11
    (vllm#29070: 0.09 GiB at TP 4, below TP 1's 0.13); nothing on one GPU."""
    h100, a100, pcie = 900e9, 600e9, 128e9
    v010, v011, v019 = (REL.vllm_rules(v) for v in ((0, 10, 0), (0, 11, 0), (0, 19, 0)))
    assert P.comm_bytes(v010, "vllm", 4, 1, h100) == pytest.approx(2 * 688e6 * 1.5)
    assert P.comm_bytes(None, "sglang", 8, 1, h100) == pytest.approx(688e6 * 1.5)
    assert P.comm_bytes(v010, "vllm", 2, 1, a100) == pytest.approx(2 * 544e6)
    assert P.comm_bytes(v010, "vllm", 4, 2, a100) == pytest.approx(2 * (688e6 + 544e6))  # + one stage pair
    assert P.comm_bytes(v011, "vllm", 2, 1, h100) == pytest.approx(0.41 * GiB)
    assert P.comm_bytes(v019, "vllm", 4, 1, h100) == pytest.approx(1.82 * GiB)
    assert P.comm_bytes(v010, "vllm", 4, 1, pcie) == 0.25 * GiB and P.comm_bytes(v019, "vllm", 4, 1, pcie) == 0.0
    assert P.comm_bytes(v019, "vllm", 1, 1, h100) == 0.0
    assert P.comm_bytes(v019, "vllm", 4, 1, h100, given=1e9) == 1e9


def test_v1_sort_sampler_profile_by_hand():
    """vllm#21429 (V1, July 2025): Qwen3-235B-A22B-FP8, TP 4, 1,024 dummy requests x 151,936 logits
    through the PyTorch sort (38 B per logit) + the 8,192 x 4,096 x 2 B hidden states + V1's
    0.052 GiB = 5.62 GiB, against the logged 'torch peak memory increase: 5.62GiB'."""
    qwen = load_model("qwen3-235b-a22b")
    peak = P.profiled_peak(qwen, 8192, 1024, 4, REL.vllm_rules((0, 10, 0)))
    assert peak.sampler == pytest.approx(1024 * 151_936 * 38 + 8192 * 4096 * 2 + 0.052 * GiB)
    assert peak.peak / GiB == pytest.approx(5.62, rel=0.015)


def test_engine_log_lines_follow_the_release():
    """V0 printed blocks ('# GPU blocks', '# CUDA blocks' from 0.7), its profile line changed at 0.6.4
    and 0.6.5; TensorRT engines before 1.0 print [MemUsageChange] lines."""
    from gpuplan.jobs.inference.estimate import estimate_inference
    from gpuplan.jobs.inference.schema import InferenceInputs

    def log(engine):
        r = estimate_inference(InferenceInputs(model="llama-3.1-8b", gpu="h100", engine=engine, search=False))
        return [line.text for s in r.sections if s.title.startswith("Engine start-up log") for line in s.lines]

    old = log("vllm==0.2.5")
    assert old[0].startswith("Loading model weights took 14.95") and old[-1].startswith("# GPU blocks: ")
    assert "eager until vLLM 0.2.6" in old[2]
    assert log("vllm==0.6.4")[1].startswith("Memory profiling results: total_gpu_memory=79.15GiB")
    assert any(t.startswith("# CUDA blocks: ") for t in log("vllm==0.7.1"))
    trt = log("trtllm==0.9")
    assert trt[0].startswith("Loaded engine size: ") and "for max tokens in paged KV cache" in trt[3]
