"""The settings every product's schema shares: types coerced on check; the columns it names
required, and, for an exact product, no others."""

import pandera.polars as pa


class Product(pa.DataFrameModel):
    """A product's schema: the columns it names, coerced to their types; a product may carry
    columns beyond them (the parts a page's items are made from)."""

    class Config:
        strict = False
        coerce = True


class ExactProduct(Product):
    """A product's schema that names every column it may have."""

    class Config:
        strict = True
