"""Training memory on one GPU, term by term. Units: bytes.

  training.py         the per-GPU total: model states by precision recipe and optimizer, ZeRO / FSDP
                      sharding, activations, transients, framework reserve (the recipe table)
  model_states.py     the parameters a pipeline stage holds after TP / EP division
  activations.py      the tensors a step saves for backward, per token and layer
  recompute.py        what activation recomputation frees and re-runs, per framework setting
  step_transients.py  transient peaks beyond the saved activations (optimizer step, logits, gathers)
  device_memory.py    beyond PyTorch's allocated tensors: the caching allocator's reserve, CUDA context
"""
