"""The live tail as the edge follows it: the trades, pairs and tokens past the snapshot."""
