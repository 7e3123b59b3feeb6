"""GPUs without peer-to-peer access as an input (``infer --no-p2p``, InferenceInputs.p2p, Runtime.p2p):
vLLM then logs 'Custom allreduce is disabled because your platform lacks GPU P2P capability'
(v0.10.1.1 custom_all_reduce.py:147) and NCCL connects the ranks through SHM in host memory
(NCCL 2.26.2 src/transport/p2p.cc:164 -> shm.cc), whatever the part: the PCIe-only memory and
all-reduce rules apply, the part keeps its own HBM bandwidth and compute (review wave 3, item 7:
the dennislee22 rows say so with ``p2p: false`` instead of a PCIe part)."""

import json

import pytest

from gpuplan.catalog import load_accelerator
from gpuplan.core.serving import engines as E
from gpuplan.core.serving import kernels as KR
from gpuplan.core.serving import profile as P
from gpuplan.core.serving import releases as REL
from gpuplan.jobs.validation import serving_memory as S

GiB = 2**30
NO_P2P = "Custom allreduce is disabled because your platform lacks GPU P2P capability"
ASKED = {"model": "qwen2.5-7b", "gpu": "a100-sxm4-80gb", "tp": 2, "engine": "vllm==0.10.1", "search": False}


def _sxm():
    return load_accelerator("a100-sxm4-80gb")


def test_without_p2p_the_nccl_memory_is_the_pcie_rule_on_an_nvlink_part():
    """vLLM 0.10.1 at TP 2 on A100 SXM4 (600 GB/s NVLink): with P2P two communicators x the A100
    pair anchor, 2 x 544 MB = 1.01 GiB; without, the off-NVLink 0.25 GiB (engines.PCIE_COMM_BYTES).
    From 0.11 NCCL sits before the snapshot and off NVLink the profile adds nothing: 0.41 GiB -> 0."""
    bw = _sxm().scale_up_bandwidth
    v010, v011 = REL.vllm_rules((0, 10, 1)), REL.vllm_rules((0, 11, 0))
    assert E.comm_rule(2, None, bw) == "nvlink" and E.comm_rule(2, None, bw, p2p=False) == "pcie"
    assert E.comm_rule(1, None, bw, p2p=False) == "none" and E.comm_rule(2, 0.1, bw, p2p=False) == "given"
    assert P.comm_bytes(v010, "vllm", 2, 1, bw) == pytest.approx(2 * 544e6, rel=1e-9)
    assert P.comm_bytes(v010, "vllm", 2, 1, bw, p2p=False) == 0.25 * GiB
    # core/serving/releases.py NVLINK_TP_NON_TORCH['lazy']: llm-d-benchmark's vLLM 0.11.0 H100 non-torch memory,
    # 0.54 GiB at TP 2 less 0.13 GiB at TP 1
    assert P.comm_bytes(v011, "vllm", 2, 1, bw) == pytest.approx((0.54 - 0.13) * GiB)
    assert P.comm_bytes(v011, "vllm", 2, 1, bw, p2p=False) == 0.0


def test_without_p2p_no_custom_allreduce_and_nccl_through_host_memory():
    """The engine's own kernel needs CUDA IPC peer access: 8 MiB limit at TP 2 with P2P, 0 without
    (vLLM and TensorRT-LLM alike). NCCL's time is then PCIe-only: 1.44 x NCCL on the host link
    (kernels.host_path: no NVLink, no NVLS), slower than NVLink's; the part's HBM and peaks stay."""
    sxm = _sxm()
    vllm, trt = REL.parse_release("vllm==0.10.1"), REL.parse_release("trtllm==1.0")
    assert KR.custom_allreduce_limit(vllm, 2, sxm) == 8 * 2**20
    assert KR.custom_allreduce_limit(vllm, 2, sxm, p2p=False) == 0.0
    assert KR.custom_allreduce_limit(trt, 2, sxm) == 16e6 and KR.custom_allreduce_limit(trt, 2, sxm, p2p=False) == 0.0
    host = KR.host_path(sxm)
    assert host.pcie_only and host.nvls_gain is None and not KR.on_pcie(sxm)
    assert (host.memory_bandwidth, host.peak_flops, host.memory_bytes) == (sxm.memory_bandwidth, sxm.peak_flops,
                                                                          sxm.memory_bytes)
    message = 2048 * 3584 * 2  # a 2,048-token prefill's hidden states, bf16
    without = KR.tp_allreduce_seconds(message, 2, sxm.scale_up_bandwidth, 24e-6, fabric=sxm, p2p=False)
    assert without == pytest.approx(KR.PCIE_NCCL_SLOWDOWN * KR.nccl_all_reduce_seconds(message, 2, host), rel=1e-12)
    assert without > 2 * KR.nccl_all_reduce_seconds(message, 2, sxm)
    assert KR.tp_allreduce_seconds(message, 1, None, 0.0, fabric=sxm, p2p=False) == 0.0


def _flags(asked: dict) -> list[str]:
    flags = []
    for k, v in asked.items():
        name = "--" + k.replace("_", "-")
        flags += [name if v else "--no-" + k.replace("_", "-")] if isinstance(v, bool) else [name, str(v)]
    return flags


def test_the_input_reaches_the_memory_split_and_cli_equals_the_apis(run_cli):
    """--no-p2p moves the profile's non-torch term by 2 x 544e6 - 2**28 = 819,564,544 B (1.01 -> 0.25
    GiB of NCCL buffers) and the KV memory by the same; CLI, web API and Python API give one answer."""
    asked = {**ASKED, "p2p": False}
    code, out, err = run_cli("infer", *_flags(asked), "--json")
    assert code == 0, err
    without = json.loads(out)
    code, out, err = run_cli("infer", *_flags(ASKED), "--json")
    assert code == 0, err
    with_p2p = json.loads(out)
    moved = 2 * 544e6 - 2**28
    assert with_p2p["results"]["log_profile"] - without["results"]["log_profile"] == pytest.approx(moved, abs=1)
    assert without["results"]["log_kv"] - with_p2p["results"]["log_kv"] == pytest.approx(moved, abs=1)
    shown = {a["key"]: a["value"] for a in without["assumptions"]}
    assert shown["comm_buffers"] == "0.25 GiB" and "no GPU P2P" in shown["tp_allreduce"]
    assert {a["key"]: a["value"] for a in with_p2p["assumptions"]}["comm_buffers"] == "1.01 GiB"
    from gpuplan.jobs.inference.estimate import estimate_inference
    from gpuplan.jobs.inference.schema import InferenceInputs

    python = estimate_inference(InferenceInputs(**asked)).to_dict()
    assert python["results"] == without["results"] and python["assumptions"] == without["assumptions"]
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from gpuplan.web import create_app

    api = TestClient(create_app()).post("/api/inference", json=asked).json()
    assert api["results"] == without["results"] and api["assumptions"] == without["assumptions"]


def test_no_p2p_on_one_gpu_is_one_line(run_cli):
    """One GPU has no peer: --no-p2p would change nothing, so it is refused (exit 2, one line naming
    p2p); with --rps the sizing tries larger TP, where it applies, so it is accepted there."""
    code, out, err = run_cli("infer", "qwen2.5-7b", "--gpu", "a100-sxm4-80gb", "--no-p2p", "--no-search")
    assert code == 2 and err.strip().count("\n") == 0 and err.startswith("error: p2p: ") and "tp x pp > 1" in err
    code, _, err = run_cli("infer", "qwen2.5-7b", "--gpu", "a100-sxm4-80gb", "--pp", "2", "--no-p2p", "--no-search")
    assert code == 0, err


def test_the_logs_without_p2p_say_so_and_keep_their_part():
    """The two TP 2 rows quote the log line and carry p2p: false; all four name the part their first
    entry did (a100-sxm4-80gb: the repository says 'A100 80GB', the catalog's a100); the TP 1 rows
    have no peer and no field. The validation reads the field: with it the TP 2 rows take 0.25 GiB."""
    rows = {e["id"]: e for e in S.memory_logs() if e["id"].startswith("dennis0101-")}
    assert len(rows) == 4 and {e["gpu"] for e in rows.values()} == {"a100-sxm4-80gb"}
    for util in ("025", "05"):
        tp2, tp1 = rows[f"dennis0101-qwen2-7b-a100-tp2-util{util}"], rows[f"dennis0101-qwen2-7b-a100-tp1-util{util}"]
        assert tp2["p2p"] is False and NO_P2P in tp2["source"] and "p2p" not in tp1
        memory, _ = S.predicted_memory(tp2)
        assert memory.comm == E.PCIE_COMM_BYTES
        assert S.predicted_memory({**tp2, "p2p": True})[0].comm == pytest.approx(2 * 544e6, rel=1e-9)


def test_a_row_p2p_that_is_not_a_bool_is_refused():
    from gpuplan.errors import InputError

    row = {"id": "x", "engine": "vllm==0.10.1", "p2p": "no"}
    with pytest.raises(InputError, match=r"x\.p2p"):
        S.checked_logs({"logs": [row]})
