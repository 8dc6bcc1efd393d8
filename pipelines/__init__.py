"""Dagster wiring and the chaintape command line."""

import os

# A run allocates and frees frames and arrays of hundreds of megabytes many times over. Polars'
# allocator hands freed pages back to the system at once by default, and each reuse then faults
# them in again: a fifth of a wallet run's CPU went to the kernel. Freed pages are kept a second
# for reuse, then returned by a background thread: kept longer, a step's freed pages stay
# resident under the next steps', and a run holds several steps' peaks at once. Read when polars
# first allocates, so this runs before any import of it (the command line, the code location).
os.environ.setdefault("_RJEM_MALLOC_CONF",
                      "background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:1000")
