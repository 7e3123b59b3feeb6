"""The model: its shape and what it costs per token.

  spec.py      ModelSpec (decoder-only transformer, dense or MoE, MLA, MTP) and exact parameter counts
  flops.py     training FLOPs: the article's 6·N·D and an exact per-token count
  mtp.py       multi-token prediction modules: what they add to the last pipeline stage
  finetune.py  LoRA / QLoRA adapters: trainable parameters and what the frozen base keeps
"""
