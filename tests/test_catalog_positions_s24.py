"""s24 (helper PL): every catalog model's config states the position length its reader takes, or is listed here.

qwen2.5-1.5b stated none, so it read Qwen2Config's default 32,768 (adapters.class_shapes) where Qwen/Qwen2.5-1.5B's
config.json states max_position_embeddings 131072 (its entry's config_source: a quantization carrying the base config
unchanged, and a transformers print of the base config.json; the card's trained context is 32,768), and vLLM, which
derives max_model_len from the config, refused nothing gpuplan refused: `infer qwen2.5-1.5b --context 65536` was
refused 'must be at most 32,768'. The audit of the other entries: only falcon-7b and falcon-40b state no length,
and there the published (in-library) config.json states none either, so FalconConfig's 2,048 is what vLLM and
transformers build (tests/test_hostile_w25_mend.py test_3_falcon...)."""

import json

from gpuplan.catalog import load_model, model_entries

POSITION_KEYS = ("max_position_embeddings", "n_positions", "seq_length", "max_seq_len")  # class_shapes.POSITION_KEYS
STATES_NONE_UPSTREAM = {"falcon-7b", "falcon-40b"}  # their config.json states none (FalconConfig default 2,048)


def _stated(config: dict) -> bool:
    nested = config.get("text_config") or {}
    return any(k in config or k in nested for k in POSITION_KEYS)


def test_every_catalog_model_states_its_positions_or_is_listed():
    missing = {name for name, entry in model_entries().items() if not _stated(entry.get("config", {}))}
    assert missing == STATES_NONE_UPSTREAM
    for name in STATES_NONE_UPSTREAM:
        assert load_model(name).max_position_embeddings == 2048  # FalconConfig's default


def test_qwen25_1_5b_reads_its_config_json_131072():
    from gpuplan.adapters.class_shapes import POSITION_KEYS as READER_KEYS
    from gpuplan.catalog import model_entry
    from gpuplan.jobs.inference.context_limits import vllm_max_model_len

    assert set(READER_KEYS) == set(POSITION_KEYS)
    assert load_model("qwen2.5-1.5b").max_position_embeddings == 131_072 == 2**17
    assert vllm_max_model_len(model_entry("qwen2.5-1.5b")["config"]) == (131_072, "max_position_embeddings")


def test_vllm_takes_a_context_past_32768_and_refuses_past_131072(run_cli):
    code, out, err = run_cli("infer", "qwen2.5-1.5b", "--gpu", "h100", "--context", "65536", "--no-search", "--json")
    assert code == 0, err
    assert json.loads(out)["inputs"]["context"] == 65536
    code, out, err = run_cli("infer", "qwen2.5-1.5b", "--gpu", "h100", "--context", "131073", "--no-search")
    assert code == 2
    assert err.strip().startswith("error: context: got 131073; must be at most 131,072: vLLM refuses a max_model_len "
                                  "above qwen2.5-1.5b's 131,072 (max_position_embeddings)")
    assert len(err.strip().splitlines()) == 1

