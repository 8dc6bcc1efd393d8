"""Dagster wiring and the chaintape command line."""

import os
import warnings

# A run allocates and frees frames and arrays of hundreds of megabytes many times over. Polars'
# allocator hands freed pages back to the system at once by default, and each reuse then faults
# them in again: a fifth of a wallet run's CPU went to the kernel. Freed pages are kept a second
# for reuse, then returned by a background thread: kept longer, a step's freed pages stay
# resident under the next steps', and a run holds several steps' peaks at once. Read when polars
# first allocates, so this runs before any import of it (the command line, the code location).
os.environ.setdefault("_RJEM_MALLOC_CONF",
                      "background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:1000")

# Dagster's notices that the partitioned checks and backfill policies are beta or preview
# features: known and chosen, not for every run's output. Here, so that every process loading
# the definitions (the command line, the code server, each run's process) leaves them out.
warnings.filterwarnings("ignore", message=r".* is currently in (beta|preview)")
