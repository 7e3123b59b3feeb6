"""PEFT LoRA (or a full fine-tune) of a transformers causal LM, measured on a CPU under fake
tensors (bytes, one GPU: no data parallelism).

Framework: peft 0.21.2 on transformers 5.24.0, torch 2.13. Exercised code: transformers'
``AutoModelForCausalLM.from_config`` (e.g. ``models/llama/modeling_llama.py``, SDPA attention,
``loss/loss_utils.py:ForCausalLMLoss``), ``modeling_utils.gradient_checkpointing_enable``
(non-reentrant) and ``enable_input_require_grads``; peft's ``mapping_func.get_peft_model`` and
``tuners/lora/layer.py`` (``LoraLayer``/``Linear``: fp32 adapters on a frozen bf16 base, the
PEFT default). The loop is what HF Trainer runs per micro-batch: forward with ``labels``
(optionally under ``torch.autocast(bf16)``, as ``Trainer(bf16=True)`` through accelerate),
backward, torch AdamW (``adamw_torch_fused`` is HF's default optimizer), ``zero_grad``.
"""

from __future__ import annotations

import contextlib

from gpuplan.errors import InputError
from gpuplan.profile.frameworks.common import (
    MISSING_PACKAGE,
    FrameworkMeasurement,
    FrameworkRun,
    ModelShape,
    Patches,
    PatchLog,
    depth_point,
    make_tracker,
    measure_depths,
    model_shape,
    require,
    run_two_steps,
    tag_optimizer_states,
)

TARGETS = {
    "all-linear": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
    "q,v": ["q_proj", "v_proj"],
}


def measure_peft_lora(run: FrameworkRun) -> FrameworkMeasurement:
    """Measure ``run`` with transformers + PEFT at its two depths and extrapolate to full depth."""
    _validate(run)
    versions = _import_versions()
    shape = model_shape(run.model, llama_only=False)
    log = PatchLog()
    return measure_depths(run, shape, lambda n: _measure_depth(run, shape, n, log),
                          _notes(run), log, versions)


def _validate(run: FrameworkRun) -> None:
    require(run.framework == "peft", "framework", run.framework, "peft")
    require(run.world_size == 1, "dp", (run.dp, run.tp, run.pp), "dp = tp = pp = 1 for peft (one GPU)")
    require(run.microbatches == 1, "microbatches", run.microbatches, "1 for peft")
    require(run.recompute in ("none", "full"), "recompute", run.recompute,
            "none or full (HF gradient checkpointing) for peft")
    require(run.loss == "ce" and run.float8 == "none" and run.reshard == "default", "loss", run.loss,
            "ce, with float8 none and reshard default, for peft")


def _import_versions() -> dict[str, str]:
    try:
        import peft
        import torch
        import transformers
    except ImportError as exc:
        raise InputError("framework", "peft", f"peft {MISSING_PACKAGE}") from exc
    return {"torch": torch.__version__, "transformers": transformers.__version__, "peft": peft.__version__}


def _notes(run: FrameworkRun) -> list[str]:
    notes = ["model built on meta (then get_peft_model) and materialised with to_empty() as fake CPU "
             "tensors; same tensors as loading bf16 weights"]
    if run.lora_rank:
        notes.append("LoRA adapters fp32 (PEFT default autocast_adapter_dtype=True), base bf16 frozen")
    else:
        notes.append("full fine-tune: every parameter bf16 and trained (pure bf16 AdamW)")
    return notes


def _build_model(run: FrameworkRun, shape: ModelShape, layers: int):
    import peft
    import torch
    import transformers

    from gpuplan.profile.measure import _build_config

    config, text, _ = _build_config(transformers, shape.hf_config, layers)
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        with torch.device("meta"):
            model = transformers.AutoModelForCausalLM.from_config(text, attn_implementation="sdpa",
                                                                  dtype=torch.bfloat16)
    finally:
        torch.set_default_dtype(old)
    if run.lora_rank:
        lcfg = peft.LoraConfig(r=run.lora_rank, lora_alpha=2 * run.lora_rank, lora_dropout=0.0,
                               target_modules=TARGETS[run.lora_targets], task_type="CAUSAL_LM")
        model = peft.get_peft_model(model, lcfg)
    return model


def _optimizer(run: FrameworkRun, params):
    import torch

    return torch.optim.AdamW(params, lr=1e-4, foreach=run.optimizer_impl == "foreach",
                             fused=run.optimizer_impl == "fused")


def _measure_depth(run: FrameworkRun, shape: ModelShape, layers: int, log: PatchLog):
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from transformers import masking_utils

    from gpuplan.profile._trackers import skip_frozen_grad_hooks

    with contextlib.ExitStack() as stack:
        p = Patches(stack)
        p.set(masking_utils, "find_packed_sequence_indices", lambda *a, **k: None,
              "fake tensors look like packed sequences: HF would save a [b,1,s,s] mask (gpuplan trap 2)")
        model = _build_model(run, shape, layers)
        p.note("model built on meta, to_empty() under FakeTensorMode: PEFT's adapter .to(device, dtype) "
               "fails on fake tensors (\"Couldn't swap Linear.weight\", gpuplan trap 1)")
        with FakeTensorMode(allow_non_fake_inputs=True):
            model.to_empty(device="cpu")
            model.train()
            if run.recompute == "full":
                model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
                if run.lora_rank:
                    model.enable_input_require_grads()
            trainable = [q for q in model.parameters() if q.requires_grad]
            opt = _optimizer(run, trainable)
            ids = torch.randint(0, shape.vocab, (run.micro_batch, run.seq_len))
            tracker = make_tracker()
            skip_frozen_grad_hooks(tracker, model)
            p.note("MemTracker._param_to_grad_hook_handles pre-filled for frozen parameters: the stock "
                   "tracker cannot hook a tensor that does not require grad")
            tracker.track_external(model, opt, ids)
            tag_optimizer_states(tracker, opt)
            run_two_steps(tracker, _step_fn(run, model, opt, ids, tracker))
            point = depth_point(tracker, layers)
        log.add(p.reasons)
    return point


def _step_fn(run: FrameworkRun, model, opt, ids, tracker):
    import torch

    def step():
        tracker.phase = "forward"
        cast = torch.autocast("cpu", dtype=torch.bfloat16) if run.autocast else contextlib.nullcontext()
        with cast:
            out = model(input_ids=ids, labels=ids, use_cache=False)
        tracker.phase = "backward"
        out.loss.backward()
        del out
        tracker.phase = "optimizer_step"
        opt.step()
        tracker.phase = "zero_grad"
        opt.zero_grad(set_to_none=True)

    return step


__all__ = ["measure_peft_lora"]
