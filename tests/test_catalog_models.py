"""Every catalog model: counted parameters vs the published count (within 0.5%, or the
tolerance an entry's param_count_exception states with its reason)."""

import pytest

from gpuplan.catalog import load_model, model_entries
from gpuplan.core.model.spec import count_parameters

ENTRIES = model_entries()
REQUIRED = {"id", "display_name", "family", "hf_repo", "config_source", "published_params",
            "published_params_source", "config"}


def test_catalog_has_at_least_40_models():
    assert len(ENTRIES) >= 40


@pytest.mark.parametrize("model_id", sorted(ENTRIES))
def test_entry_is_complete_and_sourced(model_id):
    entry = ENTRIES[model_id]
    assert REQUIRED <= set(entry), REQUIRED - set(entry)
    assert entry["config_source"].strip() and entry["published_params_source"].strip()


@pytest.mark.parametrize("model_id", sorted(ENTRIES))
def test_parameter_count_matches_published(model_id):
    entry = ENTRIES[model_id]
    exception = entry.get("param_count_exception")
    tolerance = 0.005
    if exception:
        assert exception["reason"].strip(), "an exception must say why"
        tolerance = exception["tolerance"]
    counted = count_parameters(load_model(model_id)).total
    published = entry["published_params"]
    assert abs(counted - published) / published <= tolerance, (
        f"{model_id}: counted {counted:,} vs published {published:,} ({(counted - published) / published:+.3%})")


@pytest.mark.parametrize("family_members", [
    ("gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl"),
    ("llama-2-7b", "llama-2-13b", "llama-2-70b"),
    ("pythia-70m", "pythia-160m", "pythia-410m", "pythia-1b", "pythia-1.4b", "pythia-2.8b", "pythia-6.9b", "pythia-12b"),
])
def test_families_grow_monotonically(family_members):
    counts = [count_parameters(load_model(m)).total for m in family_members]
    assert counts == sorted(counts)
