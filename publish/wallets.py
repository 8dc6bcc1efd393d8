"""Wallets, published: the ranking lists' queries and orderings (shared by the publisher's
pages and the edge), the wallet serving tables the edge reads (profiles, rankings, positions,
rounds, trades, chart buckets, funding) and the ranking pages per chain, window and sort."""

import functools
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

import polars as pl

from core.fingerprints import distinct, gathered, keyed, lookup, recipe
from core.vocabulary import TERMINAL_TOKEN_STATUSES, WALLET_WINDOWS, wire_time
from publish.cursor import list_scope
from publish.spans import (
    day_of,
    fingerprint,
    fingerprint_of,
    span_day,
    span_end,
    span_names,
    span_of,
    spans_of,
)
from publish.writer import (
    ListFamily,
    PagedList,
    ServingTable,
    SpannedTable,
    instant_text,
    stored,
)

WALLET_SORT_COLUMNS = {
    "total_pnl": "total_pnl_usd", "realized_pnl": "realized_pnl_usd", "volume": "volume_usd",
    "win_rate": "win_rate", "trades": "trades", "user_score": "user_score",
}
# Wallets a ranking keeps from the published pages: its head; the edge pages further.
PUBLISHED_DEPTH = 200
# A metrics record's figures and counts (spec 2.4), in the order the wire carries them.
METRIC_FIGURES = (
    "realized_pnl_usd", "unrealized_pnl_usd", "total_pnl_usd", "rated_pnl_usd",
    "gross_profit_usd", "gross_loss_usd", "invested_usd", "volume_usd", "roi", "win_rate",
    "trade_win_rate", "median_roi", "profit_factor", "avg_trade_usd")
METRIC_COUNTS = (
    "avg_hold_seconds", "trades", "winning_trades", "losing_trades", "tokens_traded",
    "closed_positions", "open_positions", "rated_positions", "excluded_transfer_only",
    "excluded_untracked", "excluded_no_outcome")


@dataclass(frozen=True)
class WalletQuery:
    """One GET /wallets query: chain, window, sort, order and every filter of spec 4.5."""

    chain_id: int
    window: str = "30d"
    sort: str = "total_pnl"
    descending: bool = True
    min_total_pnl_usd: float | None = None
    min_realized_pnl_usd: float | None = None
    min_volume_usd: float | None = None
    min_win_rate: float | None = None
    min_trades: int | None = None
    max_avg_hold_seconds: int | None = None
    min_user_score: int | None = None
    no_abuse_evidence: bool = False
    only_copy_eligible: bool = False
    exclude_bots: bool = False
    tiers: tuple[str, ...] | None = None


def wallet_scope(query: WalletQuery) -> str:
    """The fingerprint of a ranking query, carried by its cursors."""
    return list_scope(list="wallets", **asdict(query))


def wallet_order(rankings: pl.DataFrame, query: WalletQuery, min_rated: int) -> pl.Series:
    """The ranking as row numbers of `rankings` (`_row`), in its order. `exclude_bots` drops
    market makers too; sort=win_rate ranks only wallets with at least `min_rated` rated
    positions; ties go by address. Only the columns the query filters and sorts by are read,
    and the order holds 4 bytes a row, not a copy of the rows."""
    ranked = _ranked(rankings.lazy().with_row_index("_row"), query, min_rated)
    return _ordered(ranked, query, None).select("_row").collect().to_series()


def _ordered(rows: pl.LazyFrame, query: WalletQuery, head: int | None) -> pl.LazyFrame:
    """A ranking's rows in its order (its first `head` only, when given)."""
    ordered = rows.sort([WALLET_SORT_COLUMNS[query.sort], "wallet"],
                        descending=[query.descending, False], nulls_last=True)
    # A head is taken as the sort goes (a top-k), not after sorting every row.
    return ordered if head is None else ordered.head(head)


def _ranked(rankings: pl.LazyFrame, query: WalletQuery, min_rated: int) -> pl.LazyFrame:
    """The rows of a ranking's chain and window its filters keep, in no order."""
    f = pl.col
    rows = rankings.filter(f("chain_id") == query.chain_id, f("window") == query.window)
    floors = {"total_pnl_usd": query.min_total_pnl_usd,
              "realized_pnl_usd": query.min_realized_pnl_usd,
              "volume_usd": query.min_volume_usd, "win_rate": query.min_win_rate,
              "trades": query.min_trades, "user_score": query.min_user_score}
    for column, floor in floors.items():
        if floor is not None:
            rows = rows.filter(f(column) >= floor)
    if query.max_avg_hold_seconds is not None:
        rows = rows.filter(f("avg_hold_seconds") <= query.max_avg_hold_seconds)
    if query.no_abuse_evidence:
        rows = rows.filter(f("scammer_band") == "none")
    if query.only_copy_eligible:
        rows = rows.filter(f("copy_eligible"))
    if query.exclude_bots:
        rows = rows.filter(~f("type").is_in(["bot", "market_maker"]))
    if query.tiers is not None:
        rows = rows.filter(f("tier").is_in(list(query.tiers)))
    if query.sort == "win_rate":
        rows = rows.filter(f("rated_positions") >= min_rated)
    return rows


METRIC_FIELDS = ("window", *METRIC_FIGURES, *METRIC_COUNTS)


def metrics_record() -> pl.Expr:
    """A metrics record (spec 2.4) from a row of one wallet's figures in one window."""
    return pl.struct(*METRIC_FIELDS)


def ranking_items(rows: pl.DataFrame) -> pl.Series:
    """The list item (spec 2.5) of each ranking row: the wallet's JSON parts and the window's
    metrics record. Made for the rows a page shows, not stored for every wallet and window."""
    return rows.select(pl.concat_str(
        pl.lit('{"address":'), "item_address", pl.lit(',"chain":'), "item_chain",
        pl.lit(',"tier":"'), "tier", pl.lit('","type":"'), "type",
        pl.lit('","labels":'), "item_labels",
        pl.lit(',"copy_eligible":'), pl.col("copy_eligible").cast(pl.String).str.to_lowercase(),
        pl.lit(',"user_score":'), "item_user_score",
        pl.lit(',"scammer_score":'), "item_scammer_score",
        pl.lit(',"metrics":'), metrics_record().struct.json_encode(), pl.lit("}")
    ).alias("item")).to_series()


HOUR, DAY, WEEK = 3_600, 86_400, 7 * 86_400
POSITION_KEY = ("chain_id", "wallet", "token")
# What a position shows of its token's price and standing: made at serve time (`marked`).
MARK_FIELDS = ("mark_usd", "value_usd", "unrealized_usd", "total_pnl_usd", "token_score",
               "token_status", "condemned")
POSITION_FIELDS = (
    "buys", "sells", "transfers_in", "transfers_out", "bought_qty", "sold_qty", "held",
    "bought_usd", "sold_usd", "cost_in_usd", "avg_entry_price_usd", "avg_exit_price_usd",
    "open_cost_usd", "mark_usd", "value_usd", "realized_usd", "cost_closed_usd",
    "unrealized_usd", "total_pnl_usd", "realized_roi", "rounds", "is_open", "tracked",
    "basis_is_incomplete", "token_score", "token_status", "condemned")
ROUND_FIELDS = (
    "round", "is_open", "buys", "sells", "transfers_in", "transfers_out", "bought_qty",
    "sold_qty", "held", "bought_usd", "sold_usd", "cost_in_usd", "avg_entry_price_usd",
    "avg_exit_price_usd", "open_cost_usd", "realized_usd", "cost_closed_usd", "realized_roi",
    "hold_seconds", "closed_by_sell", "basis_is_incomplete")


def marked(positions: pl.DataFrame, tokens: pl.DataFrame) -> pl.DataFrame:
    """Positions as their books make them (`book_positions`) with their tokens' symbol, score
    and status, the open holding marked at the token's price (zero for a condemned token,
    whatever its score), its value, unrealised and total (`tokens`: token rows, by chain and
    address). The books mark the wallet positions product so; the edge marks the published
    positions, which carry no price, at the snapshot's token rows."""
    marks = tokens.select(token_symbol="symbol", token_price_usd="price_usd",
                          token_score="rating_score", token_status="token_status",
                          key=keyed("chain_id", "address"))
    # A token's figures are looked up by fingerprint: a join would copy every position's row.
    token = lookup(keyed("chain_id", "token"), distinct(marks["key"], "token_rows"))
    return (positions.with_columns(_mark=token)
        .with_columns(gathered(marks[c], "_mark") for c in marks.columns[:-1])
        .with_columns(
            condemned=pl.col("token_status").is_in(TERMINAL_TOKEN_STATUSES).fill_null(False),
            token_score=pl.col("token_score").fill_null(0),
            token_status=pl.col("token_status").fill_null(1))
        .with_columns(
            mark_usd=pl.when(pl.col("condemned")).then(0.0).otherwise("token_price_usd"))
        .with_columns(
            marked=~pl.col("is_open") | pl.col("mark_usd").is_not_null(),
            value_usd=pl.col("held") * pl.col("mark_usd").fill_null(0.0))
        .with_columns(
            unrealized_usd=pl.when(pl.col("tracked") & pl.col("is_open") & pl.col("marked"))
            .then(pl.col("value_usd") - pl.col("open_cost_usd")).otherwise(0.0))
        .with_columns(total_pnl_usd=pl.col("realized_usd") + pl.col("unrealized_usd"))
        .drop("token_price_usd", "_mark"))


def position_items(positions: pl.DataFrame) -> pl.Series:
    """The position records of marked positions."""
    return _token_records(positions, POSITION_FIELDS, ("first_trade_at", "last_trade_at"))


def round_items(rounds: pl.DataFrame) -> pl.Series:
    """The round records of rounds with their hold."""
    return _token_records(rounds, ROUND_FIELDS, ("opened_at", "closed_at"))


def _token_records(rows: pl.DataFrame, fields: tuple[str, ...],
                   instants: tuple[str, str]) -> pl.Series:
    """JSON records of a wallet's rows of one token each: the token, `fields`, then `instants`
    as wire times."""
    return rows.select(pl.struct(
        pl.col("token").alias("token_address"), "token_symbol", *fields,
        *(wire_time(pl.col(at)).alias(at) for at in instants)).struct.json_encode()).to_series()


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


def wallet_serving(frames: Mapping[str, pl.DataFrame], ledger: "LedgerDays",
                   with_hashes: Callable[[pl.DataFrame], pl.DataFrame],
                   booked: Callable[[pl.DataFrame], pl.DataFrame],
                   booked_rounds: Callable[[pl.DataFrame], pl.DataFrame],
                   book_columns: tuple[str, ...], labels: pl.DataFrame, as_of_s: int,
                   hashed_from: Mapping[int, str],
                   stored_as: Mapping[str, str]) -> Iterator[ServingTable | SpannedTable]:
    """Every wallet serving table, each sorted by its lookup key (`ledger`: the stored ledger a
    lake day at a time, cut where the spans and layers are, `span_cut`; `with_hashes`: ledger
    rows with their swaps' transaction hashes, for the wallet trades, which `hashed_from`
    names per span; `booked`, `booked_rounds`: the books' positions and rounds of ledger
    rows of `book_columns`, for the layers; `labels`: the lake's known entities, for addresses
    that never traded; `stored_as`: a name of the stored files of the profiles and of the
    rankings, published as stored and so not even read while unchanged, between two
    rankings); each is built only when the one before has been taken, so that a publish holds
    one table at a time, and of the ledger the days still changing and the spans it makes."""
    made_with = recipe(sys.modules[__name__])
    yield stored("wallet_profiles", lambda: frames["wallet_profiles"].select(
        "chain_id", "wallet", "tier", "type", "copy_eligible", "user_score", "rebuild_skipped",
        "deployed_usd", "cluster_id", "head"), ("chain_id", "wallet"),
        fingerprint_of(made_with, stored_as["wallet_profiles"]))
    # By wallet: a profile's metrics records are its five rows, one slice.
    yield stored("wallet_rankings", lambda: frames["wallet_rankings"],
                 ("chain_id", "wallet", "window"),
                 fingerprint_of(made_with, stored_as["wallet_rankings"]))
    # Named once for the three tables made from the ledger's spans.
    spans = ledger_spans(ledger)
    layers = Layers(ledger, spans, book_columns)
    yield wallet_positions(layers, booked)
    yield wallet_rounds(layers, booked_rounds, _symbols(frames))
    yield wallet_trades(ledger, _symbols(frames), with_hashes, hashed_from, spans)
    yield wallet_buckets(ledger, as_of_s)
    del layers, ledger, spans
    yield ServingTable("wallet_funding", frames["wallet_funding"], ("chain_id", "wallet", "ts"))
    yield ServingTable("address_labels", labels.select(
        "chain_id", "address", "kind", "name", "confidence", "token_address"),
        ("chain_id", "address", "kind"))


class LedgerDays:
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
        closed = {span: fingerprint_of(*made_with, *self.files[day])
                  for span, day in self.closed.items()}
        return {**closed, **span_names(self.recent.select(columns), self.span, *made_with)}

    def rows(self, wanted: set[Any] | None, columns: tuple[str, ...]) -> Iterator[pl.DataFrame]:
        """The `columns` of the rows of the spans in `wanted` (every span when None) a lake day
        at a time, in chain order: a closed day's rows of the wanted spans in it, then, when
        any wanted span is not closed, every row after the closed days. A span's rows are all
        in one of them; no span asked for, no rows, with the columns."""
        asked = False
        for day in self.closed_days:
            spans = [span for span, of in self.closed.items()
                     if of == day and (wanted is None or span in wanted)]
            if spans:
                asked = True
                rows = self.scan([day]).select(columns)
                yield (rows if wanted is None else rows.filter(self.span.is_in(spans))).collect()
        if wanted is None or wanted - self.closed.keys():
            yield self.recent.select(columns)
        elif not asked:
            yield self.scan([]).select(columns).collect()


def wallet_buckets(ledger: LedgerDays, as_of_s: int) -> SpannedTable:
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
        closed = {label: fingerprint_of(made_with, *ledger.files[day], str(label >= hourly_from))
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


# What a published position keeps: its books, which change only when its wallet's ledger does.
POSITION_BOOKS = (*POSITION_KEY, *(f for f in POSITION_FIELDS if f not in MARK_FIELDS),
                  "first_trade_at", "last_trade_at")


# The ledger's columns a wallet trade is made from (`swap`: where its hash is read).
TRADE_INPUTS = ("chain_id", "wallet", "block_number", "log_index", "seq", "ts", "swap",
                "tx_hash", "token", "pair", "side", "qty", "price_usd", "notional_usd",
                "fee_usd", "fee_is_estimated")


# What names a span of the ledger: the columns the trades and the positions' books (chain,
# wallet, token, time, side, quantity, notional and mark) are made from; the rest, the books'
# running figures, follow from these. Not `swap`: a swap's place among the lake's swaps moves
# as a live day's swaps arrive, and what the trades take from there is named by the lake's
# swaps (`hashed_from`).
LEDGER_NAMED = (*(c for c in TRADE_INPUTS if c != "swap"), "mark_usd")


def ledger_spans(ledger: LedgerDays) -> dict[int, str]:
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

    def __init__(self, ledger: LedgerDays, spans: Mapping[int, str],
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
        (its positions' rows are the most a publish holds; the files go in chain order, so a
        chain's read passes over the others' row groups), the watermark's day's in one read
        (one part: every part is another search for the edge)."""
        if label in self.ledger.closed_days:
            days = [day for day in self.ledger.files if day <= label]
            chains = (self.ledger.scan([label]).select("chain_id", "position").unique()
                      .collect().partition_by("chain_id", as_dict=True))
            for (chain,), positions in sorted(chains.items()):
                yield self.ledger.scan(days).select(self.columns).filter(
                    pl.col("chain_id") == chain,
                    pl.col("position").is_in(positions["position"].implode())).collect()
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


ROUND_KEY = (*POSITION_KEY, "round")
# What a published round keeps (its hold is made at serve time: an open one's runs on).
ROUND_BOOKS = (*ROUND_KEY, "token_symbol", "opened_at", "closed_at",
               *(f for f in ROUND_FIELDS if f not in ("round", "hold_seconds")))


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


def wallet_trades(ledger: LedgerDays, symbols: pl.DataFrame,
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


def _symbols(frames: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    return frames["token_rows"].select("chain_id", token="address", token_symbol="symbol")


def ranked_at(rankings: pl.DataFrame) -> str | None:
    """The watermark rankings rank as of, as a snapshot names an instant (None for rankings
    stored without it, or none)."""
    at = rankings["as_of"].first() if "as_of" in rankings.columns else None
    return instant_text(at) if isinstance(at, datetime) else None


def ranking_lists(rankings: Callable[[], pl.DataFrame], records: pl.DataFrame, min_rated: int,
                  stored_as: str) -> ListFamily:
    """Every ranking page (`ranking_pages`) as one family of lists named by the stored
    rankings' files (`stored_as`), the chains listed and the code: between two rankings, a
    publish carries the pages the previous snapshot published and reads no ranking row."""
    chains = records.select("chain_id", "slug").sort("chain_id")
    return ListFamily("wallets", fingerprint_of(
        recipe(sys.modules[__name__]), stored_as, fingerprint(chains), str(min_rated)),
        lambda: ranking_pages(rankings(), chains, min_rated))


def ranking_pages(rankings: pl.DataFrame, records: pl.DataFrame,
                  min_rated: int) -> list[PagedList]:
    """The head of every default ranking (no filter, descending) per chain, window and sort,
    for CDN consumers; their last cursor continues on the edge. Each index says the watermark
    the ranking is as of (`ranked_as_of`): the rankings' own cadence's, not the snapshot's."""
    out = []
    at = ranked_at(rankings)
    envelope = {} if at is None else {"ranked_as_of": at}
    # Each ranking reads its chain's window only: split once, not filtered from every row for
    # each of its sorts.
    groups = rankings.partition_by("chain_id", "window", as_dict=True)
    for chain_id, slug in records.select("chain_id", "slug").sort("chain_id").iter_rows():
        for window in WALLET_WINDOWS:
            ranked = groups.get((chain_id, window), rankings.clear())
            for sort in WALLET_SORT_COLUMNS:
                query = WalletQuery(chain_id=chain_id, window=window, sort=sort)
                rows = _ranked(ranked.lazy(), query, min_rated).collect()
                head = _ordered(rows.lazy(), query, PUBLISHED_DEPTH).collect()
                out.append(PagedList("wallets", head.select("chain_id", "wallet").with_columns(
                    ranking_items(head)), ("chain_id", "wallet"), wallet_scope(query),
                    f"wallets/{slug}/{window}/{sort}", False, envelope, backward=False,
                    total=rows.height))
    return out
