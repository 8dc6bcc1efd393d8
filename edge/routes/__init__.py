"""Route handlers, one module per domain."""
