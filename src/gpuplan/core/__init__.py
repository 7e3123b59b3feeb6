"""Pure formulas on frozen dataclasses. Standard library only on the import path (numpy
arrays are accepted where noted, but never imported here); nothing in core reads files or
prints.

Grouped by concern (a newcomer finds a term in one step):
  units, hardware, parallel, precision, frameworks, bulk   used by every group
  model/      ModelSpec, parameter counts, FLOPs per token
  memory/     training memory per GPU, term by term
  time/       what one step executes and how long it takes
  comm/       collectives, topology, overlap
  economics/  GPU-hours, data I/O, checkpoints, failures, cost
  serving/    weights, KV cache, engine memory, prefill / decode, speculative decoding
"""
