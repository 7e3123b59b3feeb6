"""Hugging Face Hub ids (``org/name``) -> config.json, never weights.

A catalog model can be named by its ``hf_repo``; any other id is fetched as config.json alone
through huggingface_hub (optional: ``pip install 'gpuplan[hub]'``), which caches it under
HF_HOME and honours HF_HUB_OFFLINE and HF_ENDPOINT. When the id cannot be fetched (offline, no
network, gated, no such repository), one line says how to pass a local config.json instead.
"""

from __future__ import annotations

import re
from typing import Any

from gpuplan.errors import InputError

# Hub repository ids: "org/name", letters, digits, '.', '_' and '-' (huggingface_hub's
# validate_repo_id: at most 96 characters per part, no '--' or '..').
HF_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
PROBE_TIMEOUT = 5.0
"""Seconds to wait for the Hub's answer about config.json before saying it cannot be reached."""
LOCAL_HINT = "download its config.json and pass the file: --model path/to/config.json"


def is_hub_id(text: str) -> bool:
    return bool(HF_ID.match(text)) and ".." not in text and "--" not in text and not text.endswith(".json")


def fetch_config(repo_id: str) -> tuple[dict[str, Any], str]:
    """(config.json of ``repo_id``, the cached file's path); InputError with the way out."""
    try:
        import huggingface_hub.constants  # noqa: F401 - first, directly: the package's lazy import prints its error
        from huggingface_hub import hf_hub_download
        from huggingface_hub import errors as hub_errors
    except ImportError:
        raise InputError("model", repo_id, "is not in the catalog; fetching its config.json needs huggingface_hub "
                         f"(pip install 'gpuplan[hub]'), or {LOCAL_HINT}") from None
    except ValueError as exc:  # huggingface_hub reads HF_* variables at import: HF_HUB_ETAG_TIMEOUT=abc
        import os

        names = sorted(k for k in os.environ if k.startswith(("HF_", "HUGGINGFACE_")))
        raise InputError("environment", ", ".join(names) or "HF_*", f"huggingface_hub cannot read its settings "
                         f"({str(exc)[:80]}); fix or unset them, or {LOCAL_HINT}") from None
    from huggingface_hub.utils import logging as hub_logging

    hub_logging.set_verbosity_error()  # one line of ours, not the library's retry chatter
    try:
        path = _download(repo_id, hf_hub_download)
    except (hub_errors.OfflineModeIsEnabled, hub_errors.LocalEntryNotFoundError):
        from huggingface_hub import constants

        why = "HF_HUB_OFFLINE is set and it is not cached" if constants.HF_HUB_OFFLINE else "the Hub cannot be reached"
        raise InputError("model", repo_id, f"is not in the catalog and {why}; {LOCAL_HINT}") from None
    except hub_errors.GatedRepoError:
        raise InputError("model", repo_id, "is gated on the Hub: accept its licence and log in (hf auth login), "
                         f"or {LOCAL_HINT}") from None
    except (hub_errors.RepositoryNotFoundError, hub_errors.EntryNotFoundError, hub_errors.RevisionNotFoundError):
        raise InputError("model", repo_id, "is neither in the catalog nor a Hub repository with a config.json "
                         "(see `gpuplan catalog models`)") from None
    except Exception as exc:  # network failures surface as httpx / OS errors, by version
        raise InputError("model", repo_id, f"could not be fetched from the Hub ({type(exc).__name__}); "
                         f"{LOCAL_HINT}") from None
    from gpuplan.adapters.files import read_json

    return read_json(path, "config"), str(path)


def _download(repo_id: str, hf_hub_download) -> str:
    """The cached config.json, else one quick metadata request (no retries, PROBE_TIMEOUT s)
    before the download, so an unreachable Hub fails in seconds rather than after backoff."""
    from huggingface_hub import constants, get_hf_file_metadata, hf_hub_url
    from huggingface_hub import errors as hub_errors

    try:
        return hf_hub_download(repo_id, "config.json", local_files_only=True)
    except (hub_errors.LocalEntryNotFoundError, hub_errors.OfflineModeIsEnabled):
        if constants.HF_HUB_OFFLINE:
            raise
    get_hf_file_metadata(hf_hub_url(repo_id, "config.json"), timeout=PROBE_TIMEOUT, retry_on_errors=False)
    return hf_hub_download(repo_id, "config.json")  # this one file: never weights
