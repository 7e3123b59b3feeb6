"""core.comm.group_geometry's worst split without a list of the group's members (the w17 search-memory mend): the
fewest / most members a domain holds, read from the first and last domains and one period of the inner ones, equal
a count of every member by hand; a data group of 2^20 - 1 ranks (the hostile wave-5 search's GPU counts) costs no
array of its ranks or domains."""

import tracemalloc

import pytest

from gpuplan.core.comm.group_geometry import _worst_shape, divides_evenly, domain_split, worst_split


def _by_every_member(ranks, stride, domain, world):
    """(fewest, domains, members) of the worst group, counting each member's domain one by one: bases outer x
    block + inner below the world (inner < stride), a member's domain (base + i x stride) // domain; the fewest
    members in a domain, then the most domains, the first such base in order."""
    block = ranks * stride
    best = None
    for outer in range(max(world // block, 1)):
        for inner in range(stride):
            base = outer * block + inner
            where = [(base + i * stride) // domain for i in range(ranks)]
            members = [where.count(d) for d in range(where[0], where[-1] + 1)]
            key = (min(members), -len(members))
            if best is None or key < best[0]:
                best = (key, members)
    members = best[1]
    return min(members), len(members), tuple(members) if len(members) > 1 else ()


# the uneven geometries only: an even one is the even rule's split (test_group_straddle), not a count
UNEVEN = [(r, s, d) for r in (2, 3, 5, 7, 12, 31, 97) for s in (1, 2, 3, 4, 5, 7, 9) for d in (3, 6, 8, 10, 12, 72)
          if not divides_evenly(r, s, d)]


@pytest.mark.parametrize(("ranks", "stride", "domain"), UNEVEN)
def test_the_worst_split_equals_a_count_of_every_member(ranks, stride, domain):
    for world in (ranks * stride, 2 * ranks * stride + 1, 5 * ranks * stride):
        if world <= domain:
            continue  # the job in one domain: no straddle
        found = worst_split(ranks, stride, domain, False, world)
        fewest, domains, members = _by_every_member(ranks, stride, domain, world)
        assert (found.fewest, found.domains, found.members) == (fewest, domains, members)
        # the most members a domain holds, as domain_split gives it to the links (GroupLinks.most: read from the first
        # and last domains and one period of the inner ones), against the count
        assert int(domain_split(ranks, stride, domain, False, world)[2]) == (max(members) if members else fewest)


def test_a_million_rank_group_holds_no_array_of_its_ranks():
    """dp 2^20 - 1 beside tp 1 on 8-GPU nodes (hostile wave 5's counts): 131,072 domains, 8 members in each but
    the last's 7 (2^20 - 1 = 131,071 x 8 + 7); fewest 7, most 8, counted in well under a MiB (the member list it
    used to hold was 1 MiB a job, 8 MiB of temporaries)."""
    ranks = 2**20 - 1
    _worst_shape.cache_clear()
    tracemalloc.start()
    try:
        fewest, spans, most, straddle = domain_split(ranks, 1, 8, False, ranks)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (int(fewest), float(spans), int(most), bool(straddle)) == (7, 131072.0, 8, True)
    assert peak < 2**18, peak
