"""The figures the batch and the live tail both make, defined once: a pair's row and trades,
reserves valued at their quote's price, raw amounts, the wallets' ledger. Polars in, polars
out; no Dagster."""
