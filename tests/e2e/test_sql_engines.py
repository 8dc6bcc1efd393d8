"""Every SQL model executed, not only transpiled, on polars' SQL, on DuckDB and (`make
test-spark`) on Spark in local mode, the query transpiled by sqlglot, over the same
materialised inputs, with equal answers."""

import polars as pl
import pytest

from assets.sql_models import load_models
from assets.warehouse import Warehouse

MODELS = load_models()


@pytest.fixture(scope="module")
def warehouse(home) -> Warehouse:
    return Warehouse(root=str(home / "warehouse"), lake_root=str(home / "lake"))


def _same(polars_answer: pl.DataFrame, duckdb_answer: pl.DataFrame, name: str) -> None:
    assert duckdb_answer.columns == polars_answer.columns, name
    # DuckDB sums integers into 128-bit decimals and names UTC "Etc/UTC", Spark counts in
    # 64 bits: the same values, cast without loss (strict) to the types polars gave.
    other = duckdb_answer.cast(dict(polars_answer.schema), strict=True)
    keys = [c for c, t in polars_answer.schema.items() if not isinstance(t, pl.List | pl.Struct)]
    mine, theirs = polars_answer.sort(keys, nulls_last=True), other.sort(keys, nulls_last=True)
    for column, dtype in polars_answer.schema.items():
        a, b = mine[column], theirs[column]
        assert (a.is_null() == b.is_null()).all(), (name, column)
        if dtype.is_float():
            scale = a.abs().clip(lower_bound=1e-300)
            assert ((a - b).abs() <= 1e-9 * scale).fill_null(True).all(), (name, column)
        else:
            assert a.equals(b), (name, column)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_polars_and_duckdb_agree(warehouse, name):
    model = MODELS[name]
    watermark = warehouse.clock()["as_of"] if "as_of" in model.tables else None
    frames = warehouse.frames(model.tables)
    polars_answer = model.run(frames, watermark)
    assert polars_answer.height > 0, name
    _same(polars_answer, model.run_duckdb(frames, watermark), name)


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("chaintape-sql-models")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    yield session
    session.stop()


@pytest.mark.spark
@pytest.mark.parametrize("name", sorted(MODELS))
def test_polars_and_spark_agree(warehouse, spark, name):
    model = MODELS[name]
    watermark = warehouse.clock()["as_of"] if "as_of" in model.tables else None
    frames = warehouse.frames(model.tables)
    _same(model.run(frames, watermark), model.run_spark(frames, spark, watermark), name)


def test_spark_reads_epochs_and_ordered_distinct_arrays_as_postgres_means_them():
    """The two constructs a plain transpilation gets wrong on Spark are rewritten."""
    sql = MODELS["chain_records"].transpile("spark")
    assert "EXTRACT(EPOCH" not in sql and "UNIX_TIMESTAMP(n.head_block_time)" in sql
    assert "COLLECT_LIST(DISTINCT" not in sql
    assert sql.count("SORT_ARRAY(COLLECT_SET(pn.venue_name))") == 2


def test_an_engine_difference_is_caught(warehouse):
    """The comparison fails when one engine's answer differs in a single value."""
    model = MODELS["pair_activity"]
    answer = model.run(warehouse.frames(model.tables), warehouse.clock()["as_of"])
    float_column = next(c for c, t in answer.schema.items() if t.is_float())
    changed = answer.with_columns(pl.when(pl.int_range(pl.len()) == 0)
                                  .then(pl.col(float_column) * (1 + 1e-6) + 1e-6)
                                  .otherwise(pl.col(float_column)).alias(float_column))
    with pytest.raises(AssertionError):
        _same(answer, changed, "pair_activity")
