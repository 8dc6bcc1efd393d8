"""Trader cohorts on a token worked by hand: the first buys folded a day at a time, the net
flows per window, each cohort's members and sums, and the rules that block a wrong one."""

import polars as pl
import pytest

from assets.market.holders import ranked_holders
from assets.wallets.cohorts import (
    FLOWS,
    assemble_cohorts,
    assemble_members,
    fold_first_buys,
    holder_ranks,
    supplies,
    token_wallets,
    window_flows,
)
from checks.products import piece_outcome
from checks.schemas.wallets import cohorts_add_up

LAUNCH = pl.DataFrame({"chain_id": [1], "token": ["t"], "launch_block": [100]})


def buys(rows: list[tuple[str, int, int]], side: str = "buy") -> pl.LazyFrame:
    """A lake day's ledger rows of token t: (wallet, block, log)."""
    return pl.LazyFrame({"chain_id": [1] * len(rows), "token": ["t"] * len(rows),
                         "wallet": [r[0] for r in rows], "side": [side] * len(rows),
                         "block_number": [r[1] for r in rows], "log_index": [r[2] for r in rows]})


def ranks(found: pl.DataFrame) -> dict[str, tuple[int, int]]:
    return {w: (b, r) for w, b, r in found.select("wallet", "block_number", "buyer_rank").rows()}


def test_a_buyers_first_buy_is_kept_across_days_and_ranked_in_chain_order() -> None:
    day1 = pl.concat([buys([("a", 104, 2), ("b", 101, 0), ("a", 101, 3)]),
                      buys([("x", 100, 0)], side="sell")])
    day2 = buys([("c", 500, 0), ("b", 501, 1)])
    found = fold_first_buys([day1, day2], LAUNCH)
    # b's buy at 101/0 comes before a's at 101/3; a's later buy at 104 is not its first; c
    # comes on day 2; b's day-2 buy is not its first; x only sold.
    assert ranks(found) == {"b": (101, 1), "a": (101, 2), "c": (500, 3)}


def test_a_buyer_ranked_out_stays_out_unless_it_sniped() -> None:
    # 52 buyers after the launch blocks, one a block: the 51st and 52nd rank out.
    day1 = buys([(f"w{i:02}", 103 + i, 0) for i in range(52)])
    found = fold_first_buys([day1, buys([("w51", 900, 0), ("late", 901, 0)])], LAUNCH)
    assert sorted(found["wallet"]) == [f"w{i:02}" for i in range(50)]
    assert found["buyer_rank"].max() == 50
    # 55 buyers in the launch block itself: every one a sniper, kept past rank 50.
    sniped = fold_first_buys([buys([(f"s{i:02}", 100, i) for i in range(55)]),
                              buys([("late", 900, 0)])], LAUNCH)
    assert sniped.height == 55 and ranks(sniped)["s54"] == (100, 55)


def test_net_flow_is_bought_less_sold_in_each_window_up_to_the_watermark() -> None:
    as_of = 1_000_000
    rows = [("buy", as_of - 100, 10.0), ("sell", as_of - 1_000, 4.0), ("buy", as_of - 10, None),
            ("buy", as_of - 90_000, 7.0), ("transfer_in", as_of - 5, None),
            ("buy", as_of + 10, 3.0), ("sell", as_of - 20_000, 1.0)]
    ledger = pl.LazyFrame({"chain_id": [1] * len(rows), "token": ["t"] * len(rows),
                           "wallet": ["w"] * len(rows), "side": [r[0] for r in rows],
                           "ts": [r[1] for r in rows], "notional_usd": [r[2] for r in rows]})
    flows = window_flows(ledger, as_of).collect().row(0, named=True)
    # m5, m15: the 10 bought; m30 and h1: less the 4 sold 1,000 s back; h6, h24: less the 1
    # sold 20,000 s back; the buy without a price adds nothing, the one 90,000 s back and the
    # one after the watermark are outside every window.
    assert [flows[f] for f in FLOWS] == [10.0, 10.0, 6.0, 6.0, 5.0, 5.0]


T0 = 1_000_000
# Token t (deployer dev, supply 1,000): a sniped it, b and c bought after; dev, a, b, f and
# ten small holders hold it. Quote token q: no cohorts, whoever holds it.
FRAMES = {
    "positions": pl.LazyFrame({
        "chain_id": [1] * 3, "token": ["t"] * 3, "wallet": ["a", "b", "c"],
        "bought_usd": [100.0, 50.0, 20.0], "sold_usd": [40.0, 0.0, 30.0],
        "realized_usd": [10.0, 0.0, 5.0],
        "first_trade_at": [T0 + 5_000, T0 + 6_000, T0 + 7_000]}),
    "holders": pl.LazyFrame({
        "chain_id": [1] * 15, "token": ["t"] * 14 + ["q"],
        "holder": ["dev", "a", "b", "f", *(f"h{i}" for i in range(10)), "a"],
        "balance": [500.0, 200.0, 100.0, 50.0, *([10.0] * 10), 5.0]}),
    "traits": pl.LazyFrame({"chain_id": [1] * 3, "wallet": ["a", "b", "c"],
                            "first_seen": [T0 + 4_000, T0 - 100_000, T0 + 6_999]}),
    "funding": pl.LazyFrame({"chain_id": [1] * 3, "wallet": ["f", "c", "b"],
                             "funder": ["dev", "exchange", "dev"],
                             "ts": [T0 - 1_000, T0 - 200_000, T0 + 5_900]}),
    "profiles": pl.LazyFrame({"chain_id": [1] * 3, "wallet": ["a", "b", "c"],
                              "type": ["trader", "bot", "trader"],
                              "copy_eligible": [True, False, False]}),
    "tokens": pl.LazyFrame({"chain_id": [1, 1], "address": ["t", "q"], "deployer": ["dev", "q0"],
                            "is_quote": [False, True]}),
}
FIRST = pl.LazyFrame({"chain_id": [1] * 3, "token": ["t"] * 3, "wallet": ["a", "b", "c"],
                      "block_number": [100, 103, 104], "log_index": [0, 0, 0],
                      "buyer_rank": pl.Series([1, 2, 3], dtype=pl.Int32)})
FLOWED = pl.LazyFrame({"chain_id": [1, 1], "token": ["t", "t"], "wallet": ["a", "b"],
                       **{f: [float(i + 1), float(5 * (i + 1))] for i, f in enumerate(FLOWS)}})
BASIS = pl.LazyFrame({"chain_id": [1, 1], "address": ["t", "q"],
                      "total_supply": [1_000.0, 1_000.0]})


def cohorts_of(members: pl.DataFrame, basis: pl.LazyFrame = BASIS) -> pl.DataFrame:
    return assemble_cohorts(members.lazy(), supplies(basis, FRAMES["holders"])).with_columns(
        as_of=pl.lit(T0)).collect()


@pytest.fixture(scope="module")
def members() -> pl.DataFrame:
    return assemble_members(token_wallets(FRAMES, FIRST, LAUNCH.lazy(), FLOWED)).collect()


def test_each_cohort_takes_the_wallets_its_rule_names(members) -> None:
    found = {c: sorted(rows["wallet"]) for (c,), rows in members.partition_by(
        "cohort", as_dict=True).items()}
    assert found == {
        "sniper": ["a"],                          # block 100 is the launch's; b's 103 is not
        "early_buyer": ["a", "b", "c"],
        "deployer": ["b", "dev", "f"],            # dev funded b and f
        "top_holder": ["a", "b", "dev", "f", *(f"h{i}" for i in range(6))],  # ties by address
        "fresh_wallet": ["a"],                    # b seen 106,000 s before; c funded 207,000 s
        "smart_money": ["a"],
        "bot": ["b"]}
    assert set(members["token"]) == {"t"}
    assert piece_outcome("cohort_members", members).passed


def test_a_cohorts_figures_are_its_members_sums(members) -> None:
    cohorts = cohorts_of(members)
    rows = {r["cohort"]: r for r in cohorts.iter_rows(named=True)}
    assert list(rows) == ["sniper", "early_buyer", "deployer", "top_holder", "fresh_wallet",
                          "smart_money", "bot"]
    figures = ("wallets", "held", "share_of_supply", "bought_usd", "sold_usd", "realized_usd")
    assert {c: tuple(rows[c][f] for f in figures) for c in rows} == {
        "sniper": (1, 200.0, 0.2, 100.0, 40.0, 10.0),
        "early_buyer": (3, 300.0, 0.3, 170.0, 70.0, 15.0),
        "deployer": (3, 650.0, 0.65, 50.0, 0.0, 0.0),
        "top_holder": (10, 910.0, 0.91, 150.0, 40.0, 10.0),
        "fresh_wallet": (1, 200.0, 0.2, 100.0, 40.0, 10.0),
        "smart_money": (1, 200.0, 0.2, 100.0, 40.0, 10.0),
        "bot": (1, 100.0, 0.1, 50.0, 0.0, 0.0)}
    assert [rows["top_holder"][f] for f in FLOWS] == [6.0, 12.0, 18.0, 24.0, 30.0, 36.0]
    assert [rows["deployer"][f] for f in FLOWS] == [5.0, 10.0, 15.0, 20.0, 25.0, 30.0]
    assert piece_outcome("token_cohorts", cohorts).passed
    assert cohorts_add_up(members, cohorts).is_empty()
    wrong = cohorts.with_columns(held=pl.when(pl.col("cohort") == "bot").then(99.0)
                                 .otherwise("held"))
    assert cohorts_add_up(members, wrong)["cohort"].to_list() == ["bot"]
    assert cohorts_add_up(members, cohorts.filter(pl.col("cohort") != "bot"))[
        "cohort"].to_list() == ["bot"]


@pytest.mark.parametrize(("cohort", "change"), [
    ("sniper", {"first_buy_block": 103}),
    ("sniper", {"first_buy_block": 99}),
    ("early_buyer", {"buyer_rank": 51}),
    ("top_holder", {"holder_rank": 11}),
    ("fresh_wallet", {"first_seen": T0 + 5_000 - 86_401}),
    ("deployer", {"is_deployer": False, "funded_by_deployer": False}),
    ("smart_money", {"copy_eligible": False}),
    ("bot", {"type": "trader"}),
    ("sniper", {"net_flow_usd_h24": 141.0}),
], ids=lambda v: v if isinstance(v, str) else next(iter(v)))
def test_a_member_without_its_evidence_fails_the_check(members, cohort, change) -> None:
    # a, with the evidence of every cohort: it passes as a member of any.
    a = members.filter(pl.col("wallet") == "a").head(1).with_columns(
        cohort=pl.lit(cohort), is_deployer=pl.lit(True), type=pl.lit("bot"))
    assert piece_outcome("cohort_members", a).passed
    broken = a.with_columns(**{k: pl.lit(v, dtype=members.schema[k]) for k, v in change.items()})
    assert not piece_outcome("cohort_members", broken).passed


def test_a_share_that_is_not_held_over_supply_fails_the_check(members) -> None:
    cohorts = cohorts_of(members)
    assert not piece_outcome("token_cohorts", cohorts.with_columns(
        share_of_supply=pl.col("share_of_supply") * 1.5)).passed
    unknown = cohorts_of(members, BASIS.with_columns(total_supply=pl.lit(None, pl.Float64)))
    assert unknown["share_of_supply"].is_null().all()
    assert piece_outcome("token_cohorts", unknown).passed


def test_a_supply_read_before_later_mints_gives_way_to_what_the_holders_hold(members) -> None:
    # t's holders hold 950; a total supply of 800 read at discovery is less.
    cohorts = cohorts_of(members, BASIS.with_columns(total_supply=pl.lit(800.0)))
    top = cohorts.filter(pl.col("cohort") == "top_holder").row(0, named=True)
    assert (top["supply"], top["share_of_supply"]) == (950.0, pytest.approx(910 / 950))
    assert piece_outcome("token_cohorts", cohorts).passed
    assert not piece_outcome("token_cohorts", cohorts.with_columns(supply=pl.lit(700.0))).passed


def test_a_holders_rank_is_the_same_in_the_served_holders_and_the_cohorts() -> None:
    # Token T: 0xc and 0xa hold 5 each (a tie, broken by address), 0xb holds 9; token U alone.
    holders = pl.DataFrame({"chain_id": [1, 1, 1, 1], "token": ["T", "U", "T", "T"],
                            "holder": ["0xc", "0xa", "0xa", "0xb"],
                            "balance": [5.0, 1.0, 5.0, 9.0]})
    served = ranked_holders(holders)
    assert served.select("token", "holder", "rank").rows() == [
        ("T", "0xb", 1), ("T", "0xa", 2), ("T", "0xc", 3), ("U", "0xa", 1)]
    # The rows in another order rank the same.
    assert ranked_holders(holders.reverse()).equals(served)
    cohorts = holder_ranks(holders.lazy()).collect()
    assert cohorts.select("token", "wallet", "holder_rank").rows() == [
        ("T", "0xb", 1), ("T", "0xa", 2), ("T", "0xc", 3), ("U", "0xa", 1)]
