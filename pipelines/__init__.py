"""Dagster wiring and the chaintape command line."""

import ctypes
import ctypes.util
import os

# A run allocates and frees frames and arrays of hundreds of megabytes many times over, and every
# page handed back to the system costs a fault and a clearing when it is used again: on a wallet
# run the kernel's share of the CPU came close to the programs' own. Polars' allocator keeps
# freed pages for reuse and returns them from a background thread after 30 s. Read when polars
# first allocates, so this runs before any import of it (the command line, the Dagster code
# location).
os.environ.setdefault("_RJEM_MALLOC_CONF",
                      "background_thread:true,dirty_decay_ms:30000,muzzy_decay_ms:30000")

# The C allocator (numpy's arrays, the compiled folds' arrays) maps every large array afresh and
# unmaps it when freed. Instead: one arena for all threads, large blocks from its heap, and up
# to 1 GiB of freed top kept, so a freed array's pages serve the next one (a fifth fewer page
# faults on the wallet books).
_M_TRIM_THRESHOLD, _M_MMAP_MAX, _M_ARENA_MAX = -1, -4, -8
_libc = ctypes.util.find_library("c")
if _libc and hasattr(ctypes.CDLL(_libc), "mallopt"):
    _mallopt = ctypes.CDLL(_libc).mallopt
    for _option, _value in ((_M_ARENA_MAX, 1), (_M_MMAP_MAX, 0), (_M_TRIM_THRESHOLD, 1 << 30)):
        _mallopt(_option, _value)
