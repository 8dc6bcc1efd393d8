"""An asset's deps are what it reads: reading a table it does not depend on fails its step."""

import dagster as dg
import polars as pl
import pytest

from assets.domains import keys
from assets.warehouse import Warehouse


def test_an_asset_reads_only_what_it_depends_on(tmp_path) -> None:
    warehouse = Warehouse(root=str(tmp_path / "warehouse"), lake_root=str(tmp_path / "lake"))
    warehouse.write("as_of", pl.DataFrame({"as_of_s": [1]}))
    warehouse.write("quote_prices", pl.DataFrame({"ts": [1]}))

    @dg.asset(key=["market", "pair_state"], deps=keys("as_of"))
    def honest(warehouse: Warehouse) -> None:
        assert warehouse.scan("as_of").collect().height == 1

    @dg.asset(key=["market", "pair_risk"], deps=keys("as_of"))
    def sneaky(warehouse: Warehouse) -> None:
        warehouse.scan("quote_prices").collect()

    assert dg.materialize([honest], resources={"warehouse": warehouse}).success
    with pytest.raises(dg.Failure, match="reads 'quote_prices' but does not depend on "
                                         "market/quote_prices"):
        dg.materialize([sneaky], resources={"warehouse": warehouse})
    # Outside an asset's step (a check, a test, a bench) any table may be read.
    assert warehouse.scan("quote_prices").collect().height == 1
