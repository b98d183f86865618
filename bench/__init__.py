"""Benchmarks: ``python -m bench`` prints markdown tables and writes bench/RESULTS.md."""
