"""A real chain's prices for its batches: the quote tokens' feeds (aggregators, pegs, Hermes
feeds) and their updates, and the prices derived through the chain's pools (docs/ingest.md,
"Prices"). Never the simulator's price process."""

from datetime import datetime

import polars as pl

from sources.evm.config import IngestConfig
from sources.evm.derived import Derivation, Prices, derived_feed_id
from sources.evm.discovery import Known
from sources.evm.prices import PriceSources
from sources.evm.rpc import Rpc
from sources.hermes import Hermes
from sources.lake import LakeWriter, table_frame


class Pricing:
    """Prices one chain's batches from its quote tokens' sources and its pools."""

    def __init__(self, chain_id: int, config: IngestConfig, hermes: Hermes | None) -> None:
        self.chain_id, self.hermes = chain_id, hermes
        self.sources = PriceSources(chain_id, config.quotes)
        self.feeds = config.feeds(chain_id)
        # The feeds whose updates are the chain's own (read with its blocks, rolled back with
        # them): its aggregators' and its pegs'.
        self.chain_feeds = sorted(q.feed_id(chain_id) for q in config.quotes
                                  if q.hermes_id is None)
        self.derivation = Derivation(chain_id, config.chain.derive_min_liquidity_usd)
        # The aggregators' and pegs' feeds, and with the Hermes upstream's, every quote
        # token's: each asked once.
        self.own: pl.DataFrame | None = None
        self.catalog: pl.DataFrame | None = None

    def own_feeds(self, rpc: Rpc) -> pl.DataFrame:
        """The aggregators' and pegs' feeds, asked of the node once (an aggregator that is
        none is refused: ConfigError)."""
        if self.own is None:
            self.own = self.sources.feeds(rpc)
        return self.own

    def feeds_of(self, rpc: Rpc) -> pl.DataFrame:
        """The quote tokens' feeds (asked of the node and the Hermes upstream once): what their
        updates are read with."""
        if self.catalog is None:
            found = [self.own_feeds(rpc)]
            if self.hermes is not None:
                found.append(self.hermes.catalog())
            self.catalog = pl.concat(found)
        return self.catalog

    def chained_feeds(self) -> list[str]:
        """The feeds whose updates are read with the chain's blocks and rolled back with them:
        its aggregators', its pegs' and the prices derived through its pools."""
        return sorted({*self.chain_feeds, *self.derivation.expo})

    def rounds(self, rpc: Rpc, lake: LakeWriter, first: int, last: int, times: dict[int, datetime],
               first_read: int) -> pl.DataFrame:
        """The batch's price updates: the aggregators' rounds of its blocks; with the first
        block the follower reads (`first_read`), the pegs."""
        self.feeds_of(rpc)
        stored = (lake.scan("oracle_updates")
                  .filter(pl.col("feed_id").is_in(self.sources.chainlink_feeds),
                          pl.col("slot") < first)
                  .group_by("feed_id").agg(pl.col("publish_time").max()).collect())
        made = [self.sources.rounds(rpc, first, last, dict(stored.iter_rows()),
                                    {n: int(t.timestamp()) for n, t in times.items()})]
        if first <= first_read <= last:
            made.append(self.sources.pegs(int(times[first_read].timestamp()), first_read))
        return pl.concat(made)

    def derived_below(self, lake: LakeWriter, below: int, tokens: pl.DataFrame) -> None:
        """The derivation's state as the lake holds it before block `below`: each pool's
        last reserves, each derived feed's exponent and last price."""
        chain = pl.col("chain_id") == self.chain_id
        held = (lake.scan("reserves").filter(chain, pl.col("block_number") < below)
                .sort("block_number", "log_index").group_by("pair").last()
                .select("pair", "reserve0", "reserve1").collect()
                if lake.version("reserves") is not None else None)
        feeds = (lake.scan("oracle_feeds").filter(pl.col("source") == "derived")
                 .select("feed_id", "expo").collect()
                 if lake.version("oracle_feeds") is not None else None)
        # The lake's derived feeds are every chain's: this chain's are its tokens'.
        mine = {derived_feed_id(self.chain_id, t) for t in tokens["address"]}
        ours = {} if feeds is None else {f: e for f, e in feeds.iter_rows() if f in mine}
        last = (lake.scan("oracle_updates")
                .filter(pl.col("feed_id").is_in(list(ours)), pl.col("slot") < below)
                .sort("publish_time").group_by("feed_id").last()
                .select("feed_id", "publish_time", "price", "expo").collect()
                if ours else None)
        self.derivation.restart(held, ours, last)

    def derived(self, lake: LakeWriter, known: Known, syncs: pl.DataFrame,
                times: dict[int, datetime], sourced: pl.DataFrame, first: int) -> pl.DataFrame:
        """The batch's prices derived through its pools (docs/ingest.md, "Prices"): the
        sources' prices in force come from the lake and from this batch's updates; the tokens
        priced so are given their feed in `known`."""
        if syncs.is_empty():
            return table_frame("oracle_updates", [])
        self.derivation.decimals = dict(zip(known.tokens["address"], known.tokens["decimals"],
                                            strict=True))
        sources = self.feeds
        start = int(min(times.values()).timestamp())
        kept = lake.scan("oracle_updates").filter(
            pl.col("feed_id").is_in(list(sources.values())),
            # A range read again: its own updates are this batch's.
            ~(pl.col("feed_id").is_in(self.chain_feeds) & (pl.col("slot") >= first)))
        stored = pl.concat([
            kept.filter(pl.col("publish_time") < start).sort("publish_time")
            .group_by("feed_id").last().collect(),
            kept.filter(pl.col("publish_time") >= start).collect()], how="diagonal_relaxed")
        usd = Prices(pl.concat([sourced.select("feed_id", "publish_time", "price", "expo"),
                                stored.select("feed_id", "publish_time", "price", "expo")])
                     .unique(["feed_id", "publish_time"], keep="first", maintain_order=True))
        pools = {p: (t0, t1) for p, t0, t1
                 in known.pairs.select("address", "token0", "token1").iter_rows()}
        found = self.derivation.updates(
            pools, sources, syncs.sort("block_number", "log_index"),
            {n: int(t.timestamp()) for n, t in times.items()}, usd)
        known.set_feeds({t: f for t in known.tokens["address"]
                         if (f := derived_feed_id(self.chain_id, t)) in self.derivation.expo})
        return table_frame("oracle_updates", found)

    def hermes_updates(self, rpc: Rpc, priced: set[datetime],
                       watermark: datetime) -> pl.DataFrame:
        """The Hermes feeds' updates a commit at `watermark` adds: what the stream received up
        to it, and the benchmark of each second a priced block of the batch stands at that the
        stream did not cover (a backfill, or the time it was down); none the lake holds."""
        if self.hermes is None:
            return table_frame("oracle_updates", [])
        self.feeds_of(rpc)
        hermes = self.hermes
        missed = {int(t.timestamp()) for t in priced
                  if not all(hermes.covered(f, int(t.timestamp())) for f in hermes.feeds)}
        rows = hermes.at(missed) + hermes.updates(int(watermark.timestamp()))
        return table_frame("oracle_updates", rows).unique(
            ["feed_id", "publish_time"], keep="first", maintain_order=True).sort(
            "feed_id", "publish_time")

    def unheld(self, lake: LakeWriter, updates: pl.DataFrame) -> pl.DataFrame:
        """`updates` but the Hermes feeds' the lake already holds (under the writers' lock:
        another chain's follower may have written the same feed's seconds)."""
        shared = pl.col("feed_id").is_in(self.hermes.feeds if self.hermes else [])
        found = updates.filter(shared)
        if found.is_empty():
            return updates
        held = (lake.scan("oracle_updates")
                .filter(shared, pl.col("publish_time").is_between(
                    found["publish_time"].min(), found["publish_time"].max()))
                .select("feed_id", "publish_time").collect())
        return pl.concat([updates.filter(~shared),
                          found.join(held, on=["feed_id", "publish_time"], how="anti")])
