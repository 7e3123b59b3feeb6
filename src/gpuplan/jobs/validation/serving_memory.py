"""Serving-memory kinds of ``gpuplan validate``: every quantity an engine's start-up log prints
(weights, activation peak, non-torch memory, CUDA-graph estimate, available KV memory, KV capacity
in tokens) predicted from the release, model, GPU, layout and stated settings alone
(catalog/reference/serving_memory_logs.yaml). Rows whose log set a constant are their own
'fitted' kinds; every other row is held out. A quantity a row's ``excluded`` names is kept out of
its held-out kind and scored, with that kind's rows, in '... (held out, excluded rows scored)', so
the summary gives the figure both ways. Error = (predicted - measured) / measured.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from gpuplan.core.serving import kv_cache as K
from gpuplan.core.serving import memory as M
from gpuplan.core.serving import profile as P
from gpuplan.core.serving import releases as REL
from gpuplan.core.serving import setup as SU
from gpuplan.core.serving import weights as W
from gpuplan.errors import InputError

GiB = 2**30
Case = tuple[str, str, float, float, str, str]
QUANTITIES = {"weights_gib": "weights", "activation_gib": "activation peak", "non_torch_gib": "non-torch memory",
              "graphs_gib": "CUDA-graph estimate", "non_kv_gib": "non-KV total", "kv_gib": "available KV memory"}
"""Logged quantity -> the name its kind carries."""


def memory_kind(engine: str, quantity: str, fitted: bool) -> str:
    """'memory, serving (vLLM): weights (held out)' and the like (GiB in the accuracy tables)."""
    return f"memory, serving ({REL.ENGINE_NAMES[engine]}): {quantity} ({'fitted' if fitted else 'held out'})"


def excluded_scored_kind(engine: str, quantity: str) -> str:
    """The held-out kind of a quantity some row excludes, with the excluded rows scored as well: the
    summary shows the figure both ways (the plain held-out kind leaves them out)."""
    return f"memory, serving ({REL.ENGINE_NAMES[engine]}): {quantity} (held out, excluded rows scored)"


def capacity_kind(engine: str, fitted: bool) -> str:
    return f"inference: KV capacity (tokens), {REL.ENGINE_NAMES[engine]} ({'fitted' if fitted else 'held out'})"


def tokens_kind(engine: str) -> str:
    return f"inference: KV tokens in the logged KV memory, {REL.ENGINE_NAMES[engine]}"


@cache
def memory_logs() -> tuple[dict[str, Any], ...]:
    """The packaged start-up logs (parsed YAML)."""
    from gpuplan.catalog import reference_yaml

    return checked_logs(reference_yaml("serving_memory_logs.yaml"))


SCORED_NAMES = tuple(key.removesuffix("_gib") for key in QUANTITIES)
"""The names an entry's ``fitted`` and ``excluded`` may use (QUANTITIES without '_gib')."""


def checked_logs(data: Any) -> tuple[dict[str, Any], ...]:
    """The ``logs`` list of parsed serving_memory_logs.yaml; InputError naming the row if an entry's
    ``fitted`` or ``excluded`` uses a name that is not a logged quantity (a misspelt key would
    otherwise leave the row scored, or fail later with a KeyError)."""
    if not isinstance(data, dict) or not isinstance(data.get("logs"), list):
        raise InputError("reference", "serving_memory_logs.yaml", "expected a mapping with a 'logs' list")
    for e in data["logs"]:
        if not isinstance(e, dict):
            raise InputError("serving_memory_logs.yaml: logs", e, "each entry must be a mapping with an 'id'")
        for field, shape in (("fitted", list), ("excluded", dict)):
            names = e.get(field)
            where = f"serving_memory_logs.yaml: {e.get('id')}.{field}"
            if names is not None and not isinstance(names, shape):
                raise InputError(where, names, f"expected a {shape.__name__} of {', '.join(SCORED_NAMES)}")
            unknown = [n for n in names or () if n not in SCORED_NAMES]
            if unknown:
                raise InputError(where, unknown[0], f"valid keys: {', '.join(SCORED_NAMES)}")
        if not isinstance(e.get("p2p", True), bool):
            raise InputError(f"serving_memory_logs.yaml: {e.get('id')}.p2p", e["p2p"], "must be true or false")
        if e.get("sampler", P.DEFAULT_SAMPLER) not in P.SAMPLERS:
            raise InputError(f"serving_memory_logs.yaml: {e.get('id')}.sampler", e["sampler"],
                             f"must be one of {', '.join(P.SAMPLERS)}")
    return tuple(data["logs"])


def _setup(e: dict[str, Any], spec, gpu) -> SU.ServingSetup:
    from gpuplan.jobs.inference.resolve import mm_prefix_lm

    release = REL.parse_release(e["engine"])
    runtime = SU.Runtime(gpu_memory_utilization=e.get("gpu_memory_utilization"), engine=release.engine,
                         version=release.version, mem_fraction_static=e.get("mem_fraction_static"),
                         prefill_tokens=e.get("prefill_tokens"), max_num_seqs=e.get("max_num_seqs"),
                         sampler=e.get("sampler", P.DEFAULT_SAMPLER), p2p=e.get("p2p", True))
    kv = K.KV_DTYPE_BYTES[e.get("kv_dtype", "fp16" if e["quantization"] == "fp16" else "bf16")]
    return SU.ServingSetup(_format(e, spec, gpu), kv, runtime, block_size=e.get("block_size", K.DEFAULT_BLOCK_SIZE),
                           mm_prefix_lm=mm_prefix_lm(e["model"], None))


def _format(e: dict[str, Any], spec, gpu) -> W.WeightFormat:
    if e["quantization"] != "auto":
        return W.weight_format(e["quantization"], e.get("group_size", 128), e.get("zero_point", True))
    from gpuplan.jobs.inference.resolve import raw_model_config, resolve_format

    return resolve_format("auto", None, spec, raw_model_config(e["model"], None), gpu)[0]


def predicted_memory(e: dict[str, Any]) -> tuple[M.Memory, K.KVLayout]:
    """The memory split and cache layout gpuplan predicts for a logged start-up."""
    from gpuplan.catalog import load_accelerator, load_model

    spec, gpu = load_model(e["model"]), load_accelerator(e["gpu"])
    setup = _setup(e, spec, gpu)
    tp = e["tp"]
    memory = M.serving_memory_on(spec, W.param_groups(spec), setup, tp, 1, gpu)
    return memory, K.kv_layout(spec, setup.kv_bytes, tp, 1, setup.block_size)


def _predicted_values(m: M.Memory) -> dict[str, float]:
    counted = m.fixed if m.counts_runtime else 0.0
    return {"weights_gib": m.weights, "activation_gib": m.activations, "non_torch_gib": m.non_torch + m.comm,
            "graphs_gib": m.cuda_graphs, "non_kv_gib": m.weights + m.activations + counted,
            "kv_gib": max(m.kv_budget, 0.0)}


def log_cases(e: dict[str, Any]) -> list[Case]:
    """Every logged quantity of one start-up against gpuplan's prediction."""
    memory, layout = predicted_memory(e)
    engine = REL.parse_release(e["engine"]).engine
    logged, fitted = e["logged"], set(e.get("fitted", ()))
    # a fitted graph term sets the KV figures only where the release subtracts the graphs (0.21+)
    sets_kv = fitted if memory.graphs_counted else fitted - {"graphs"}
    predicted = _predicted_values(memory)
    basis = (f"{e['engine']} on {e['gpu']} x{e['tp']}: weights {memory.weights / GiB:.2f} + activations "
             f"{memory.activations / GiB:.2f} + counted runtime {memory.fixed / GiB:.2f} GiB -> KV "
             f"{memory.kv_budget / GiB:.2f} GiB")
    note = e.get("note", "")
    cases = []
    excluded = e.get("excluded") or {}
    for key, quantity in QUANTITIES.items():
        if key in logged and predicted[key] > 0:
            name = key.removesuffix("_gib")
            kind = excluded_scored_kind(engine, quantity) if name in excluded else \
                memory_kind(engine, quantity, name in fitted or _fits(name, sets_kv))
            cases.append((e["id"], kind, logged[key] * GiB, predicted[key], basis, note))
    if "kv_tokens" in logged:
        tokens = K.tokens_in(layout, memory.kv_budget)
        cases.append((e["id"], capacity_kind(engine, bool(sets_kv)), float(logged["kv_tokens"]), float(tokens),
                      basis, note))
        if "kv_gib" in logged:  # the KV-per-token formula alone, on the engine's own KV memory
            in_logged = K.tokens_in(layout, logged["kv_gib"] * GiB)
            cases.append((e["id"], tokens_kind(engine), float(logged["kv_tokens"]), float(in_logged),
                          f"{logged['kv_gib']} GiB / {layout.bytes_per_token:,.0f} B per token, blocks of "
                          f"{layout.block_size}", note))
    return cases


def _fits(name: str, fitted: set[str]) -> bool:
    """A row whose non-torch or activation term set a constant also sets every total that adds it."""
    return name in ("non_kv", "kv") and bool(fitted & {"non_torch", "activation", "graphs"})


def serving_memory_cases() -> list[Case]:
    """Every log's cases; each held-out case of a quantity some row excludes is repeated under
    excluded_scored_kind, beside the excluded rows themselves (log_cases gives them that kind only)."""
    cases = [case for entry in memory_logs() for case in log_cases(entry)]
    pairs = {(REL.parse_release(e["engine"]).engine, QUANTITIES[key + "_gib"])
             for e in memory_logs() for key in (e.get("excluded") or {})}
    repeated = [(c[0], excluded_scored_kind(engine, quantity), *c[2:]) for engine, quantity in sorted(pairs)
                for c in cases if c[1] == memory_kind(engine, quantity, False)]
    return cases + repeated


def serving_memory_excluded() -> list[tuple[str, str]]:
    """(log id, reason) of each logged quantity an entry's ``excluded`` keeps unscored."""
    return [(e["id"], f"{QUANTITIES[key + '_gib']}: {reason}") for e in memory_logs()
            for key, reason in (e.get("excluded") or {}).items()]
