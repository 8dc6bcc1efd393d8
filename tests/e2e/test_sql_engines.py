"""Every SQL model executed, not only transpiled, on polars' SQL, on DuckDB and (`make
test-spark`) on Spark in local mode, the query transpiled by sqlglot, over the same
materialised inputs, with equal answers."""

import polars as pl
import pytest

from assets.sql_models import SqlModel, SqlModelError, load_models
from assets.warehouse import Warehouse
from tests.e2e.test_incremental import close, rows

MODELS = load_models()


def _collected(frame: pl.LazyFrame | pl.DataFrame) -> pl.DataFrame:
    return frame.collect() if isinstance(frame, pl.LazyFrame) else frame


def run_duckdb(model: SqlModel, frames) -> pl.DataFrame:
    """The model on DuckDB, its query transpiled to DuckDB's dialect by sqlglot: the same
    model on a second engine, whose answer must equal polars'."""
    import duckdb

    query = model.transpile("duckdb")
    with duckdb.connect() as db:
        for name, frame in model.inputs(frames).items():
            db.register(name, _collected(frame).to_arrow())
        try:
            return pl.from_arrow(db.sql(query).to_arrow_table())
        except duckdb.Error as err:
            raise SqlModelError(f"{model.path}: {err}") from err


def run_spark(model: SqlModel, frames, spark) -> pl.DataFrame:
    """The model on Spark (a SparkSession), its query transpiled by sqlglot: each frame a
    temporary view, the answer back as a polars frame."""
    query = model.transpile("spark")
    for name, frame in model.inputs(frames).items():
        data = _collected(frame)
        # Spark has no unsigned integers: each is widened to the next signed type.
        data = data.cast({c: (pl.Decimal(20, 0) if t == pl.UInt64 else pl.Int64)
                          for c, t in data.schema.items() if t.is_unsigned_integer()})
        spark.createDataFrame(data.to_arrow()).createOrReplaceTempView(name)
    return pl.from_arrow(spark.sql(query).toArrow())


@pytest.fixture(scope="module")
def warehouse(home) -> Warehouse:
    return Warehouse(root=str(home / "warehouse"), lake_root=str(home / "lake"))


def _same(polars_answer: pl.DataFrame, other_answer: pl.DataFrame, name: str) -> None:
    assert other_answer.columns == polars_answer.columns, name
    # DuckDB sums integers into 128-bit decimals and names UTC "Etc/UTC", Spark counts in
    # 64 bits: the same values, cast without loss (strict) to the types polars gave.
    other = other_answer.cast(dict(polars_answer.schema), strict=True)
    assert other.height == polars_answer.height, name
    for a, b in zip(rows(polars_answer), rows(other), strict=True):
        assert close(a, b), (name, a, b)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_polars_and_duckdb_agree(warehouse, name):
    model = MODELS[name]
    frames = warehouse.frames(model.tables)
    polars_answer = model.run(frames)
    assert polars_answer.height > 0, name
    _same(polars_answer, run_duckdb(model, frames), name)


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
    frames = warehouse.frames(model.tables)
    _same(model.run(frames), run_spark(model, frames, spark), name)


def test_spark_reads_epochs_and_ordered_distinct_arrays_as_postgres_means_them():
    """The two constructs a plain transpilation gets wrong on Spark are rewritten."""
    sql = MODELS["chain_records"].transpile("spark")
    assert "EXTRACT(EPOCH" not in sql and "UNIX_TIMESTAMP(n.head_block_time)" in sql
    assert "COLLECT_LIST(DISTINCT" not in sql
    assert sql.count("SORT_ARRAY(COLLECT_SET(pn.venue_name))") == 2


def test_an_engine_difference_is_caught(warehouse):
    """The comparison fails when one engine's answer differs in a single value."""
    model = MODELS["board_pairs"]
    answer = model.run(warehouse.frames(model.tables))
    float_column = next(c for c, t in answer.schema.items() if t.is_float())
    changed = answer.with_columns(pl.when(pl.int_range(pl.len()) == 0)
                                  .then(pl.col(float_column) * (1 + 1e-6) + 1e-6)
                                  .otherwise(pl.col(float_column)).alias(float_column))
    with pytest.raises(AssertionError):
        _same(answer, changed, "board_pairs")
