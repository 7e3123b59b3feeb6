"""What vLLM's V1 model runner does for a speculative (EAGLE) step beyond a plain decode step,
counted from its code, and what that costs at the package's own per-launch host time.

A plain V1 decode step replays the target's CUDA graphs, samples, and syncs once
(``sampled_token_ids.tolist()``). With EAGLE the runner also builds the speculative metadata,
runs the rejection sampler, prepares the proposer's inputs and runs the proposer; every one of
those operations is launched eagerly from Python, and four of them wait for the GPU (``.item()``,
``.tolist()``). ``RunnerOps`` counts, per release read, the GPU operations (kernels and
host<->device copies) launched from Python beyond the plain step's, and the extra syncs.

One launch costs what the package charges any launch an engine issues eagerly from Python
(core.serving.first_token_path.EAGER_HOST_PER_LAUNCH_RANGE_S: 41.96 us expected, from SGLang PR
12160's eager and graphed forwards, outside the validation set; the same constant times vLLM V1's
--enforce-eager steps). Before 2026-12-06 a launch here was Efficiency.layer_launch_s / 10 = 8 us,
the TensorRT engines' C++ enqueue the 80 us was fitted on, not a Python-issued torch op.

Where the launches fall against the syncs decides what they cost (v1/worker/gpu_model_runner.py
@v0.8.4:1085-1240, v1/spec_decode/eagle.py@v0.8.4:34-185; the V1 step is synchronous: the previous
step ended on its draft tokens' ``.tolist()``):

- ``behind_forward``: launched after the target's graphed forward and before the first sync (the logits
  gathers, the rejection sampler): they queue behind the forward's GPU work, so they cost nothing.
- the rest of ``per_verify`` outside the draft segment (the speculative metadata before the forward;
  after the sampled tokens' sync, the proposer's input preparation and its preamble up to its two
  ``.item()`` syncs): the GPU has nothing else queued, so each launch's host time is serial.
- the draft segment (after the last ``.item()``, eagle.py@v0.8.4:86-141, to ``draft_token_ids.tolist()``,
  runner L1229): the k draft forwards with no sync between them, so the host runs ahead of the GPU
  and the segment takes max(issue, GPU), the rule first_token_path applies to any eager forward.

Every eager vLLM 0.8.x drafter is priced by this one rule (EAGLE-1 from 0.8.0, EAGLE-3 from 0.8.5; which
release runs which method, MTP on 0.8.x's V0 included, is jobs/inference/inputs_releases.VLLM_SPECULATIVE_SINCE), at the Python launch time whatever
--launch-layer-us says: that flag sets Efficiency.layer_launch_s, the TensorRT-style per-layer enqueue the
graphed and engine paths pay, not a Python-issued launch (as for --enforce-eager steps).

Lower-bound exclusions (launches not counted): with tp > 1, VocabParallelEmbedding's mask / sub / masked_fill
ops and the draft layer's all-reduces; non-greedy draft sampling (eagle.py@v0.8.4 L225-: where, div_, softmax,
the sampling ops), the counts being the greedy path's.

The syncs' own latency is not priced (no per-sync figure in the package or a cited measurement).
The EAGLE head also runs an ``fc`` projection the one-layer draft shape does not hold
(``fusion_weights``). Units: launches, parameters, seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.serving.releases import EngineRelease

LAUNCHES_PER_EAGER_LAYER = 10
"""Launches of one eager decoder layer of vLLM's Llama (model_executor/models/llama.py@v0.8.4: two
fused_add_rms_norm, the qkv / o / gate_up / down GEMMs, rotary_embedding, reshape_and_cache_flash,
flash_attn_varlen_func, silu_and_mul)."""
EAGLE1_LAYER_LAUNCHES = LAUNCHES_PER_EAGER_LAYER - 1
"""Launches of the EAGLE-1 head's one decoder layer a draft forward: the Llama layer's 10 less its input
RMSNorm, which the head's first layer replaces with nn.Identity (model_executor/models/llama_eagle.py
@v0.8.4:33-37, layer 0 built with disable_input_layernorm=True at L57-63; with residual None the layer
calls it on the hidden states alone, so no kernel): 9. The head's embedding, concat, fc and final
residual add (L74-85) are in RunnerOps' counts."""
EAGLE3_LAYER_LAUNCHES = 12
"""Launches of the EAGLE-3 head's one decoder layer a draft forward (model_executor/models/llama_eagle3.py
@v0.8.5:51-76): input_layernorm on the embeddings and hidden_norm on the hidden states (two rms_norm, no
residual yet), the concat to 2h, the qkv / o GEMMs, rotary_embedding, reshape_and_cache_flash,
flash_attn_varlen_func, post_attention fused_add_rms_norm, gate_up / down GEMMs, silu_and_mul: 12. The head's
embedding, fc (first step only, L122-123), final fused_add_rms_norm (L133) and the draft-to-target vocabulary
map of compute_logits (L205-213) are in RunnerOps' counts."""


@dataclass(frozen=True)
class RunnerOps:
    """GPU operations a release's V1 runner and EAGLE proposer launch from Python for one
    speculative step beyond a plain decode step (kernels and host<->device copies), counted from
    the code at ``source``; the draft decoder layer's own launches are not in these counts."""

    per_verify: int
    """Once per verify step at k > 1 proposed tokens: the speculative metadata, the rejection
    sampler, the proposer's input preparation, the first draft step's embedding / concat / fc /
    residual add / LM head / argmax, the stacking of the drafts."""
    per_later_draft: int
    """Each draft step after the first: the position, sequence-length and slot-mapping updates,
    the embedding / concat / fc / residual add, the LM head and the argmax."""
    single_draft_fewer: int
    """Launches per_verify has that k = 1 skips (the early return before the loop's set-up)."""
    syncs: int
    """GPU -> host synchronisations beyond the plain step's one (counted, not priced)."""
    source: str
    layer_launches: int
    """Launches of the head's decoder layer each draft forward (EAGLE1_LAYER_LAUNCHES, EAGLE3_LAYER_LAUNCHES)."""
    behind_forward: int
    """Of per_verify, launched between the target's forward and the first sync: the bonus and target
    logits gathers (gpu_model_runner.py@v0.8.4:1094, 1104) and the greedy rejection sampler's fill_,
    argmax and Triton kernel (v1/sample/rejection_sampler.py@v0.8.4:172-181). They queue behind the
    forward's GPU work (a batch-1 decode forward, milliseconds), so their host time is hidden."""
    draft_segment: int
    """Of per_verify, launched after the proposer's last sync (eagle.py@v0.8.4:68-69, two .item()) with the
    draft forwards: the first draft step's embedding, concat, fc, residual add, last-token gather, LM head and
    argmax (L86-94, llama_eagle.py L74-85: 7), the positions gather L106 and the two stacks L139 / L141 (3,
    the single_draft_fewer skipped at k = 1), and draft_token_ids.tolist() (runner L1229: 1) = 11. 0.8.5:
    L93-101 (7), L111-112 two gathers + one stack (3), the .tolist() (1) = 11. EAGLE-3 at 0.8.5: embedding,
fc, final norm, gather, LM head + the vocabulary map's arange / add / new_full / index_put, argmax (10), the 3,
the .tolist() = 14. Both fields are set per entry from the code read (no default a later release inherits)."""


_RUNNER_084 = ("vllm v0.8.4 (wheel): v1/worker/gpu_model_runner.py L807-819 (4 H2D index copies, 2 gathers, "
               "1 add; the plain step's L598 subtraction not counted), L1094 / L1104 (bonus / target logits "
               "gathers), v1/sample/rejection_sampler.py L172 / L180 / L181 (fill_, argmax, Triton greedy "
               "kernel; L124's .cpu() replaces the plain step's L1149 .tolist()), L1184 / L1205 (2 H2D), "
               "v1/spec_decode/eagle.py prepare_inputs L160-179 (2 subs, cumsum, fill, .item(), Triton kernel), "
               "runner L1214-1217 (4 gathers), L1229 (.tolist()): 24")
EAGLE_OPS: tuple[tuple[tuple[int, int, int], tuple[int, int, int], RunnerOps], ...] = (
    # V1 EAGLE ran a real head from vllm PR 16035 (model loading), merged between 0.8.3 and 0.8.4
    # (0.8.3's eagle.py still holds DummyEagleModel): the rows named 0.8.3 ran this code.
    ((0, 8, 0), (0, 8, 5), RunnerOps(
        45, 13, 3, 4,
        _RUNNER_084 + "; eagle.py propose L54-69 (sub, copy, index_put, index + add + int, max + .item(), "
        "sub + max + .item(): 11), L86-94 (embed, cat, fc, residual add of llama_eagle.py L74-85, the "
        "last-token gather, LM head, argmax: 7), L106 gather + L139 / L141 two stacks (3, skipped at k = 1); "
        "loop L114-134: 7 position / slot ops + 4 forward ops + LM head + argmax = 13",
        EAGLE1_LAYER_LAUNCHES, behind_forward=5, draft_segment=11)),
    ((0, 8, 5), (0, 9, 0), RunnerOps(
        45, 17, 3, 4,
        _RUNNER_084.replace("v0.8.4 (wheel)", "v0.8.5 (wheel; the runner's same operations, lines shifted)") + "; eagle.py@v0.8.5 propose L61-76 (11), "
        "L93-101 (7), L111-112 two gathers + one stack (3, skipped at k = 1); loop adds the max-model-length "
        "guard (>=, torch.where, two masked_fill_): 11 position / slot ops + 4 forward ops + LM head + argmax "
        "= 17", EAGLE1_LAYER_LAUNCHES, behind_forward=5, draft_segment=11)),
)
"""EAGLE-1 (method 'eagle') in vLLM V1 before 0.9.0, whose proposer ran eagerly (kernels.
drafter_runs_eager); later releases captured it in CUDA graphs (vllm PR 17211, 0.9.0) and changed
the runner: their code is not counted here, so no term applies there (a lower bound)."""

EAGLE3_OPS: tuple[tuple[tuple[int, int, int], tuple[int, int, int], RunnerOps], ...] = (
    # EAGLE-3 (method 'eagle3') first shipped in vLLM 0.8.5 (model_executor/models/llama_eagle3.py; 0.8.4's
    # engine/arg_utils.py L1496-1510 takes only ngram / eagle on V1), run by the same EagleProposer.propose
    # as EAGLE-1 (v1/spec_decode/eagle.py@v0.8.5:41-169)
    ((0, 8, 5), (0, 9, 0), RunnerOps(
        51, 19, 3, 4,
        "vllm v0.8.5 (wheel): EAGLE-1's 45 at 0.8.5 (above) with the runner's target hidden states taken from the "
        "three auxiliary layers (gpu_model_runner.py L1255-1264: 3 gathers + torch.cat for L1260's 1 gather: +3) "
        "and the head's own first-step ops (draft_segment 14 for 11: +3); loop: 11 position / slot ops + embedding "
        "+ final norm (llama_eagle3.py L121, L133) + LM head + the vocabulary map (arange, add, new_full, "
        "index_put, L207-213) + argmax = 19", EAGLE3_LAYER_LAUNCHES, behind_forward=5, draft_segment=14)),
)
"""EAGLE-3 in vLLM V1 before 0.9.0 (eager; kernels.drafter_runs_eager)."""

def runner_ops(release: EngineRelease | None, method: str) -> RunnerOps | None:
    """The counts for ``release`` and ``method``, or None where none were read (other engines, other
    releases, draft models, n-gram, MTP). Every eager vLLM 0.8.x drafter the inputs admit
    (inputs_releases.check_speculative) has counts: EAGLE-1 from 0.8.0, EAGLE-3 from 0.8.5."""
    table = {"eagle": EAGLE_OPS, "eagle3": EAGLE3_OPS}.get(method)
    if release is None or release.engine != "vllm" or table is None:
        return None
    for first, end, ops in table:
        if first <= release.version < end:
            return ops
    return None


def serial_host_seconds(ops: RunnerOps | None, launch_s: float) -> float:
    """Host seconds once a verify step that no GPU work hides: ``per_verify`` less the launches queued behind
    the target's forward and those of the draft segment (draft_segment_seconds), each ``launch_s``. 0.8.4:
    45 - 5 - 11 = 29 launches (the metadata's 6 before the forward; after the sampled tokens' sync the 2
    host -> device lists, input preparation and 4 gathers, 12; the proposer's preamble, 11), at any k."""
    if ops is None:
        return 0.0
    return serial_launches(ops) * launch_s


def serial_launches(ops: RunnerOps) -> int:
    """Launches of ``per_verify`` that no GPU work hides: less those behind the target's forward and the draft
    segment's (0.8.4: 45 - 5 - 11 = 29; EAGLE-3 at 0.8.5: 51 - 5 - 14 = 32)."""
    return ops.per_verify - ops.behind_forward - ops.draft_segment


def draft_segment_seconds(ops: RunnerOps, tokens: int, launch_s: float, gpu_s: float) -> float:
    """Seconds of the k = ``tokens`` draft forwards, launched from Python with no sync between them
    (eagle.py@v0.8.4:86-141): max(issue, GPU), ``gpu_s`` the drafts' GPU work (layer, LM head, fc, KV).
    Issue: draft_launches(ops, tokens), each ``launch_s``."""
    return max(draft_launches(ops, tokens) * launch_s, gpu_s)


def draft_launches(ops: RunnerOps, tokens: int) -> int:
    """Launches of the draft segment: its own (draft_segment, less single_draft_fewer at k = 1), k layers of
    ``ops.layer_launches`` and (k - 1) x per_later_draft. EAGLE-1 at 0.8.4, k = 2: 11 + 2 x 9 + 13 = 42;
    k = 4: 11 + 36 + 39 = 86. EAGLE-3 at 0.8.5, k = 2: 14 + 2 x 12 + 19 = 57."""
    once = ops.draft_segment - (ops.single_draft_fewer if tokens == 1 else 0)
    return once + tokens * ops.layer_launches + (tokens - 1) * ops.per_later_draft


@dataclass(frozen=True)
class RunnerHost:
    """The speculative runner's host time at one verify step, for the answer: ``serial_launches`` at
    ``launch_s`` each (serial_host_seconds, seconds ``serial_s``) and the draft forwards' ``draft_launches``
    (draft_launches, issue ``draft_issue_s``), ``host_bound`` where that issue exceeds the drafts' GPU work."""

    serial_launches: int
    draft_launches: int
    launch_s: float
    host_bound: bool

    @property
    def serial_s(self) -> float:
        return self.serial_launches * self.launch_s

    @property
    def draft_issue_s(self) -> float:
        return self.draft_launches * self.launch_s


def runner_host(release: EngineRelease | None, method: str, tokens: int, launch_s: float,
                draft_s: float) -> RunnerHost | None:
    """What the answer says of the runner's host time (roofline.decode_step prices it), or None where no counts
    apply; ``draft_s`` the priced draft segment (seconds), host-bound when it equals the issue time."""
    ops = runner_ops(release, method)
    if ops is None:
        return None
    serial = serial_launches(ops)
    drafts = draft_launches(ops, tokens)
    return RunnerHost(serial, drafts, launch_s, draft_s <= drafts * launch_s * (1 + 1e-9))


def fusion_weights(spec: ModelSpec, method: str, tokens: int) -> float:
    """Parameters of the head's input projection read over one verify step's ``tokens`` draft
    steps (a plain nn.Linear, replicated on every TP rank): EAGLE-1's fc from [embedding, hidden
    state] (2h -> h) every step (vllm model_executor/models/llama_eagle.py@v0.8.4 L64-76) and
    DeepSeek-V3's MTP eh_proj (2h -> h, tech. report Sec. 2.2) likewise; EAGLE-3's fc (3h -> h) on
    the first step only, over the target's three concatenated feature layers, later steps feeding
    back h-wide states (llama_eagle3.py@v0.8.5: fc only when the width differs)."""
    h = spec.hidden_size
    if method in ("eagle", "mtp"):
        return tokens * 2 * h * h
    if method == "eagle3":
        return 3 * h * h if tokens >= 1 else 0.0
    return 0.0
