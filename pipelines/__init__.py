"""Dagster wiring and the chaintape command line."""
