"""Measuring what a stack costs while it is loaded: cgroups, samplers, syscall counters."""
