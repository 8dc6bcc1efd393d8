"""The wallet serving tables a snapshot publishes (profiles, rankings, positions, rounds,
trades, chart buckets, funding, labels), made from the stored wallet ledger with the books'
own folds: a lake day, a span and a layer at a time, so that a publish makes only what changed."""

import functools
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import polars as pl

from assets.snapshot.trades import DaySwaps
from assets.wallets.books import pieces_of
from assets.wallets.positions import BOOK_INPUTS, assemble_rounds, book_positions
from core.fingerprints import keyed, recipe
from core.vocabulary import SWAP_SIDES
from figures.ledger import with_swap_hashes
from publish.spans import (
    day_of,
    files_named,
    fingerprint_of,
    span_day,
    span_end,
    span_names,
    span_of,
    spans_of,
)
from publish.wallets import POSITION_BOOKS, POSITION_KEY, ROUND_BOOKS, ROUND_KEY
from publish.writer import ServingTable, SpannedTable, stored

HOUR, DAY, WEEK = 3_600, 86_400, 7 * 86_400
# The chart's resolutions and their buckets' lengths.
BUCKET_SECONDS = {"1h": HOUR, "1d": DAY}
# What a bucket is summed from: a wallet's sells.
SELL_INPUTS = ("chain_id", "wallet", "ts", "realized_usd", "cost_closed_usd")


def bucket_sells(ledger: pl.DataFrame, as_of_s: int) -> dict[str, pl.DataFrame]:
    """The sells each resolution's buckets are summed from: per UTC day for all time, per hour
    from the UTC day a week before the watermark (the chart's hourly windows reach no further;
    cut at a day, so that the buckets kept change only once a day)."""
    sells = ledger.filter(pl.col("side") == "sell").select(SELL_INPUTS)
    return {"1h": sells.filter(pl.col("ts") >= span_day(as_of_s - WEEK)), "1d": sells}


def _bucket(resolution: str) -> pl.Expr:
    seconds = BUCKET_SECONDS[resolution]
    return pl.col("ts") // seconds * seconds


def _summed(sells: pl.DataFrame, resolution: str) -> pl.DataFrame:
    return (sells.group_by("chain_id", "wallet", bucket=_bucket(resolution))
            .agg(realized_usd=pl.col("realized_usd").sum(),
                 cost_usd=pl.col("cost_closed_usd").sum(),
                 wins=(pl.col("realized_usd") > 0).sum().cast(pl.Int64),
                 losses=(pl.col("realized_usd") < 0).sum().cast(pl.Int64))
            .with_columns(resolution=pl.lit(resolution)))


def wallet_serving(frames: Mapping[str, pl.DataFrame], ledger: "StoredLedger",
                   swaps: DaySwaps, labels: pl.DataFrame, as_of_s: int,
                   hashed_from: Mapping[int, str],
                   stored_as: Mapping[str, str]) -> Iterator[ServingTable | SpannedTable]:
    """Every wallet serving table, each sorted by its lookup key (`ledger`: the stored ledger a
    lake day at a time, cut where the spans and layers are, `span_cut`; `swaps`: the lake's
    swaps a day at a time, whose transaction hashes the wallet trades take, which
    `hashed_from` names per span; `labels`: the lake's known entities, for addresses that
    never traded; `stored_as`: a name of the stored files of the profiles and of the
    rankings, published as stored and so not even read while unchanged, between two
    rankings); each is built only when the one before has been taken, so that a publish
    holds one table at a time, and of the ledger the days still changing and the spans it
    makes."""
    made_with = recipe(sys.modules[__name__])
    yield stored("wallet_profiles", lambda: frames["wallet_profiles"].select(
        "chain_id", "wallet", "tier", "type", "copy_eligible", "user_score", "rebuild_skipped",
        "deployed_usd", "cluster_id", "head"), ("chain_id", "wallet"),
        fingerprint_of(made_with, stored_as["wallet_profiles"]))
    # By wallet: a profile's metrics records are its five rows, one slice.
    yield stored("wallet_rankings", lambda: frames["wallet_rankings"],
                 ("chain_id", "wallet", "window"),
                 fingerprint_of(made_with, stored_as["wallet_rankings"]))
    # A token's cohorts, and each cohort's wallets: what a cohort filter of its traders keeps.
    yield stored("token_cohorts", lambda: frames["token_cohorts"], ("chain_id", "token"),
                 fingerprint_of(made_with, stored_as["token_cohorts"]))
    yield stored("cohort_members", lambda: frames["cohort_members"].select(
        "chain_id", "token", "cohort", "wallet"), ("chain_id", "token", "cohort", "wallet"),
        fingerprint_of(made_with, stored_as["cohort_members"]))
    # Named once for the three tables made from the ledger's spans.
    spans = ledger_spans(ledger)
    layers = Layers(ledger, spans, BOOK_INPUTS)
    yield wallet_positions(layers, book_positions)
    yield wallet_rounds(layers, lambda rows: assemble_rounds(rows, as_of_s), _symbols(frames))
    yield wallet_trades(ledger, _symbols(frames), lambda rows: with_swap_hashes(
        rows, swaps.covering(rows.filter(pl.col("side").is_in(SWAP_SIDES))["ts"],
                             _one_chain(rows))), hashed_from, spans)
    yield wallet_buckets(ledger, as_of_s)
    del layers, ledger, spans
    yield ServingTable("wallet_funding", frames["wallet_funding"], ("chain_id", "wallet", "ts"))
    yield ServingTable("address_labels", labels.select(
        "chain_id", "address", "kind", "name", "confidence", "token_address"),
        ("chain_id", "address", "kind"))


class StoredLedger:
    """The stored wallet ledger a lake day at a time (`files`: each lake day's files, by the
    day's first second, a lake day's files holding its own rows and those of the days without
    swaps before it; `read`: files, lazily, their rows in order), cut at `cut_s`
    (`span_cut`). The days before the cut's are closed: each of their spans (a UTC day) is
    named by its lake day's files (a write never reuses a file's name) and read only when asked
    for. The rest, where spans still change, is read once and named by its rows."""

    def __init__(self, files: Mapping[int, list[str]],
                 read: Callable[[list[str]], pl.LazyFrame], cut_s: int) -> None:
        if not files:
            raise ValueError("the wallet ledger has no days: materialise its partitions")
        self.files = dict(sorted(files.items()))
        self.read, self.cut_s = read, cut_s
        self.span = span_of(cut_s)
        today = span_day(cut_s)
        self.closed_days = [day for day in self.files if day < today]
        self.recent_days = [day for day in self.files if day >= today]

    def scan(self, days: list[int] | None = None) -> pl.LazyFrame:
        """The rows of some lake days (every day when None), lazily, in chain order."""
        chosen = list(self.files) if days is None else days
        if not chosen:
            return self.read(next(iter(self.files.values()))).head(0)
        return self.read([path for day in chosen for path in self.files[day]])

    @functools.cached_property
    def recent(self) -> pl.DataFrame:
        """The rows of the cut's day and after, read once."""
        return self.scan(self.recent_days).collect()

    @functools.cached_property
    def closed(self) -> dict[int, int]:
        """Each span of the closed days (a UTC day) and the lake day whose files hold it."""
        found: dict[int, int] = {}
        for day in self.closed_days:
            spans = self.scan([day]).select(
                (day_of() * DAY).unique().alias("span")).collect().to_series()
            found.update(dict.fromkeys(spans.to_list(), day))
        return found

    def names(self, columns: tuple[str, ...], *made_with: str) -> dict[int, str]:
        """A name for each span (`span_of`) of the ledger's `columns` and `made_with` (what else
        its rows are made from): a closed one's its lake day's files, the others' their rows."""
        closed = {span: fingerprint_of(*made_with, files_named(*self.files[day]))
                  for span, day in self.closed.items()}
        return {**closed, **span_names(self.recent.select(columns), self.span, *made_with)}

    def rows(self, wanted: set[Any] | None, columns: tuple[str, ...]) -> Iterator[pl.DataFrame]:
        """The `columns` of the rows of the spans in `wanted` (every span when None) in chain
        order: a closed day's rows of the wanted spans in it a chain at a time (its files go
        in chain order: a chain's read passes over the others' row groups), so that what a
        publish holds follows a chain's day, then, when any wanted span is not closed, every
        row after the closed days. A span's rows are all in one day; no span asked for, no
        rows, with the columns."""
        asked = False
        for day in self.closed_days:
            spans = [span for span, of in self.closed.items()
                     if of == day and (wanted is None or span in wanted)]
            if spans:
                asked = True
                rows = self.scan([day])
                if wanted is not None:
                    rows = rows.filter(self.span.is_in(spans))
                chains = self.scan([day]).select(pl.col("chain_id").unique()).collect()
                for chain in sorted(chains["chain_id"]) or [None]:
                    yield (rows if chain is None else rows.filter(pl.col("chain_id") == chain)
                           ).select(columns).collect()
        if wanted is None or wanted - self.closed.keys():
            yield self.recent.select(columns)
        elif not asked:
            yield self.scan([]).select(columns).collect()


def wallet_buckets(ledger: StoredLedger, as_of_s: int) -> SpannedTable:
    """The chart's buckets in spans by their last second (`span_of`): realised profit, the
    cost basis it closed, wins and losses per wallet per bucket of each resolution, summed from
    `bucket_sells`. A bucket that ended before the watermark's hour no longer changes, and the
    day's and the hour's buckets still filling are in the hour's span. A closed day's span
    (its buckets end within it) is named by its lake day's files and whether it has hourly
    buckets, the others by the sells summed into their buckets; only the spans whose name
    changed are summed."""
    made_with = recipe(sys.modules[__name__])
    hourly_from = span_day(as_of_s - WEEK)
    columns = ("side", *SELL_INPUTS)

    def span(resolution: str) -> pl.Expr:
        return span_of(ledger.cut_s, _bucket(resolution) + BUCKET_SECONDS[resolution] - 1)

    def inputs() -> dict[Any, str]:
        sells = bucket_sells(ledger.recent.select(columns), as_of_s)
        names = [span_names(rows, span(resolution), resolution, made_with)
                 for resolution, rows in sells.items()]
        closed = {label: fingerprint_of(made_with, files_named(*ledger.files[day]),
                                        str(label >= hourly_from))
                  for label, day in ledger.closed.items()}
        return {**closed, **{label: fingerprint_of(*(name.get(label, "") for name in names))
                             for label in set().union(*names)}}

    def pieces(wanted: set[Any] | None) -> Iterator[tuple[Any, pl.DataFrame]]:
        ends = pl.col("bucket") + pl.col("resolution").replace_strict(BUCKET_SECONDS,
                                                                    return_dtype=pl.Int64) - 1
        # A closed day's buckets are summed from its own sells: a lake day at a time.
        for day in ledger.rows(wanted, columns):
            sells = bucket_sells(day, as_of_s)
            made = pl.concat([_summed(rows if wanted is None else rows.filter(
                span(resolution).is_in(list(wanted))), resolution)
                for resolution, rows in sells.items()])
            yield from spans_of(made, span_of(ledger.cut_s, ends))

    return SpannedTable("wallet_buckets", pieces,
                        ("chain_id", "wallet", "resolution", "bucket"), inputs)


# The ledger's columns a wallet trade is made from (a swap's hash is read from the lake by its
# event).
TRADE_INPUTS = ("chain_id", "wallet", "block_number", "log_index", "seq", "ts", "tx_hash",
                "token", "pair", "side", "qty", "price_usd", "notional_usd", "fee_usd",
                "fee_is_estimated")


# What names a span of the ledger: the columns the trades and the positions' books (chain,
# wallet, token, time, side, quantity, notional and mark) are made from; the rest, the books'
# running figures, follow from these. What the trades take from the lake (a swap's hash) is
# named by the lake's swaps (`hashed_from`).
LEDGER_NAMED = (*TRADE_INPUTS, "mark_usd")


def ledger_spans(ledger: StoredLedger) -> dict[int, str]:
    """A name for each span (`span_of`) of the ledger's rows, and this code's."""
    return ledger.names(LEDGER_NAMED, recipe(sys.modules[__name__]))


class Layers:
    """The ledger's layers, for state kept as of each layer's end: one per closed lake day (its
    files' spans: its UTC day, and the days without swaps before it), then one per span of the
    rest (`span_of`: the watermark's day before its hour, the hour). A layer's state is that of
    the positions with a ledger row in it, made from their rows (of `columns`) before its end.
    A layer is named by its spans' names and every earlier span's (`spans`: `ledger_spans`),
    so that a refresh makes the hour's layer, the hour's turn the day's, and the day's turn
    yesterday's: the closed days before keep theirs."""

    def __init__(self, ledger: StoredLedger, spans: Mapping[int, str],
                 columns: tuple[str, ...]) -> None:
        self.ledger, self.spans, self.columns = ledger, spans, columns
        self.hour = ledger.cut_s - ledger.cut_s % HOUR
        self.layer = {span: ledger.closed.get(span, span) for span in spans}
        self.labels = sorted(set(self.layer.values()))

    @functools.cached_property
    def names(self) -> dict[int, str]:
        """Each layer's name: its spans' with every earlier span's, in order."""
        names: dict[int, str] = {}
        running: list[str] = []
        for span in sorted(self.spans):
            running.append(self.spans[span])
            names[self.layer[span]] = fingerprint_of(*running)
        return names

    def empty(self) -> pl.DataFrame:
        """No ledger rows, with the columns."""
        return self.ledger.scan([]).select(self.columns).collect()

    def rows(self, label: int) -> Iterator[pl.DataFrame]:
        """Every ledger row, before the layer's end, of the positions with a row in it, in
        filtered reads of the lake days before the end: a closed lake day's a chain at a time
        (the files go in chain order, so a chain's read passes over the others' row groups),
        a chain of more such rows than a piece (`pieces_of`) in pieces of its positions, each
        read alone, so that what a publish holds follows the piece, not the chain's history;
        the watermark's day's in one read (one part: every part is another search for the
        edge)."""
        if label in self.ledger.closed_days:
            days = [day for day in self.ledger.files if day <= label]
            chains = (self.ledger.scan([label]).select("chain_id", "position").unique()
                      .collect().partition_by("chain_id", as_dict=True))
            for (chain,), positions in sorted(chains.items()):
                of_chain = self.ledger.scan(days).filter(
                    pl.col("chain_id") == chain,
                    pl.col("position").is_in(positions["position"].implode()))
                pieces = pieces_of(of_chain.select(pl.len()).collect().item())
                for piece in range(pieces):
                    chosen = of_chain if pieces == 1 else of_chain.filter(
                        pl.col("position") % pieces == piece)
                    yield chosen.select(self.columns).collect()
            return
        recent = self.ledger.recent
        touched = recent.filter(recent.select(self.ledger.span == label).to_series())["position"]
        end = self.end(label)
        rows = self.ledger.scan().select(self.columns).filter(
            pl.col("position").is_in(touched.unique().implode()))
        yield (rows if end is None else rows.filter(pl.col("ts") < end)).collect()

    def end(self, label: int) -> int | None:
        """The first second after a layer (None for the watermark's hour: it runs on)."""
        return span_end(label, self.ledger.cut_s)

    def start(self, label: int) -> int | None:
        """The first second of a layer: the end of the one before (None for the first)."""
        at = self.labels.index(label)
        return self.end(self.labels[at - 1]) if at else None

    def open_label(self, label: int) -> int:
        """The label of what stays open at a layer's end: the last second before it (the hour's
        last second for the watermark's hour), so that by label every state comes after the
        layers it follows and before those it precedes."""
        end = self.end(label)
        return (self.hour + HOUR if end is None else end) - 1


def wallet_positions(layers: Layers,
                     booked: Callable[[pl.DataFrame], pl.DataFrame]) -> SpannedTable:
    """The positions' books in layers (`Layers`): a layer holds every position with a ledger
    row in it, as of the layer's end (`booked`: the books' positions of the ledger rows of
    whole positions); a position is its newest layer's row, marked at serve time (`marked`).
    Each layer is named by its rows and every earlier layer's, so a refresh makes only the
    watermark's hour, as a rule, and shares the rest."""
    def pieces(wanted: set[Any] | None) -> Iterator[tuple[Any, pl.DataFrame]]:
        if not layers.labels:
            yield None, booked(layers.empty()).select(POSITION_BOOKS)
        for label in layers.labels:
            if wanted is None or label in wanted:
                yield from ((label, booked(rows).select(POSITION_BOOKS))
                            for rows in layers.rows(label))

    return SpannedTable("wallet_positions", pieces, POSITION_KEY, lambda: layers.names)


def wallet_rounds(layers: Layers, booked: Callable[[pl.DataFrame], pl.DataFrame],
                  symbols: pl.DataFrame) -> SpannedTable:
    """The rounds, folded from the ledger (`booked`: the books' rounds of ledger rows) a layer
    at a time (`Layers`): of the positions with a ledger row in a layer, the rounds closed in
    it, labelled as the layer is (a closed round never changes again), and those still open at
    its end, labelled by its last second (`Layers.open_label`), both named as the layer is.
    Labels order them by the instant they are as of, so that a round is its last part's row
    (as the edge reads it), and a refresh makes the watermark's hour, as a rule, and shares
    the rest."""
    made_with = recipe(sys.modules[__name__])

    def named(rounds: pl.DataFrame) -> pl.DataFrame:
        return rounds.join(symbols, on=["chain_id", "token"], how="left",
                           maintain_order="left").select(ROUND_BOOKS)

    def inputs() -> dict[Any, str]:
        return {at: fingerprint_of(made_with, kind, name)
                for label, name in layers.names.items()
                for kind, at in (("closed", label), ("open", layers.open_label(label)))}

    def pieces(wanted: set[Any] | None) -> Iterator[tuple[Any, pl.DataFrame]]:
        made = False
        for label in layers.labels:
            still = layers.open_label(label)
            if wanted is not None and not {label, still} & wanted:
                continue
            made = True
            at = pl.col("closed_at")
            begin, end = layers.start(label), layers.end(label)
            for rows in layers.rows(label):
                rounds = named(booked(rows))
                if wanted is None or label in wanted:
                    yield label, rounds.filter(
                        at.is_not_null() if begin is None else at >= begin,
                        pl.lit(True) if end is None else at < end)
                if wanted is None or still in wanted:
                    yield still, rounds.filter(at.is_null())
        if not made:
            yield None, named(booked(layers.empty()))

    return SpannedTable("wallet_rounds", pieces, ROUND_KEY, inputs)


def wallet_trades(ledger: StoredLedger, symbols: pl.DataFrame,
                  with_hashes: Callable[[pl.DataFrame], pl.DataFrame],
                  hashed_from: Mapping[int, str], spans: Mapping[int, str]) -> SpannedTable:
    """The wallet trades in spans (`span_of`: the UTC days, the hour of the cut apart), each
    span named by its ledger rows (`spans`: `ledger_spans`), the symbols of its tokens, the
    lake's swaps of the span it takes hashes from (`hashed_from`, by span label) and this
    code: only the spans whose name changed are made (their symbols looked up and
    hashes read in one pass), and of those a part whose rows came out as before is the
    previous snapshot's, not written again."""
    span = ledger.span

    def inputs() -> dict[Any, str]:
        # A span's symbols are its own tokens': a new token elsewhere leaves its name as it is.
        tokens = (pl.concat([ledger.scan(ledger.closed_days), ledger.recent.lazy()])
                  .select(span.alias("_span"), key=keyed("chain_id", "token")).unique()
                  .join(symbols.lazy().select("token_symbol", key=keyed("chain_id", "token")),
                        on="key", how="left").collect())
        named = span_names(tokens.sort("_span", "key"), pl.col("_span"))
        return {label: fingerprint_of(name, named.get(label, ""),
                                      hashed_from.get(label, ""))
                for label, name in spans.items()}

    def pieces(wanted: set[Any] | None) -> Iterator[tuple[Any, pl.DataFrame]]:
        # Of the columns the trades are made from only: the rest (a mark at the watermark, the
        # books' running figures) change at every refresh. A lake day at a time.
        for rows in ledger.rows(wanted, TRADE_INPUTS):
            if wanted is not None:
                rows = rows.filter(span.is_in(list(wanted)))
            made = with_hashes(rows.join(symbols, on=["chain_id", "token"], how="left",
                                         maintain_order="left")).select(
                "chain_id", "wallet", "block_number", "log_index", "seq", "ts", "tx_hash",
                "token", "token_symbol", "pair", "side", "qty", "price_usd", "notional_usd",
                "fee_usd", "fee_is_estimated")
            yield from spans_of(made, span)

    return SpannedTable("wallet_trades", pieces,
                        ("chain_id", "wallet", "block_number", "log_index", "seq"), inputs)


def _one_chain(rows: pl.DataFrame) -> int | None:
    """The chain of rows of one chain (a closed day's, `StoredLedger.rows`), else None."""
    chains = rows["chain_id"].unique()
    return chains.item() if len(chains) == 1 else None


def _symbols(frames: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    return frames["token_rows"].select("chain_id", token="address", token_symbol="symbol")
