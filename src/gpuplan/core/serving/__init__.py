"""Serving formulas, one module per concern (pure: no files, no printing, no torch).

weights      weight formats and bytes per GPU / per decode step
kv_cache     KV bytes per token and sequence, capacity in sequences and tokens
releases     engine versions (``vllm==0.19``) and the memory rules each release runs
profile      what an engine's start-up profile measures: activation peak, non-torch memory,
             CUDA-graph memory
memory       the engine memory split and the KV budget per GPU
kernels      achievable fractions of the roofline by kernel and GEMM shape, host time per step
roofline     prefill and decode step times
load         one replica under a request load (continuous batching, queueing)
speculative  speculative decoding
lora         multi-LoRA adapter slots
engines      engine names, options each engine reads, vendors, communicator counts
"""
