"""The ASGI edge: serves the HTTP interface from the latest published snapshot."""
