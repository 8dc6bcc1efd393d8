"""The bottom modules every layer may import: the spec's vocabulary, the lake's and products'
column types, fingerprints, market hours, the oracle's feeds and price process, and the home
directory. They import nothing of ours above them."""
