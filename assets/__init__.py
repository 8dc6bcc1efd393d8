"""Dagster software-defined assets: staging and products, one package per domain."""
