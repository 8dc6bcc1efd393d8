"""The CPU priority of chaintape's batch work where it shares a machine with the live path."""

# The refreshes and the live tail's snapshot preparation run at this niceness: the live path
# (the lake's writer, the tail writer, the edge) is served first and the batch takes the rest,
# so a burst of batch work holds up neither a swap on its way to the edge nor a lookup.
BATCH_NICENESS = 10
