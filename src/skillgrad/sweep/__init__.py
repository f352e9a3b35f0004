"""Sweeps: a config run over seeds x a grid, one run directory each, on a local process pool or
Ray, summarised with intervals over seeds and a paired test (``docs/sweeps.md``)."""
