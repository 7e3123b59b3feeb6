#!/usr/bin/env python3
"""Allocated peak of a LoRA r16 training step on a tiny 2-layer Qwen3-MoE under FakeTensorMode (no GPU, no weights):
transformers 5.17 + peft 0.21 (the H200 runs' releases), "all-linear" (gpuplan.profile.op_census._with_lora), bf16
frozen base, fp32 adapters (peft's default), AdamW foreach, two steps (the second tracked as steady state), tracked
by gpuplan.profile._trackers.FastMemTracker as `gpuplan measure` tracks a full step (it has no LoRA option: the
tracker's grad hooks are skipped on frozen parameters). Prints JSON; tests/test_lora_moe_memory.py holds the numbers.

  PYTHONPATH=<transformers-5.17.0 wheel>:<peft 0.21.0> python scripts/lora_moe_fake_check.py EXPERTS SEQ {none,full}

(docs/step.md: the 5.17.0 wheel on PYTHONPATH.) About 10 s on one CPU core."""
import contextlib, json, sys, warnings
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1] / "src"))
import torch, transformers
from torch._subclasses.fake_tensor import FakeTensorMode
import transformers.masking_utils as masking_utils
from gpuplan.profile import _trackers
from gpuplan.profile.measure import _CATEGORY_OF, _categorise
from gpuplan.profile.op_census import _with_lora

CFG = dict(model_type="qwen3_moe", hidden_size=512, num_attention_heads=8,
           num_key_value_heads=2, head_dim=64, intermediate_size=1024, moe_intermediate_size=256, num_experts=int(sys.argv[1]) if len(sys.argv) > 1 else 16,
           num_experts_per_tok=2, vocab_size=1024, num_hidden_layers=2, max_position_embeddings=4096,
           decoder_sparse_step=1, mlp_only_layers=[], tie_word_embeddings=False, rope_theta=1e6)
SEQ, RANK = int(sys.argv[2]) if len(sys.argv) > 2 else 512, 16
recompute = sys.argv[3] if len(sys.argv) > 3 else "none"
warnings.filterwarnings("ignore")


class _NoHandle:
    def remove(self):
        pass


for _name in ("register_hook", "register_post_accumulate_grad_hook"):  # the tracker hooks every parameter;
    _orig = getattr(torch.Tensor, _name)  # a frozen base weight refuses hooks: skip them (no grad to see)

    def _hook(self, fn, _orig=_orig):
        return _orig(self, fn) if self.requires_grad else _NoHandle()

    setattr(torch.Tensor, _name, _hook)
cfg = transformers.Qwen3MoeConfig(**{k: v for k, v in CFG.items() if k != "model_type"})
with contextlib.ExitStack() as stack:
    orig = masking_utils.find_packed_sequence_indices
    masking_utils.find_packed_sequence_indices = lambda *a, **k: None
    stack.callback(setattr, masking_utils, "find_packed_sequence_indices", orig)
    old = torch.get_default_dtype(); torch.set_default_dtype(torch.bfloat16)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa", dtype=torch.bfloat16)
    torch.set_default_dtype(old)
    model = _with_lora(model, RANK)
    stack.enter_context(FakeTensorMode(allow_non_fake_inputs=True))
    model.to_empty(device="cpu")
    model.train()
    if recompute == "full":
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.enable_input_require_grads()
    trained = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trained, lr=1e-4, foreach=True)
    ids = torch.randint(0, cfg.vocab_size, (1, SEQ))
    tracker = _trackers.FastMemTracker()
    tracker.track_external(model, opt, ids)
    _trackers.tag_optimizer_states(tracker, opt)
    tracker.category_of = {m: _CATEGORY_OF[m.name] for m in tracker._ref_class}
    acts = {}
    def step():
        tracker.phase = "forward"
        out = model(input_ids=ids, labels=ids, use_cache=False)
        acts["end_of_forward"] = _categorise(tracker._current_totals())[0]
        tracker.phase = "backward"
        out.loss.backward(); del out
        tracker.phase = "optimizer_step"; opt.step()
        tracker.phase = "zero_grad"; opt.zero_grad(set_to_none=True)
    with tracker:
        step(); tracker.reset_mod_stats(); step(); tracker.phase = "done"
    peak = {}
    for snap in tracker.get_tracker_snapshot("peak").values():
        for k, v in snap.items():
            peak[k] = peak.get(k, 0) + v
    at_peak, _ = _categorise(peak)
    print(json.dumps({"config": CFG, "seq": SEQ, "rank": RANK, "recompute": recompute,
                      "trained_params": sum(p.numel() for p in trained),
                      "dtypes": sorted({str(p.dtype) for p in trained}),
                      "peak_bytes": sum(at_peak.values()), "at_peak": at_peak, "peak_phase": tracker.peak_phase,
                      "end_of_forward": acts["end_of_forward"], "transformers": transformers.__version__}))
