"""Communication of a training step: what each parallelism sends, over which links, how long it
takes and how much of it compute hides. Units: bytes, seconds.

  topology.py         scale-up domains (NVLink / NVSwitch) joined by a scale-out network
  volumes.py          collective volumes and alpha-beta times on the two-level topology
  p2p_schedule.py     how NCCL spreads an all-to-all's send/recv pairs over its p2p channels, and its call cost
  collectives.py      NCCL collectives by message size: algorithm and protocol (ring, tree, NVLS, ...)
  collective_cost.py  one kind of collective in a step, as ``plan --explain`` lists it
  step_comm.py        the collectives of one step, parallelism by parallelism
  dp_costs.py         the data-parallel collectives: gradient reduce-scatter / all-reduce, gathers
  dp_overlap.py       how much data-parallel communication each framework leaves exposed
  fsdp2_reshard.py    where torchtitan's ZeRO-2 is FSDP2 without reshard after forward (ZeRO-3's collectives)
  zero3_gathers.py    how often ZeRO-3 / FSDP gathers each parameter per micro-batch
  moe_overlap.py      the expert all-to-all under Megatron-Core's combined 1F1B schedule
"""
