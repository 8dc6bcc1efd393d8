"""The market domain's routes (spec 2.2, 2.3, 2.7, 4.2-4.7): pairs, tokens, a pair's trades and
candles, and search."""
