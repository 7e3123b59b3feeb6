"""Mender MB (wave 12, review R3 S5): gpus_within's round counts are named module constants, not a walrus that
kept a removed parameter's name (``minimal_rounds``) alive as a local; the same 12 + 6 rounds as before."""

import inspect

from gpuplan.jobs.training import timing


def test_the_rounds_are_module_constants():
    assert (timing.WORKING_GPU_ROUNDS, timing.COUNT_ROUNDS) == (12, 6)
    source = inspect.getsource(timing)
    assert "(minimal_rounds :=" not in source and "< minimal_rounds" not in source
