"""What a run costs beyond its FLOPs: GPUs x time, data, checkpoints, failures, money.

  gpu_time.py     GPU count x wall-clock x MFU: given any two, solve the third (the article's budget)
  io.py           the input rate a step needs, and whether storage and CPUs can feed it
  checkpoint.py   checkpoint size, write time, the GPUs' wait, the space to keep
  reliability.py  interruptions of a synchronous job, checkpoint interval, expected lost time
  cost.py         GPU-hours to dollars, on-demand vs spot, the contingency budget
"""
