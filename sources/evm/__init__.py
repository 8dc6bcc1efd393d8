"""Real chains: follow an EVM chain over JSON-RPC into the lake (see docs/ingest.md)."""
