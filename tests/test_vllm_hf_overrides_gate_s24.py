"""s24 (helper PL): the vLLM refusal of a context past max_model_len offered `--hf-overrides` at every release. Read in
the PyPI sdists' vllm/engine/arg_utils.py: 0.6.4 has EngineArgs.hf_overrides (L130) and `--hf-overrides` (L514, PR
#5836), 0.6.3.post1 has neither; `--rope-scaling` is in 0.4.3 (L339) and 0.6.3.post1 (L459), not in 0.4.2. The line
now names what the release takes (jobs.inference.context_limits.rope_scaling_ways).

The ask: qwen2.5-0.5b (max_position_embeddings 32768, no rope_scaling) at --context 65536 on one H100: every release
refuses it (65,536 > 32,768) in one line, exit 2, with a YaRN factor ceil(65,536 / 32,768) = 2."""

import pytest

from gpuplan.jobs.inference.context_limits import VLLM_HF_OVERRIDES_SINCE, VLLM_ROPE_SCALING_ARG_SINCE

HEAD = ("error: context: got 65536; must be at most 32,768: vLLM refuses a max_model_len above qwen2.5-0.5b's 32,768 "
        "(max_position_embeddings) ")


def _refusal(run_cli, release: str) -> str:
    code, out, err = run_cli("infer", "qwen2.5-0.5b", "--gpu", "h100", "--context", "65536", "--engine",
                             f"vllm=={release}", "--no-search")
    assert code == 2 and not out, (code, out)
    lines = err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(HEAD), lines[0]
    return lines[0]


def test_the_gates_are_the_releases_read():
    assert VLLM_HF_OVERRIDES_SINCE == (0, 6, 4) and VLLM_ROPE_SCALING_ARG_SINCE == (0, 4, 3)


@pytest.mark.parametrize("release, ways", [
    ("0.6.4", "rope_scaling in config.json or --hf-overrides);"),
    ("0.6.3.post1", "rope_scaling in config.json or --rope-scaling (no --hf-overrides before vLLM 0.6.4));"),
    ("0.6.3", "rope_scaling in config.json or --rope-scaling (no --hf-overrides before vLLM 0.6.4));"),
    ("0.4.3", "rope_scaling in config.json or --rope-scaling (no --hf-overrides before vLLM 0.6.4));"),
    ("0.4.2", "rope_scaling in config.json (no --rope-scaling before vLLM 0.4.3));"),
])
def test_the_refusal_names_what_the_release_takes(run_cli, release, ways):
    line = _refusal(run_cli, release)
    assert f"(e.g. YaRN factor 2 via {ways}" in line
    assert ("--hf-overrides)" in line) == (release == "0.6.4")


def test_the_note_under_another_engine_says_from_which_vllm_release():
    """SGLang answers it with the note, naming vLLM's --hf-overrides with its first release."""
    from gpuplan import estimate_inference

    notes = estimate_inference({"model": "qwen2.5-0.5b", "gpu": "h100", "context": 65536, "engine": "sglang",
                                "search": False}).notes
    (note,) = [n for n in notes if n.startswith("context 65,536 exceeds the model's maximum of 32,768")]
    assert "(e.g. YaRN factor 2 via rope_scaling in config.json or vLLM's --hf-overrides (from 0.6.4))" in note
