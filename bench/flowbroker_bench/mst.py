"""Maximum sustainable throughput (seed 003): judge paced steps and ramp the rate until one fails.

A rate counts as sustainable only when, over the measured window, the backlog (sent − delivered)
stays bounded, nothing is lost, and the last message arrives within ``max_drain_s`` after the
sender stops. "Bounded" is judged on the backlog series itself: its least-squares slope must stay
below a small share of the offered rate and its final level below a fraction of a second's worth
of messages, so a slow leak that a single end-of-run sample would hide still fails the step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Verdict:
    """The judgement of one step, with the reasons a failed step failed."""

    rate: float
    delivered_rate: float
    sustainable: bool
    backlog_slope: float
    backlog_end: int
    lost: int
    drain_s: float
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class Criteria:
    #: largest backlog growth accepted, as a share of the offered rate (msgs/s per msgs/s)
    max_slope_share: float = 0.02
    #: largest backlog at the end of the window, in seconds of offered load
    max_backlog_s: float = 0.5
    #: the last message must arrive within this many seconds after sending stops
    max_drain_s: float = 1.0
    #: messages that may go missing (QoS 0 over loopback should lose none)
    max_lost: int = 0
    #: the driver must really offer this share of the nominal rate
    min_offered_share: float = 0.97


def slope(series: Sequence[tuple[float, float]]) -> float:
    """Least-squares slope of (t, value) points; 0 for fewer than two distinct times."""
    n = len(series)
    if n < 2:
        return 0.0
    mean_t = sum(t for t, _ in series) / n
    mean_v = sum(v for _, v in series) / n
    var = sum((t - mean_t) ** 2 for t, _ in series)
    if var == 0:
        return 0.0
    return sum((t - mean_t) * (v - mean_v) for t, v in series) / var


def judge(
    rate: float,
    delivered_rate: float,
    backlog: Sequence[tuple[float, int]],
    lost: int,
    drain_s: float,
    criteria: Criteria | None = None,
    sent_rate: float | None = None,
) -> Verdict:
    """Whether one paced step was sustainable, and why not when it was not.

    ``sent_rate`` is what the driver actually offered; when it falls short of ``rate`` the step
    measured the driver, not the engine, and cannot count.
    """
    c = criteria or Criteria()
    growth = slope(backlog)
    end = int(backlog[-1][1]) if backlog else 0
    reasons: list[str] = []
    if sent_rate is not None and sent_rate < c.min_offered_share * rate:
        reasons.append(f"driver offered only {sent_rate:,.0f} msgs/s")
    if growth > c.max_slope_share * rate:
        reasons.append(f"backlog grows {growth:,.0f} msgs/s")
    if end > max(1.0, c.max_backlog_s * rate):
        reasons.append(f"backlog {end:,} at window end")
    if lost > c.max_lost:
        reasons.append(f"{lost:,} lost")
    if drain_s > c.max_drain_s:
        reasons.append(f"last message {drain_s:.1f} s after stop")
    return Verdict(rate, delivered_rate, not reasons, growth, end, lost, drain_s, tuple(reasons))


@dataclass
class Ramp:
    """The steps of one ramp in order, and the highest sustainable rate among them."""

    steps: list[Verdict] = field(default_factory=list)

    @property
    def mst(self) -> float:
        good = [v.rate for v in self.steps if v.sustainable]
        return max(good) if good else 0.0


def ramp_rates(start: float, factor: float, limit: float) -> list[float]:
    """Geometric steps from ``start`` up to ``limit`` (both included when reached)."""
    if start <= 0 or factor <= 1 or limit < start:
        raise ValueError(f"ramp needs 0 < start <= limit and factor > 1 (got {start}, {factor}, {limit})")
    rates: list[float] = []
    rate = start
    while rate <= limit * 1.0001:
        rates.append(round(rate))
        rate *= factor
    return rates


def run_ramp(
    rates: Sequence[float],
    step: Callable[[float], Verdict],
    *,
    refine: int = 2,
    stop_after_failures: int = 1,
) -> Ramp:
    """Run ``step`` at rising rates until one fails, then bisect between the last good and the failure.

    ``refine`` is how many bisection steps follow the first failure.
    """
    result = Ramp()
    last_good = 0.0
    failed_at: float | None = None
    failures = 0
    for rate in rates:
        verdict = step(rate)
        result.steps.append(verdict)
        if verdict.sustainable:
            last_good = rate
        else:
            failures += 1
            failed_at = rate if failed_at is None else min(failed_at, rate)
            if failures >= stop_after_failures:
                break
    low, high = last_good, failed_at
    for _ in range(refine):
        if high is None or high - low <= max(1.0, 0.03 * high):
            break
        mid = round((low + high) / 2)
        verdict = step(mid)
        result.steps.append(verdict)
        if verdict.sustainable:
            low = mid
        else:
            high = mid
    return result
