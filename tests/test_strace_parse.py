"""Parsing `strace -c -f` summaries (unit; the text is what strace 6.1 prints)."""

from stackbench.monitor.strace import parse_summary

TEXT = """% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 26.66    0.035755           2     16205           rt_sigaction
 11.69    0.015677           7      2000           writev
  8.24    0.011059           2      4024      2002 read
  0.09    0.000117           0       158        39 openat
------ ----------- ----------- --------- --------- ----------------
100.00    0.134139           2     22387      2041 total
"""


def test_counts_per_call_and_total():
    counts = parse_summary(TEXT)
    assert counts == {"rt_sigaction": 16205, "writev": 2000, "read": 4024, "openat": 158, "total": 22387}


def test_empty_output():
    assert parse_summary("") == {"total": 0}
