"""MST detection on synthetic series: bounded vs growing backlog, loss, slow drain, driver shortfall, ramps."""

from __future__ import annotations

import random

import pytest
from flowbroker_bench import mst


def series(
    growth_per_s: float, level: float = 50, seconds: float = 20, noise: float = 30
) -> list[tuple[float, int]]:
    rng = random.Random(7)
    return [
        (t / 4, int(level + growth_per_s * t / 4 + rng.uniform(-noise, noise)))
        for t in range(int(seconds * 4))
    ]


def test_flat_noisy_backlog_is_sustainable() -> None:
    v = mst.judge(10_000, 9_998, series(0), lost=0, drain_s=0.05)
    assert v.sustainable and not v.reasons


def test_growing_backlog_fails_even_when_the_end_level_is_small() -> None:
    v = mst.judge(10_000, 9_700, series(300, level=0), lost=0, drain_s=0.3)
    assert not v.sustainable
    assert any("grows" in r for r in v.reasons)


def test_high_but_flat_backlog_fails_on_level() -> None:
    v = mst.judge(1_000, 1_000, series(0, level=5_000), lost=0, drain_s=0.2)
    assert not v.sustainable and any("at window end" in r for r in v.reasons)


def test_loss_slow_drain_and_driver_shortfall_each_fail() -> None:
    flat = series(0)
    assert mst.judge(1000, 990, flat, lost=3, drain_s=0.1).reasons == ("3 lost",)
    assert mst.judge(1000, 1000, flat, lost=0, drain_s=1.6).reasons == ("last message 1.6 s after stop",)
    short = mst.judge(100_000, 80_000, flat, lost=0, drain_s=0.1, sent_rate=80_000)
    assert short.reasons == ("driver offered only 80,000 msgs/s",)


def test_slope_of_a_line() -> None:
    assert mst.slope([(0, 1), (1, 3), (2, 5)]) == pytest.approx(2.0)
    assert mst.slope([(1, 5)]) == 0.0
    assert mst.slope([(1, 5), (1, 9)]) == 0.0


def test_ramp_rates_and_their_errors() -> None:
    assert mst.ramp_rates(1000, 2, 8000) == [1000, 2000, 4000, 8000]
    with pytest.raises(ValueError, match="factor > 1"):
        mst.ramp_rates(1000, 1, 8000)


def engine(capacity: float):  # type: ignore[no-untyped-def]
    """A synthetic engine: backlog grows at (rate - capacity) once the rate exceeds its capacity."""

    def step(rate: float) -> mst.Verdict:
        excess = max(0.0, rate - capacity)
        backlog = [(t / 4, int(20 + excess * t / 4)) for t in range(80)]
        drain = backlog[-1][1] / capacity
        return mst.judge(rate, min(rate, capacity), backlog, lost=0, drain_s=drain)

    return step


@pytest.mark.parametrize("capacity", [1_500.0, 23_000.0, 71_000.0])
def test_ramp_finds_the_capacity_within_bisection_accuracy(capacity: float) -> None:
    ramp = mst.run_ramp(mst.ramp_rates(1000, 1.5, 500_000), engine(capacity), refine=4)
    assert ramp.mst <= capacity * 1.02
    assert ramp.mst >= capacity * 0.85
    assert not ramp.steps[-1].sustainable or ramp.steps[-1].rate == ramp.mst
    failed = [s for s in ramp.steps if not s.sustainable]
    assert failed and all(s.rate > ramp.mst for s in failed)


def test_ramp_with_nothing_sustainable_reports_zero() -> None:
    ramp = mst.run_ramp([5000, 10_000], engine(100.0), refine=2)
    assert ramp.mst == 0.0
