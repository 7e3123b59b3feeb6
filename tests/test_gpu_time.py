import pytest

from gpuplan.core.economics.gpu_time import comm_share_of_time, solve_compute_budget
from gpuplan.errors import InputError

A100 = 312e12
ARTICLE_FLOPS = 8.4e22


def test_article_example_gpus_for_seven_days():
    budget = solve_compute_budget(ARTICLE_FLOPS, A100, mfu=0.4, wall_seconds=7 * 86400)
    assert budget.flops_per_gpu_day == pytest.approx(1.078272e19)  # 312e12 x 0.4 x 86400 (article ~1.08e19)
    assert budget.gpu_days == pytest.approx(7790.3, abs=0.1)  # article rounds to 7,776 via 1.08e19
    assert budget.gpus == pytest.approx(1112.9, abs=0.1)  # article: ~1,112
    assert budget.gpus_whole == 1113


def test_each_unknown_solves_consistently():
    days = solve_compute_budget(ARTICLE_FLOPS, A100, gpus=1000, mfu=0.4)
    mfu = solve_compute_budget(ARTICLE_FLOPS, A100, gpus=1000, wall_seconds=days.wall_seconds)
    gpus = solve_compute_budget(ARTICLE_FLOPS, A100, mfu=0.4, wall_seconds=days.wall_seconds)
    assert mfu.mfu == pytest.approx(0.4)
    assert gpus.gpus == pytest.approx(1000)
    assert days.wall_seconds / 86400 == pytest.approx(7790.3 / 1000, abs=1e-3)


def test_needs_exactly_two():
    with pytest.raises(InputError):
        solve_compute_budget(ARTICLE_FLOPS, A100, gpus=8)
    with pytest.raises(InputError):
        solve_compute_budget(ARTICLE_FLOPS, A100, gpus=8, mfu=0.4, wall_seconds=1.0)


def test_comm_share_is_the_articles_ratio():
    # comm / (compute + comm) with comm = 0.25 x compute -> 0.2
    assert comm_share_of_time(0.25) == pytest.approx(0.2)
