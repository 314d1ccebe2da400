"""The CPU-steadiness probe: a figure when it runs, "not measured" when it is switched off
or cannot run."""

from __future__ import annotations

import os

from stackbench.monitor import cpu_noise


def test_the_probe_measures_a_cv_on_the_asked_core(monkeypatch):
    monkeypatch.delenv(cpu_noise.SKIP_VAR, raising=False)
    cv = cpu_noise.measure([min(os.sched_getaffinity(0))], slices=4, slice_s=0.05)
    assert cv is not None and 0 <= cv < 1  # a busy VM measured 0.14–0.17; 1 would be a stalled core


def test_off_skips_it_and_says_not_measured(monkeypatch):
    monkeypatch.setenv(cpu_noise.SKIP_VAR, "off")
    assert cpu_noise.measure([0]) is None


def test_a_probe_that_cannot_run_is_not_measured_not_zero(monkeypatch):
    monkeypatch.delenv(cpu_noise.SKIP_VAR, raising=False)
    monkeypatch.setattr(cpu_noise.sys, "executable", "/nonexistent/python")
    assert cpu_noise.measure([0], slices=2, slice_s=0.01) is None
