"""Fault injection on the real TMS processes (loopback only): bounded faults, invariant checks
after each, and a report (see tests/faults/conftest.py)."""
