"""Oracle products: schemas of record and the rules of spec 4.10 (each feed once under each of
its ids; history in publish order, inside its window and its market's hours)."""

import pandera.polars as pa
import polars as pl

from checks.schemas.product import Product
from core.market_hours import MarketHours
from sources.contract import OracleUpdate

HEX_ID = r"^[0-9a-f]{64}$"


class OracleFeedRow(Product):
    """One price feed: its own id, its compatible id when it has one, and its attributes."""

    feed_id: str = pa.Field(str_matches=HEX_ID)
    compatible_id: str | None = pa.Field(nullable=True, str_matches=HEX_ID)
    symbol: str
    asset_type: str
    schedule: str
    expo: int = pa.Field(le=0, ge=-18)

    class Config:
        unique = ["feed_id"]

    @pa.dataframe_check

    @classmethod
    def every_id_names_one_feed(cls, data) -> pl.LazyFrame:
        """No id, own or compatible, names two feeds: a lookup by either finds exactly one."""
        ids = pl.concat([data.lazyframe.select(id="feed_id"),
                         data.lazyframe.select(id="compatible_id").drop_nulls()])
        return ids.select(pl.col("id").is_unique().all())

    @pa.dataframe_check

    @classmethod
    def schedules_parse(cls, data) -> pl.LazyFrame:
        """Every schedule names a zone and seven days the edge can answer market hours from."""
        ok = []
        for schedule in data.lazyframe.select("schedule").collect()["schedule"]:
            try:
                MarketHours(schedule).is_open(0.0)
                ok.append(True)
            except (ValueError, KeyError, IndexError):
                ok.append(False)
        return pl.LazyFrame({"ok": ok}, schema={"ok": pl.Boolean})


class OracleHistoryRow(OracleUpdate):
    """One update of the history window, in the feed's integer units: the lake's update record
    and its rules, in publish order."""

    class Config:
        strict = False
        unique = ["feed_id", "publish_time"]

    @pa.dataframe_check

    @classmethod
    def in_publish_order(cls, data) -> pl.LazyFrame:
        """Each feed's rows run in publish order with rising slots (a Chainlink update's slot
        is the block of the batch that read its round: rounds read together share it)."""
        earlier = pl.col("publish_time").shift(1).over("feed_id")
        slot_before = pl.col("slot").shift(1).over("feed_id")
        rising = (slot_before < pl.col("slot")) | (
            (slot_before == pl.col("slot")) & (pl.col("source") == "chainlink"))
        return data.lazyframe.select(earlier.is_null() | (
            (earlier < pl.col("publish_time")) & rising))


def history_outside_market_hours(feeds: pl.DataFrame, history: pl.DataFrame) -> pl.DataFrame:
    """Updates published while their feed's market was closed (none is the rule)."""
    out = []
    for feed_id, schedule in feeds.select("feed_id", "schedule").iter_rows():
        rows = history.filter(pl.col("feed_id") == feed_id)
        if rows.is_empty():
            continue
        opened = MarketHours(schedule).open_mask(rows["publish_time"].to_numpy().astype(float))
        out.append(rows.filter(pl.Series(~opened)))
    return pl.concat(out) if out else history.clear()


def history_off_feed(feeds: pl.DataFrame, history: pl.DataFrame) -> pl.DataFrame:
    """Updates of feeds the catalog does not have, or in another exponent than the feed's."""
    return history.join(feeds.select("feed_id", feed_expo="expo"), on="feed_id", how="left") \
        .filter(pl.col("feed_expo").is_null() | (pl.col("feed_expo") != pl.col("expo")))


# The lake's writers that are the simulator (its history and its live market).
SIMULATED_WRITERS = ("simulator", "live")


def simulated_on_a_real_lake(writer: str | None, updates: pl.LazyFrame) -> pl.DataFrame:
    """Updates of the simulator's price process in a lake a real chain's follower writes (any
    other writer): a real lake's USD figures come from real prices only."""
    if writer is None or writer in SIMULATED_WRITERS:
        return pl.DataFrame(schema={"feed_id": pl.String, "publish_time": pl.Int64,
                                    "source": pl.String})
    return (updates.filter(pl.col("source") == "simulator")
            .select("feed_id", "publish_time", "source").collect())
