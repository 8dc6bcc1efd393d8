"""The live oracle: a price hub following an upstream, its channels and streams."""
