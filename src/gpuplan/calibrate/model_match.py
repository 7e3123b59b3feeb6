"""A trial file's model name against the config it carries (wave 6c): a trial whose ``config.model``
names one catalog model while its ``config.hf_config`` builds another was calibrated and labelled with
the named model (calibrate/measurement.py's label; calibrate/predict.spec_of builds the spec from the
hf_config under that name), so the calibration said it measured a model it did not."""

from __future__ import annotations

from typing import Any

from gpuplan.errors import InputError

SHAPE_KEYS = ("model_type", "hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads",
              "vocab_size")
"""The config keys that say which model a config builds. num_hidden_layers is not among them: a trial may run
fewer layers than the model has (config.settings.layers); config.config_num_layers holds the model's count."""


def check_model_matches_config(config: dict, source: str) -> None:
    """``config.model`` (a catalog id or Hugging Face id) and ``config.hf_config`` describe the same model:
    each SHAPE_KEYS value the hf_config gives equals the catalog config's, and config.config_num_layers (when
    given) the catalog's layer count. A name outside the catalog (a config.json path, an unknown id) is
    not compared: calibrate never opens a path a file names."""
    from gpuplan.catalog import find_model_entry

    hf_config, name = config.get("hf_config"), config.get("model")
    entry = find_model_entry(name) if isinstance(name, str) and isinstance(hf_config, dict) else None
    if entry is None:
        return
    known = entry["config"]
    for key in SHAPE_KEYS:
        if key in hf_config and key in known and _differs(hf_config[key], known[key]):
            raise InputError("config.model", name, f"in {source}: config.hf_config.{key} is {hf_config[key]!r}, "
                             f"{entry['id']}'s is {known[key]!r}: the hf_config builds another model; name the "
                             "model it is (or the config.json path it came from)")
    layers = config.get("config_num_layers")
    if layers is not None and known.get("num_hidden_layers") is not None and layers != known["num_hidden_layers"]:
        raise InputError("config.model", name, f"in {source}: config.config_num_layers is {layers!r}, "
                         f"{entry['id']}'s is {known['num_hidden_layers']!r}: name the model the trial ran")


def _differs(given: Any, known: Any) -> bool:
    return (given.strip().lower() != known.strip().lower()) if isinstance(given, str) and isinstance(known, str) \
        else given != known
