"""A capacity search's next probe waits for the stack to work off the requests the last one
left queued (runner/capacity_search.py settle): while its CPU keeps climbing it waits, once
idle it goes on, and never past the limit."""

from __future__ import annotations

from types import SimpleNamespace

from stackbench.runner import capacity_search


class Monitor:
    """CPU that climbs by a core's worth each read for `busy` reads, then stops."""

    def __init__(self, busy: int):
        self.reads, self.busy, self.used = 0, busy, 0

    def cpu_used_us(self) -> int:
        self.reads += 1
        if self.reads <= self.busy + 1:
            self.used += int(capacity_search.QUIET_S * 1e6)
        return self.used


def test_the_next_probe_waits_while_the_stack_works_and_not_after(monkeypatch):
    monkeypatch.setattr(capacity_search, "QUIET_S", 0.01)
    m = Monitor(busy=3)
    waited = capacity_search.settle(SimpleNamespace(monitor=m), 5.0)
    assert m.reads == 5 and waited < 1.0  # three busy windows, then one idle
    idle = Monitor(busy=0)
    capacity_search.settle(SimpleNamespace(monitor=idle), 5.0)
    assert idle.reads == 2
    busy = Monitor(busy=10_000)
    assert 0.05 <= capacity_search.settle(SimpleNamespace(monitor=busy), 0.05) < 0.5  # never past the limit
    assert capacity_search.settle(SimpleNamespace(monitor=None), 5.0) < 0.01


def test_a_waiting_stack_is_given_the_time_its_queue_takes_to_drain(monkeypatch):
    # php-sleep's queue drains with its CPU idle: the CPU alone would say "go" at once.
    monkeypatch.setattr(capacity_search, "QUIET_S", 0.01)
    idle = Monitor(busy=0)
    waited = capacity_search.settle(SimpleNamespace(monitor=idle), 5.0, drain=0.15)
    assert 0.15 <= waited < 0.5 and idle.reads == 2
    assert 0.05 <= capacity_search.settle(SimpleNamespace(monitor=None), 0.05, drain=3.0) < 0.5  # bounded
    result = SimpleNamespace(requests=SimpleNamespace(in_flight_at_end=40, completed=400), duration_us=5_000_000)
    assert capacity_search.drain_s(result) == 0.5  # 40 left at the 80/s it served
