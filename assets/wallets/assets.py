"""Wallet products: the accounted ledger with its folds (positions, rounds, the metrics records
per window), funding and profiles."""

import contextlib
from collections.abc import Callable, Iterator
from datetime import timedelta

import dagster as dg
import polars as pl

from assets.checks import checked_by_day, day_check_spec, product_asset, schema_check_spec
from assets.days import DAYS, Segment, segments
from assets.domains import HEAVY_TAG, keys
from assets.progress import progress
from assets.tables import streamed
from assets.wallets.books import FOLDS, BooksRun, ahead
from assets.wallets.cohorts import (
    LEDGER_COLUMNS,
    assemble_cohorts,
    assemble_members,
    fold_first_buys,
    launches,
    supplies,
    token_wallets,
    window_flows,
)
from assets.wallets.days import LEDGER_INPUTS, LedgerDays, stored_books
from assets.wallets.funding import assemble_funding
from assets.wallets.profiles import RANKING_INPUTS, assemble_profiles, assemble_rankings
from assets.warehouse import Warehouse, materialized
from core.vocabulary import PAIR_WINDOWS
from figures.ledger import (
    account_onto,
    books_after,
    token_marks,
    touched_positions,
    wallet_events,
)

GROUP = "wallets"
LEDGER_PRODUCTS = ["wallet_ledger", "wallet_book_states", "token_marks"]
# The dated lake tables the ledger is made from (the legs' prices from the oracle's updates):
# their new rows say the hour a refresh accounts the day again from.
LEDGER_TABLES = ("swaps", "transfers", "liquidity_events", "oracle_updates")
# What moves with prices and with time alone, every wallet's at once, and the books only they
# read (the served positions and rounds are the snapshot's, folded from the ledger, marked as
# they are read): ranked on their own cadence (`pipelines.schedules`), not at every refresh.
RANKED = ("wallet_positions", "wallet_rounds", "wallet_traits", "wallet_windows",
          "wallet_profiles", "wallet_rankings", "cohort_members", "token_cohorts")


def _spec(name: str, deps: tuple[str, ...], description: str) -> dg.AssetSpec:
    return dg.AssetSpec([GROUP, name], group_name=GROUP, deps=keys(*deps),
                        description=description)


@dg.multi_asset(
    name="wallet_days",
    specs=[
        _spec("wallet_ledger", (*LEDGER_INPUTS, "as_of"),
              "Every swap and bare token movement of every wallet in chain order, with "
              "average-cost accounting: held, cost basis, realised profit, the cost a sell "
              "closed, and rounds; a file per lake day, accounted from the books at the day's "
              "start."),
        _spec("wallet_book_states", (*LEDGER_INPUTS, "as_of"),
              "The books at the end of each lake day of every position the day touched (net, "
              "lowest and incoming quantities, holding, cost, the round's running cost and "
              "start, rounds closed): a position's latest is what the next day's ledger is "
              "accounted from."),
        _spec("token_marks", (*LEDGER_INPUTS, "as_of"),
              "Every token's last priced swap price at the end of each lake day: what the "
              "next day's movements are charged at before a swap of theirs."),
    ],
    check_specs=[day_check_spec(name)
                 for name in ("wallet_ledger", "wallet_book_states", "token_marks")],
    partitions_def=DAYS, backfill_policy=dg.BackfillPolicy.single_run(),
    op_tags={HEAVY_TAG: "true"})
def wallet_days(context: dg.AssetExecutionContext, warehouse: Warehouse):
    """The ledger a lake day at a time, in segments of hours, each accounted from the books
    and marks the segments before left (stored with them), so a refresh accounts the hours
    that changed, not the week nor the day; a day whose days before were not made fails,
    naming them. A segment's events are read (they need the marks of the one before only)
    while the one before is accounted."""
    days = LedgerDays(warehouse)
    run = list(segments(warehouse, LEDGER_PRODUCTS, sorted(context.partition_keys),
                        LEDGER_TABLES, carried=True))
    stored, marks = days.carried(run[0][0])
    # The books of the positions the run's segments touched, as they left them.
    books: pl.DataFrame | None = None

    def events() -> Iterator[tuple[Segment, pl.DataFrame, pl.DataFrame]]:
        """Each segment's events and the marks at its end."""
        carried = marks
        for segment, _ in run:
            found = wallet_events(days.inputs(segment), days.as_of, carried, days.mints)
            carried = token_marks(found, carried)
            yield segment, found, carried

    with contextlib.closing(ahead(events())) as coming:
        def made(segment: Segment) -> dict[str, pl.DataFrame]:
            nonlocal books
            read, found, marks_after = next(coming)
            assert read == segment  # both go through the run's segments in order
            before = stored_books(stored, touched_positions(found))
            ledger, closing = account_onto(
                found, before if books is None else books_after(before, books))
            books = books_after(books, closing)
            return {"wallet_ledger": ledger.drop("slot"), "wallet_book_states": closing,
                    "token_marks": marks_after}

        yield from checked_by_day(context, warehouse, run, made)


@dg.multi_asset(
    name="wallet_books",
    specs=[
        _spec("wallet_positions", ("wallet_ledger", "token_rows"),
              "One row per wallet and token it swapped, every round averaged together, marked "
              "now."),
        _spec("wallet_rounds", ("wallet_ledger", "as_of"),
              "One row per round: from the first unit in to the last unit out of a position."),
        _spec("wallet_traits", ("wallet_ledger", "pair_tokens"),
              "What each wallet's own rows say about it: first seen and last active, peak "
              "capital, swaps by side, immediate round trips, entries and snipes, swaps in "
              "established pools, pools traded and hours of day: what the classifiers read."),
        _spec("wallet_windows", ("wallet_ledger", "token_rows", "as_of"),
              "Each wallet's metrics record per window ending at the lake's watermark (spec "
              "2.4): realised, unrealised, total and rated PNL, gross profit and loss, "
              "invested, volume, ROI, win rate with the rated-sample rule, trade win rate, "
              "median ROI, profit factor, average trade and hold, trade and position counts, "
              "and the three exclusion counts."),
    ],
    check_specs=[schema_check_spec(name, *keys(name)) for name in FOLDS],
    can_subset=True)
def wallet_books(context: dg.AssetExecutionContext, warehouse: Warehouse):
    """The stored ledger's folds (positions, rounds, traits, window records), each
    materialisable alone, made a chain at a time, or a big chain in pieces of its wallets, each
    read and folded in a worker process: a piece of the ledger is read while the one before is
    folded, and each fold's product is
    written a piece at a time by its own writer, so a run holds a few pieces' folds, not the
    week's. Each product is checked against its schema of record a piece at a time as it is
    made (no rule spans two pieces: a row's key, its wallet's, lies in one); a check asked
    for without its product checks the stored one. The steps are `BooksRun`'s."""
    run = BooksRun(context, warehouse)
    yield from run.stored_checks()
    if not run.made:
        return
    run.read_lookups()
    with run.threads():
        writers = run.start_writers()
        run.fold_ledger()
        products = [w.result() for w in writers]
    yield from run.results(products)


@product_asset(deps=keys("transfers", "chains", "tokens", "quote_prices", "as_of"))
def wallet_funding(warehouse: Warehouse) -> dg.MaterializeResult:
    """Every native-token transfer into a wallet, priced: who funded it and when."""
    frame = assemble_funding(warehouse.frames(("transfers", "chains", "tokens",
                                               "quote_prices")), warehouse.clock()["as_of"])
    return materialized(warehouse, "wallet_funding", frame)


@product_asset(deps=keys("wallet_traits", "wallet_windows", "wallet_funding", "pair_tokens",
                         "pair_risk", "tokens", "address_labels", "chain_records"))
def wallet_profiles(warehouse: Warehouse) -> dg.MaterializeResult:
    """Every wallet's profile: type, tier, labels, scores and signals, cluster, first and last
    activity (its metrics records are the wallet's ranking rows); made a chain at a time (no
    figure of a profile reads another chain's rows), each chain written as it is made."""
    scans = {
        "pair_tokens": warehouse.scan("pair_tokens"),
        "traits": warehouse.scan("wallet_traits"),
        "windows": warehouse.scan("wallet_windows"),
        "funding": warehouse.scan("wallet_funding"),
        "pair_risk": warehouse.scan("pair_risk"),
        "tokens": warehouse.scan("tokens"),
        "labels": warehouse.scan("address_labels"),
        "chains": warehouse.scan("chain_records").select("chain_id", "slug"),
    }
    chains = scans["traits"].select(pl.col("chain_id").unique().sort()).collect()["chain_id"]

    def of_chain(chain: int) -> pl.DataFrame:
        parts = {name: scan.filter(pl.col("chain_id") == chain).collect()
                 for name, scan in scans.items()}
        return assemble_profiles(parts).drop(
            pl.selectors.by_dtype(pl.List, pl.Struct) - pl.selectors.by_name("head"))

    return made_by_chain(warehouse, "wallet_profiles", chains, of_chain)


@product_asset(deps=keys("wallet_profiles", "wallet_windows", "as_of"))
def wallet_rankings(warehouse: Warehouse) -> dg.MaterializeResult:
    """One ranking row per wallet and window: what GET /wallets filters and sorts on, that
    window's metrics, the wallet's parts of the list item (spec 2.5), and the watermark they
    rank as of (`as_of`); made and written a chain at a time."""
    as_of = warehouse.clock()["as_of"]
    profiles = warehouse.scan("wallet_profiles").select(RANKING_INPUTS)
    windows = warehouse.scan("wallet_windows")
    chains = profiles.select(pl.col("chain_id").unique().sort()).collect()["chain_id"]

    def of_chain(chain: int) -> pl.DataFrame:
        # A chain at a time, in chain order: the rows come out in (chain, wallet) order, as
        # one grid of every chain's gives them.
        return assemble_rankings(
            profiles.filter(pl.col("chain_id") == chain).collect(),
            windows.filter(pl.col("chain_id") == chain).collect()
        ).with_columns(as_of=pl.lit(as_of))

    return made_by_chain(warehouse, "wallet_rankings", chains, of_chain)


def made_by_chain(warehouse: Warehouse, name: str, chains: pl.Series,
                  of_chain: Callable[[int], pl.DataFrame]) -> dg.MaterializeResult:
    """A product made and written a chain at a time, in the order of `chains` (`of_chain`:
    a chain's rows); with no chain, the product of no chain's rows."""
    if chains.is_empty():
        return materialized(warehouse, name, of_chain(-1))
    return materialized(warehouse, name, streamed(of_chain(chain) for chain in chains))


@product_asset(deps=keys("wallet_ledger", "wallet_positions", "holder_balances", "wallet_traits",
                         "wallet_funding", "wallet_profiles", "tokens", "pairs", "pair_tokens",
                         "as_of"), heavy=True)
def cohort_members(warehouse: Warehouse) -> dg.MaterializeResult:
    """Every token's cohort members (snipers, early buyers, the deployer and the wallets it
    funded, top holders, fresh wallets, smart money, bots), each with the evidence that put it
    there and what it holds, bought, sold, realised and moved in each pair window; the first
    buys folded a lake day at a time, the rest made a chain at a time."""
    as_of = warehouse.clock()["as_of"]
    as_of_s = int(as_of.timestamp())
    days = warehouse.day_files("wallet_ledger")
    launch = launches(warehouse.scan("pairs"), warehouse.scan("pair_tokens")).collect()
    first = fold_first_buys(
        (warehouse.read(files).select(LEDGER_COLUMNS) for files in days.values()), launch,
        lambda number: progress(f"cohorts: first buys of {number}/{len(days)} lake day(s)"))
    recent_days = (as_of - timedelta(seconds=max(PAIR_WINDOWS.values()))).strftime("%Y-%m-%d")
    recent = warehouse.read([path for day, files in days.items() if day >= recent_days
                             for path in files]).select(LEDGER_COLUMNS)
    scans = {"positions": warehouse.scan("wallet_positions"),
             "holders": warehouse.scan("holder_balances"),
             "traits": warehouse.scan("wallet_traits"), "funding": warehouse.scan("wallet_funding"),
             "profiles": warehouse.scan("wallet_profiles"), "tokens": warehouse.scan("tokens")}
    chains = sorted(scans["tokens"].select(pl.col("chain_id").unique())
                    .collect()["chain_id"].to_list())
    made = []
    for number, chain in enumerate(chains, 1):
        mine = pl.col("chain_id") == chain
        wallets = token_wallets({name: scan.filter(mine) for name, scan in scans.items()},
                                first.lazy().filter(mine), launch.lazy().filter(mine),
                                window_flows(recent.filter(mine), as_of_s))
        made.append(assemble_members(wallets).collect())
        progress(f"cohorts: chain {chain} ({number}/{len(chains)}): {made[-1].height} members")
    return materialized(warehouse, "cohort_members", pl.concat(made, how="vertical_relaxed"))


@product_asset(deps=keys("cohort_members", "token_basis", "holder_balances", "as_of"))
def token_cohorts(warehouse: Warehouse) -> dg.MaterializeResult:
    """One row per token and cohort: its members' count, what they hold now and its share of
    the supply (or of what all holders hold, where a supply read before later mints is less),
    what they bought, sold and realised, and their net flow in each pair window, as of the
    watermark the cohorts were made at (`as_of`)."""
    frame = assemble_cohorts(warehouse.scan("cohort_members"), supplies(
        warehouse.scan("token_basis"), warehouse.scan("holder_balances")))
    return materialized(warehouse, "token_cohorts",
                        frame.with_columns(as_of=pl.lit(warehouse.clock()["as_of"])).collect())
