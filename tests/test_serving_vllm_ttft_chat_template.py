"""vLLM's time to first token at concurrency 1 (issue 38): what the chat endpoint of 0.11.0 adds, and the
vllm#20469 run's listed requests.

- vLLM 0.11.0 parses the chat template again for every chat request (resolve_chat_template_kwargs,
  entrypoints/chat_utils.py@v0.11.0:1575-1599, from apply_hf_chat_template L1627-1631); 0.10.2 has no such
  call and 0.11.1 caches it (chat_utils.py@v0.11.1:1523-1535, 1578). Its size, 11 ms, is
  request_path.CHAT_TEMPLATE_REPARSE_S (a timing of that function, docstring). The tests check where it
  applies (release, endpoint) and that it adds exactly that host time, nothing else.
- vllm#20469's run sent 30 requests of 16,000 / 200 tokens ('--num-prompts 30', 'Successful requests: 30',
  'Total input tokens: 480000', 'Total generated tokens: 6000'); listing them scores request 1 as the
  client's warm-up left it in the prefix cache (request_path.warm_first_request_cached).
Step-time identities to 1e-9 relative.
"""

import pytest

from gpuplan.core.serving import request_path as RP
from gpuplan.core.serving.releases import parse_release
from gpuplan.errors import InputError
from gpuplan.jobs.validation import inference as VI


def _row(row_id: str) -> dict:
    found = [e for section in VI.reference_measurements().values() if isinstance(section, list)
             for e in section if isinstance(e, dict) and e.get("id") == row_id]
    assert len(found) == 1, row_id
    return found[0]


GPUSTACK = "gpustack-vllm0110-qwen3-8b-h100-sharegpt-c1"
WMX = "wmx-vllm023-qwen2.5-0.5b-l4-256-128-c1"
ISSUE_20469 = "vllm20469-qwen3-14b-awq-a100pcie-16000-200-c1-eager"


@pytest.mark.parametrize("release, seconds", [
    ("vllm==0.11.0", 0.011),  # resolve_chat_template_kwargs uncached
    ("vllm==0.11", 0.011),    # 0.11 reads as 0.11.0
    ("vllm==0.10.2", 0.0),    # no such call
    ("vllm==0.11.1", 0.0),    # lru_cache'd
    ("vllm==0.23", 0.0),      # renderers/hf.py@v0.23.0:617 lru_cache
    ("sglang==0.5.6", 0.0),
])
def test_chat_template_parse_only_in_vllm_0_11_0(release, seconds):
    assert RP.chat_template_seconds(parse_release(release)) == seconds


def test_server_hold_adds_the_parse_for_chat_requests_only():
    v0110 = parse_release("vllm==0.11.0")
    assert RP.api_server_seconds(v0110) == pytest.approx(0.002)  # completions: the 2 ms tokeniser window
    assert RP.api_server_seconds(v0110, chat=True) == pytest.approx(0.013)  # + 11 ms parse
    assert RP.api_server_seconds(parse_release("vllm==0.23"), chat=True) == pytest.approx(0.002)
    assert RP.api_server_seconds(parse_release("vllm==0.9.1"), chat=True) == 0.0  # no window, no parse
    assert RP.api_server_seconds(parse_release("sglang==0.5.6"), chat=True) == 0.0


def test_rows_name_their_endpoint():
    """Structured row fields (review w9 r1 S2), read onto setup.Runtime.endpoint as infer's --endpoint is."""
    assert VI._runtime_of(_row(GPUSTACK)).endpoint == "chat"              # --backend openai-chat --endpoint /v1/chat/completions
    assert VI._runtime_of(_row(WMX)).endpoint == "completions"            # vllm bench serve's default completions backend
    assert VI._runtime_of(_row(ISSUE_20469)).endpoint == "completions"    # --backend vllm --endpoint /v1/completions


def test_gpustack_row_adds_exactly_the_parse_as_host_time():
    e = _row(GPUSTACK)
    chat, _ = VI._served_request(e, e["prompt_tokens"], e["output_tokens"])
    plain = VI._served_request({**e, "endpoint": "completions"}, e["prompt_tokens"], e["output_tokens"])[0]
    assert chat.total - plain.total == pytest.approx(RP.CHAT_TEMPLATE_REPARSE_S, rel=1e-9)
    assert chat.host_s - plain.host_s == pytest.approx(RP.CHAT_TEMPLATE_REPARSE_S, rel=1e-9)
    assert chat.gemm_s == plain.gemm_s and chat.attention_s == plain.attention_s  # the GPU work is unchanged


def test_issue_20469_lists_its_thirty_requests_and_request_one_is_warm():
    e = _row(ISSUE_20469)
    assert e["num_requests"] == 30 and "requests" not in e  # 30 of one length (review w9 r1 S4)
    pairs = VI._request_pairs(e)
    assert pairs == [(16000, 200)] * 30
    assert sum(p for p, _ in pairs) == 480000 and sum(o for _, o in pairs) == 6000  # the client's totals
    assert VI._warm_first(e)
    ttft, tpot = VI._online_cases(e)
    cold = VI._served_request(e, 16000, 200)[0].total
    warm = VI._served_request(e, 16000, 200, warm=True)[0].total
    # request 1 prefills what the cache lacks: 16,000 - 15,984 (999 whole blocks of 16 below the last token)
    assert RP.warm_first_request_cached(parse_release(e["release"]), 16000) == 15984
    assert warm < 0.05 * cold
    assert ttft[3] == pytest.approx((29 * cold + warm) / 30, rel=1e-9)
    # every request decodes at the same context: the TPOT is the one step's
    assert tpot[3] == pytest.approx(VI._served_request(e, 16000, 200)[1].total, rel=1e-9)


@pytest.mark.parametrize("count", [0, -3, 2.5, True, "30"])
def test_a_bad_request_count_is_one_line_naming_it(count):
    e = {**_row(ISSUE_20469), "num_requests": count}
    with pytest.raises(InputError, match=r"num_requests: got .*; must be a whole number >= 1"):
        VI._online_cases(e)
