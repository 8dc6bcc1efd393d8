"""Token rows: the holder and activity models, the pair roll-up and the token rules, by hand."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import polars as pl
import pytest

from assets.market.holders import holder_balances_of, holder_changes_of
from assets.market.token_rows import holder_stats
from checks.outcome import validate
from checks.schemas.market import ZERO_ID, TokenRow
from core.token_market import log_part, pair_rollup, plain_decimal, token_pairs
from core.vocabulary import PAIR_WINDOWS
from core.windows import as_swaps, token_swaps, window_blocks

AS_OF = datetime(2026, 11, 20, 12, tzinfo=UTC)
RAW = pl.Decimal(38, 0)


def raw(values: list[int]) -> pl.Series:
    return pl.Series([Decimal(v) for v in values], dtype=RAW)


def assemble_holders(frames: dict[str, pl.LazyFrame], as_of: datetime) -> pl.DataFrame:
    """The holder balances of all the moves' changes, made at once."""
    return holder_balances_of(holder_changes_of(frames, as_of).lazy(), frames)


def test_holders_are_what_mints_moves_swaps_and_liquidity_leave() -> None:
    # TKN (token0 of pool P, 2 decimals): 1,000.00 minted to D from Z; D adds 600.00 to P;
    # A buys 50.00 out of P; A gives 20.00 to B; C sells 5.00 it never received (no holding);
    # E buys 10.00 paid out to F; a move after the watermark is ignored.
    t = [AS_OF - timedelta(hours=h) for h in (5, 4, 3, 2, 1)]
    frames = {
        "as_of": pl.DataFrame({"as_of": [AS_OF]}),
        "tokens": pl.DataFrame({"chain_id": [1], "address": ["TKN"], "decimals": [2],
                                "deploy_tx": ["mint"]}),
        "pairs": pl.DataFrame({"chain_id": [1], "address": ["P"], "token0": ["TKN"],
                               "token1": ["USD"]}),
        "transfers": pl.DataFrame({
            "chain_id": [1, 1, 1], "token": ["TKN"] * 3, "tx_hash": ["mint", "gift", "late"],
            "from_address": ["Z", "A", "D"], "to_address": ["D", "B", "B"],
            "amount": raw([100_000, 2_000, 7]), "block_time": [t[0], t[3], AS_OF
                                                               + timedelta(seconds=1)]}),
        "liquidity_events": pl.DataFrame({
            "chain_id": [1], "pair": ["P"], "owner": ["D"], "kind": ["mint"],
            "amount0": raw([60_000]), "amount1": raw([10]), "block_time": [t[1]]}),
        "swaps": pl.DataFrame({
            "chain_id": [1, 1, 1], "pair": ["P"] * 3, "maker": ["A", "C", "E"],
            "recipient": ["A", "C", "F"], "amount0_in": raw([0, 500, 0]),
            "amount1_in": raw([3, 0, 1]), "amount0_out": raw([5_000, 0, 1_000]),
            "amount1_out": raw([0, 1, 0]), "block_time": [t[2], t[4], t[4]]}),
    }
    got = assemble_holders({n: f.lazy() for n, f in frames.items()}, AS_OF).filter(
        pl.col("token") == "TKN")
    assert dict(got.select("holder", "balance").iter_rows()) == {
        "D": 400.0, "A": 30.0, "B": 20.0, "F": 10.0}


def test_holder_changes_of_two_days_add_up_to_the_balances() -> None:
    # Day 1: Z mints 100 T to A (T's deploy transaction), A sends 30 to B. Day 2: B sends 30
    # back to A (B's change is -30: B holds nothing), A sends 10 to C. Z is the mint address:
    # no holder, though its amount (-100) changed only on day 1.
    day1, day2 = AS_OF - timedelta(days=1), AS_OF - timedelta(hours=1)
    moves = pl.DataFrame({
        "chain_id": 1, "token": "T", "tx_hash": ["deploy", "a", "b", "c"],
        "from_address": ["Z", "A", "B", "A"], "to_address": ["A", "B", "A", "C"],
        "amount": raw([100, 30, 30, 10]), "block_time": [day1, day1, day2, day2]})
    lake = _one_pool_lake({"maker": [], "recipient": [], "amount0_in": raw([]),
                           "amount1_in": raw([]), "amount0_out": raw([]),
                           "amount1_out": raw([])})
    lake["tokens"] = pl.LazyFrame({"chain_id": [1], "address": ["T"], "decimals": [0],
                                   "deploy_tx": ["deploy"]})
    changes = [holder_changes_of({**lake, "transfers": moves.filter(
        pl.col("block_time") == at).lazy()}, AS_OF) for at in (day1, day2)]
    assert [sorted(c.select("holder", pl.col("change").cast(pl.Int64), "minted").rows())
            for c in changes] == [
        [("A", 70, False), ("B", 30, False), ("Z", -100, True)],
        [("A", 20, False), ("B", -30, False), ("C", 10, False)]]
    summed = holder_balances_of(pl.concat(changes).lazy(), lake)
    assert sorted(summed.select("holder", "balance").rows()) == [("A", 90.0), ("C", 10.0)]
    whole = assemble_holders({**lake, "transfers": moves.lazy()}, AS_OF)
    assert sorted(whole.select("holder", "balance").rows()) == [("A", 90.0), ("C", 10.0)]


def _one_pool_lake(swaps: dict, transfers: dict | None = None) -> dict[str, pl.LazyFrame]:
    """Pool P trades token T (token0, no decimals) for U; the swaps and transfers given."""
    at = AS_OF - timedelta(hours=1)
    swaps = pl.DataFrame(swaps).with_columns(chain_id=pl.lit(1), pair=pl.lit("P"),
                                             block_time=pl.lit(at))
    transfers = pl.DataFrame(transfers or {"from_address": [], "to_address": [],
                                           "amount": raw([])}, schema_overrides={
        "from_address": pl.String, "to_address": pl.String}).with_columns(
        chain_id=pl.lit(1), token=pl.lit("T"), tx_hash=pl.lit("move"), block_time=pl.lit(at))
    return {n: f.lazy() for n, f in {
        "tokens": pl.DataFrame({"chain_id": [1, 1], "address": ["T", "U"], "decimals": [0, 0],
                                "deploy_tx": ["deploy", "deploy"]}),
        "pairs": pl.DataFrame({"chain_id": [1], "address": ["P"], "token0": ["T"],
                               "token1": ["U"]}),
        "transfers": transfers,
        "liquidity_events": pl.DataFrame(schema={
            "chain_id": pl.Int64, "pair": pl.String, "owner": pl.String, "kind": pl.String,
            "amount0": RAW, "amount1": RAW, "block_time": pl.Datetime("us", "UTC")}),
        "swaps": swaps}.items()}


def test_holder_balances_are_exact_past_64_bits() -> None:
    # A buys 2^100 + 5 T paying 3 U, then sends 2^100 T to B: A keeps exactly 5, B holds 2^100.
    # C buys 2^64 - 1 T and then 1 more: the low half carries into the high one, 2^64 in all.
    # D buys 2^70 + 1 T and sells the same amount back: exactly nothing is left, no holding.
    big, low = 2**100, 2**64 - 1
    lake = _one_pool_lake({
        "maker": ["A", "C", "C", "D", "D", "E"], "recipient": ["A", "C", "C", "D", "D", "E"],
        "amount0_in": raw([0, 0, 0, 0, 2**70 + 1, 0]),
        "amount1_in": raw([3, 1, 1, 1, 0, 1]),
        "amount0_out": raw([big + 5, low, 1, 2**70 + 1, 0, 7]),
        "amount1_out": raw([0, 0, 0, 0, 1, 0])},
        {"from_address": ["A"], "to_address": ["B"], "amount": raw([big])})
    got = assemble_holders(lake, AS_OF).filter(pl.col("token") == "T")
    assert dict(got.select("holder", "balance").iter_rows()) == {
        "A": 5.0, "B": float(big), "C": float(2**64), "E": 7.0}


def test_holder_balances_past_the_first_table() -> None:
    # 70,000 wallets each buy i + 1 T: more balances than the table first has room for.
    wallets = 70_000
    makers = [f"W{i}" for i in range(wallets)]
    lake = _one_pool_lake({
        "maker": makers, "recipient": makers, "amount0_in": raw([0] * wallets),
        "amount1_in": raw([1] * wallets), "amount0_out": raw(list(range(1, wallets + 1))),
        "amount1_out": raw([0] * wallets)})
    got = assemble_holders(lake, AS_OF).filter(pl.col("token") == "T")
    assert got.height == wallets
    assert dict(got.select("holder", "balance").iter_rows()) == {
        f"W{i}": float(i + 1) for i in range(wallets)}


def test_holder_stats_count_holders_and_sum_the_ten_largest() -> None:
    # Token T: twelve holders with 1..12 (in no order), so the ten largest hold 3 + ... + 12 =
    # 75; token U: two holders, both among its ten largest.
    balances = pl.LazyFrame({
        "chain_id": [1] * 14, "token": ["T"] * 12 + ["U"] * 2,
        "holder": [f"h{i}" for i in range(14)],
        "balance": [7.0, 1.0, 12.0, 3.0, 9.0, 2.0, 11.0, 4.0, 10.0, 5.0, 8.0, 6.0, 0.5, 0.25]})
    stats = {r["address"]: r for r in holder_stats(balances).collect().iter_rows(named=True)}
    assert (stats["T"]["holders"], stats["T"]["top10"]) == (12, 75.0)
    assert (stats["U"]["holders"], stats["U"]["top10"]) == (2, 0.75)


def test_a_token_buys_when_it_leaves_the_pool_on_either_side() -> None:
    # Pool P: X (base) / W (quote). A buys X (a sell of W), B sells X (a buy of W), A buys again.
    legs = pl.DataFrame({
        "chain_id": [1, 1, 1], "pair": ["P"] * 3,
        "maker_key": pl.Series([1, 2, 1], dtype=pl.UInt64), "side": ["buy", "sell", "buy"],
        "volume_usd": [10.0, 4.0, 6.0],
        "block_time": [AS_OF - timedelta(minutes=m) for m in (90, 30, 2)]})
    pair_tokens = pl.LazyFrame({"chain_id": [1], "pair": ["P"], "base": ["X"], "quote": ["W"]})
    swaps = token_swaps(as_swaps(legs.with_columns(price_usd=pl.lit(1.0)).lazy()), pair_tokens)
    got = {r["token"]: r for r in window_blocks(swaps, int(AS_OF.timestamp() * 1000), "token")
           .collect().iter_rows(named=True)}
    x, w = got["X"], got["W"]
    assert (x["buys_h24"], x["sells_h24"], x["buyers_h24"], x["sellers_h24"]) == (2, 1, 1, 1)
    assert (w["buys_h24"], w["sells_h24"], w["buyers_h24"], w["sellers_h24"]) == (1, 2, 1, 1)
    assert (x["txns_h1"], x["buy_volume_h1_usd"], x["sell_volume_h1_usd"]) == (2, 6.0, 4.0)
    assert (x["txns_m5"], x["makers_m5"], x["makers_h24"]) == (1, 1, 2)
    assert x["volume_h24_usd"] == w["volume_h24_usd"] == 20.0


def test_the_main_pair_is_the_deepest_without_scam_evidence() -> None:
    pairs = pl.DataFrame({
        "chain_id": [1, 1, 1], "pair": ["deep-scam", "mid", "shallow"],
        "ticker": ["X/A", "X/B", "C/X"], "venue_id": ["v"] * 3,
        "liquidity_usd": [9e6, 5e5, 1e5], "created_at": [AS_OF - timedelta(days=d)
                                                         for d in (1, 3, 2)],
        "is_scam": [True, False, False], "rugged": [True, False, False],
        "verdict": ["blocked", "ok", "ok"], "score": [0, 90, 80], "base": ["X", "X", "C"],
        "quote": ["A", "B", "X"], "base_price_usd": [1.0, 2.0, 3.0],
        "quote_price_usd": [1.0, 1.0, 4.0],
        **{f"price_change_{w}": [0.0, 0.0, 0.0] for w in PAIR_WINDOWS}})
    rolled = {r["address"]: r for r in pair_rollup(token_pairs(pairs.lazy())).collect()
              .iter_rows(named=True)}
    x = rolled["X"]
    assert (x["main_pair"], x["pairs_count"], x["rugged_as_base"]) == ("mid", 3, True)
    assert x["liquidity_usd"] == pytest.approx(9.6e6)
    assert x["main_price_usd"] == 2.0 and x["first_listed_at"] == AS_OF - timedelta(days=3)
    # C is only ever a base; as the quote of "shallow", X is priced by the quote's price.
    assert rolled["C"]["main_price_usd"] == 3.0 and not rolled["C"]["rugged_as_base"]


def test_decimal_strings_and_log_parts() -> None:
    assert [plain_decimal(v) for v in (1.2e-9, 1e21, 0.1 + 0.2, 100.0, -3.5)] == [
        "0.0000000012", "1000000000000000000000", "0.3", "100", "-3.5"]
    assert plain_decimal(None) is None and plain_decimal(float("nan")) is None
    parts = pl.DataFrame({"v": [0.0, 9.0, 99.0, 1e9]}).select(log_part("v", 99.0).alias("v"))["v"]
    assert parts.to_list() == [0, 50, 100, 100]


def good_tokens() -> pl.DataFrame:
    def item(token_id: str | None, verdict: str) -> str:
        return f'{{"id":"{token_id or ZERO_ID}","verdict":{{"status":"{verdict}"}}}}'

    ids = ["6f1c2a3b-0000-5000-8000-000000000001", None, None, None]
    verdicts = ["ok", "blocked", "unknown", "watch"]
    return pl.DataFrame({
        "chain_id": [1, 1, 1, 1], "slug": ["ethereum"] * 4,
        "address": ["0xa", "0xb", "0xc", "0xd"], "token_id": ids,
        "symbol": ["A", "B", "C", "D"], "price_usd": [1.0, 2.0, None, 4.0],
        "liquidity_usd": [1.0, 1.0, 1.0, 1.0], "volume_h24_usd": [1.0, 0.0, 0.0, 1.0],
        "txns_h24": [3, 0, 0, 2], "makers_h24": [2, 0, 0, 2], "holders": [5, 1, 0, 3],
        "top10_pct": [90.0, 100.0, 0.0, 50.0], "rating_score": [70, 0, 40, 60],
        "token_status": [0, 999, 1, 0], "verdict": verdicts,
        "is_scam": [False, True, False, False],
        "item": [item(i, v) for i, v in zip(ids, verdicts, strict=True)],
        "market": ['{"observed_at":"x","metrics":{"price_usd":"1.5"}}',
                   '{"observed_at":"x","metrics":{"price_usd":"2"}}',
                   '{"observed_at":"x","metrics":{"price_usd":null}}',
                   '{"observed_at":"x","metrics":{"price_usd":"4"}}'],
        "instances": ['[{"id":"i"}]'] * 4,
    })


def test_good_token_rows_pass() -> None:
    outcome = validate("token_rows", TokenRow, good_tokens())
    assert outcome.passed, outcome.failures


@pytest.mark.parametrize(("rule", "change"), [
    ("scams_are_blocked", {"is_scam": [True, True, False, False]}),
    ("terminal_statuses_are_blocked", {"token_status": [0, 999, 1, 1000]}),
    ("unresolved_tokens_are_not_ok", {"verdict": ["ok", "blocked", "ok", "watch"]}),
    ("zero_id_exactly_when_unknown_to_the_registry",
     {"token_id": [None, None, None, None]}),
    ("the_item_carries_the_verdict", {"verdict": ["watch", "blocked", "unknown", "watch"]}),
    ("makers_cover_the_day", {"makers_h24": [4, 0, 0, 2]}),
    ("market_figures_are_decimal_strings",
     {"market": ['{"observed_at":"x","metrics":{"price_usd":"1.5e-7"}}'] * 4}),
])
def test_each_token_rule_fails_when_broken(rule: str, change: dict) -> None:
    outcome = validate("token_rows", TokenRow, good_tokens().with_columns(
        **{k: pl.Series(v, dtype=good_tokens()[k].dtype) for k, v in change.items()}))
    assert not outcome.passed
    assert rule in set(outcome.failures["check"].cast(pl.String).to_list())
