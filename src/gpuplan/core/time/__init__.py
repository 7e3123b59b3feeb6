"""Step time as the software stack runs it. The eager stack, one module per op class (issue 36):

  linears.py         the matmuls one layer executes (shapes, LoRA adapters, routed experts) and
                     their seconds: roofline on the part's measured MAMF, memory floor for skinny ones
  attention.py       the attention kernel torch's SDPA picks per part and its measured speed by
                     head dim and sequence length (cuDNN / FlashAttention-2 / eager)
  memory_kernels.py  memory-bound kernels (norms, RoPE, activations, casts, loss, optimizer):
                     bytes over the achieved HBM bandwidth plus a fixed time per kernel
  op_profile.py      what an eager stack dispatches per layer and for the rest of the model (bytes,
                     kernels, host-dispatched ops), read from the framework's own code by
                     scripts/hf_op_profiles.py, as linear functions of the model's dimensions
  optimizer.py       the optimizer step: bytes per parameter and kernels by implementation
  host.py            host time: ops dispatched from Python and the autograd engine, launch cost
                     per kernel, and the rule that a phase takes max(GPU time, host time)
  eager_step.py      one micro-batch forward and backward, and the optimizer step, of an eager
                     single-GPU stack (Hugging Face transformers / peft), by op class

The fused stacks (Megatron-Core with Transformer Engine, torchtitan) and the planner's bulk search:

  step.py               step time: compute (per-op efficiency) + exposed communication + pipeline
                        bubble + optimizer, whose constants were fitted on published runs (docs/step.md)
  attention_core.py     the attention core's seconds per token (flash kernels vs unfused)
  pipeline_schedule.py  the pipeline bubble by schedule
  eager_fallbacks.py    HBM traffic of Megatron-Core's eager fallbacks (GPT-OSS-like models)
  titan_ops.py          torchtitan's Llama block op class by op class, eager vs torch.compile per
                        block (Inductor's fused regions), its loss and host time (docs/step.md)
  megatron_ops.py       Megatron-Core + Transformer Engine's dense layer op class by op class (TE's
                        fused norms, RoPE, SwiGLU, bias-dropout-add, FP8 quantisers by recipe, the
                        vocab-parallel loss); opt-in through StepSettings.megatron_ops (docs/step.md)
  megatron_ops_step.py  its per-step terms: FP8 weight casts once a step, the distributed optimizer,
                        TE's host time per module
  activation_offload.py Megatron-Core / TE's CPU activation offloading: bytes per layer, TE's window schedule,
                        the copies' exposed part over the host link (StepSettings.offload_layers)
  low_precision.py      the fused model's FP8 / MXFP8 / NVFP4 cast bytes and block-scaled GEMM factor
  moe_host.py           host time a Megatron-Core MoE layer exposes after its dispatcher's token-count sync
  moe_layer.py          a Megatron-Core MoE layer's kernels per local expert (TE GroupedLinear's quantisations
                        and cuBLAS GEMMs: their fixed GPU time) and the alltoall dispatcher's sorts

Communication lives in core.comm. Units: seconds, bytes, FLOPs.
"""
