"""planner.space.power_counts / range_counts read their bound from the range itself (final8 SHOULD): they looped
over range(0, 24), so a power of two past 2^23 dropped out silently had --gpus' limit (schema.vocabulary.MAX_GPUS,
10^7 < 2^24) ever been raised. Within the limit the counts are unchanged (checked against the parent on 3,000
random ranges up to 2^24 when this changed)."""

from gpuplan.planner.space import power_counts, range_counts
from gpuplan.schema.vocabulary import MAX_GPUS


def test_every_power_of_two_in_the_range_is_kept():
    # before: (2^20, 2^21, 2^22, 2^23, 2^26), 2^24 and 2^25 dropped
    assert power_counts(2**20, 2**26) == tuple(2**k for k in range(20, 27))
    # 2^24 = 16,777,216; 3 x 2^23 = 25,165,824; 2^25 = 33,554,432 (before: only the two ends)
    assert range_counts(2**24 - 1, 2**25) == (2**24 - 1, 2**24, 3 * 2**23, 2**25)


def test_the_schema_limit_answers_as_before():
    """docs/cli.md: 1-10,000,000 is 1, 2, 4, ..., 8,388,608 and 10,000,000 (25 counts)."""
    counts = power_counts(1, MAX_GPUS)
    assert len(counts) == 25 and counts[-2:] == (2**23, MAX_GPUS)
