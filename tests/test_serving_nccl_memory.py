"""vLLM's NCCL memory at TP > 1 (core/serving/engines.py, profile.comm_bytes): which rule a tensor
group takes, checked on dennislee22/vLLM-benchmarking's vLLM 0.10.1.1 A100 logs, whose TP 2 pair runs
without GPU P2P (issue 38; docs/inference.md 'NCCL at TP > 1, from the code')."""

import pytest

from gpuplan.catalog import load_accelerator
from gpuplan.core.serving import engines as E
from gpuplan.core.serving import profile as P
from gpuplan.core.serving import releases as REL
from gpuplan.jobs.validation import serving_memory as S

GiB = 2**30
NO_P2P = "Custom allreduce is disabled because your platform lacks GPU P2P capability"


def _row(log_id: str) -> dict:
    return next(e for e in S.memory_logs() if e["id"] == log_id)


def test_the_tp2_logs_say_their_gpus_have_no_p2p():
    """vLLM 0.10.1.1 asks the driver (custom_all_reduce.py:35, torch.cuda.can_device_access_peer) and
    logs the answer (:147). The line does not name the form factor (an SXM4 part in a VM without P2P
    logs it too), so the rows keep the catalog's a100 and state the fact, p2p: false
    (tests/test_serving_no_p2p.py)."""
    for util in ("025", "05"):
        row = _row(f"dennis0101-qwen2-7b-a100-tp2-util{util}")
        assert NO_P2P in row["source"] and "nccl==2.26.2" in row["source"], row["id"]
        assert row["gpu"] == "a100-sxm4-80gb" and row["p2p"] is False
    pcie, sxm = load_accelerator("a100-pcie-80gb"), load_accelerator("a100-sxm4-80gb")
    assert pcie.memory_bytes == sxm.memory_bytes == 80 * GiB


def test_without_p2p_the_nvlink_rule_does_not_apply():
    """vLLM 0.9.2-0.10 counts the communicators (snapshot before the distributed init): on NVLink two
    communicators x the A100 pair anchor, 2 x 544 MB = 1.01 GiB; off NVLink the 0.25 GiB assumption."""
    v010 = REL.vllm_rules((0, 10, 1))
    pcie, sxm = (load_accelerator(g).scale_up_bandwidth for g in ("a100-pcie-80gb", "a100-sxm4-80gb"))
    assert E.comm_rule(2, None, pcie) == "pcie" and E.comm_rule(2, None, sxm) == "nvlink"
    assert P.comm_bytes(v010, "vllm", 2, 1, sxm) == pytest.approx(2 * 544e6)
    assert P.comm_bytes(v010, "vllm", 2, 1, pcie) == 0.25 * GiB


def test_what_tp2_adds_on_the_pair_without_p2p():
    """Same machine, same utilization, logged weights and KV: (weights + KV) at TP 1 less at TP 2 is
    what TP 2 adds to activations + non-torch. The sampler step (256 x 152,064 logits, every rank) is
    the activation peak at both, so it is what the communicators leave on the device: 14.25 + 5.01 -
    7.12 - 12.02 = 0.12 GiB at 0.25, 14.25 + 24.83 - 7.12 - 31.83 = 0.13 GiB at 0.5 (the rows' 0.01 GiB
    figures; with the logs' 14.2488 / 7.1217 GiB weights 0.117 / 0.127). The NVLink rule charged
    1.01 GiB; the off-NVLink assumption charges 0.25."""
    added = {}
    for util in ("025", "05"):
        tp1, tp2 = _row(f"dennis0101-qwen2-7b-a100-tp1-util{util}"), _row(f"dennis0101-qwen2-7b-a100-tp2-util{util}")
        added[util] = sum(tp1["logged"][k] for k in ("weights_gib", "kv_gib")) - \
            sum(tp2["logged"][k] for k in ("weights_gib", "kv_gib"))
        m1, _ = S.predicted_memory(tp1)
        m2, _ = S.predicted_memory(tp2)
        assert m2.activations == pytest.approx(m1.activations, rel=1e-9)  # the sampler step at both
        assert m2.comm == E.PCIE_COMM_BYTES
    assert added["025"] == pytest.approx(0.12, abs=0.005) and added["05"] == pytest.approx(0.13, abs=0.005)
    assert all(0.0 < a < E.PCIE_COMM_BYTES / GiB < 2 * 544e6 / GiB for a in added.values())


def test_tp2_kv_within_one_percent_of_the_logs():
    """Available KV at TP 2: -7.0 / -2.4% under the NVLink rule, -0.7 / -0.1% off NVLink (the 0.25 GiB
    assumption is 0.13 / 0.12 GiB above what the pair shows, 1.1% / 0.4% of their KV memory, which the
    rest of the split partly offsets: TP 1 is +1.7 / +0.6%)."""
    cases = {c[0]: (c[3] - c[2]) / c[2] for c in S.serving_memory_cases()
             if c[1] == "memory, serving (vLLM): available KV memory (held out)"}
    assert cases["dennis0101-qwen2-7b-a100-tp2-util025"] == pytest.approx(-0.007, abs=0.003)
    assert cases["dennis0101-qwen2-7b-a100-tp2-util05"] == pytest.approx(-0.001, abs=0.003)
    assert all(abs(cases[f"dennis0101-qwen2-7b-a100-tp1-util0{u}"]) < 0.02 for u in ("25", "5"))
