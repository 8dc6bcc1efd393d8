"""The market lists' filters and orderings on tiny hand-made tables."""

from datetime import UTC, datetime

import polars as pl

from publish.cursor import list_scope
from publish.market import TokenQuery, new_pairs, pair_list, token_list

T = datetime(2026, 11, 20, tzinfo=UTC)
AA, BB = "0x" + "ab" * 20, "0x" + "bc" * 20


def pairs() -> pl.DataFrame:
    return pl.DataFrame({
        "chain_id": [1, 1, 2, 2, 3],
        "pair": ["a", "b", "c", "d", "e"],
        "verdict": ["ok", "blocked", "watch", "ok", "unknown"],
        "trending_h24": [5.0, 99.0, 7.0, 1.0, 3.0],
        "volume_h1_usd": [10.0, 0.0, 30.0, 20.0, None],
        "liquidity_usd": [1.0, 2.0, 3.0, 3.0, 0.5],
        "created_at": [T.replace(hour=h) for h in (1, 2, 3, 4, 5)],
    })


def test_pairs_leave_out_blocked_ones_and_sort_missing_figures_last() -> None:
    assert pair_list(pairs())["pair"].to_list() == ["c", "a", "e", "d"]
    assert pair_list(pairs(), "volume", "h1")["pair"].to_list() == ["c", "d", "a", "e"]
    assert pair_list(pairs(), "volume", "h1", False)["pair"].to_list() == ["a", "d", "c", "e"]
    # Equal liquidity: chain then address break the tie.
    assert pair_list(pairs(), "liquidity")["pair"].to_list() == ["c", "d", "a", "e"]


def test_trending_leaves_out_stale_chains_but_other_sorts_keep_them() -> None:
    assert pair_list(pairs(), chain_ids=[1, 2], stale_chain_ids={2: "x"})["pair"].to_list() == [
        "a"]
    assert pair_list(pairs(), "liquidity", chain_ids=[2],
                     stale_chain_ids={2: "x"})["pair"].to_list() == ["c", "d"]
    assert new_pairs(pairs())["pair"].to_list() == ["e", "d", "c", "a"]


def tokens() -> pl.DataFrame:
    return pl.DataFrame({
        "chain_id": [1, 1, 2, 2],
        "address": [AA, BB, "Cc", "Dd"],
        "symbol": ["PEPE", "WETH", "PEPE2", "SCAM"],
        "name": ["Pepe", "Wrapped Ether", "Pepe Two", "Scam"],
        "categories": [["meme"], ["wrapped"], ["meme", "ai"], ["meme"]],
        "verdict": ["ok", "ok", "watch", "blocked"],
        "market_cap_usd": [100.0, 1000.0, None, 5000.0],
        "liquidity_usd": [10.0, 50.0, 20.0, 1.0],
        "volume_h24_usd": [1.0, 2.0, 3.0, 4.0],
        "fdv_usd": [1.0, 1.0, 1.0, 1.0],
        "rating_score": [40, 90, 60, 0],
        "holders": [10, 500, 20, 1],
        "first_listed_at": [T.replace(hour=0), T.replace(hour=10), T.replace(hour=20),
                            T.replace(hour=21)],
    })


def listed(query: TokenQuery) -> list[str]:
    as_of = int(T.replace(hour=23).timestamp())
    names = {AA: "0xaa", BB: "0xbb"}
    return [names.get(a, a) for a in token_list(tokens(), query, as_of)["address"].to_list()]


def test_tokens_never_list_a_blocked_token_and_default_to_market_cap() -> None:
    assert listed(TokenQuery()) == ["0xbb", "0xaa", "Cc"]
    assert listed(TokenQuery(sort="market_cap", descending=False)) == ["0xaa", "0xbb", "Cc"]


def test_each_token_filter_by_hand() -> None:
    assert listed(TokenQuery(q="pepe")) == ["0xaa", "Cc"]
    assert listed(TokenQuery(q="ether")) == ["0xbb"]
    # An EVM address in any case, with or without 0x; a base58 one exactly as it is spelled.
    assert listed(TokenQuery(q="0X" + "AB" * 20)) == ["0xaa"]
    assert listed(TokenQuery(q="AB" * 20)) == ["0xaa"]
    assert listed(TokenQuery(q="ab" * 20)) == ["0xaa"]
    assert listed(TokenQuery(q="Cc")) == ["Cc"] and listed(TokenQuery(q="cC")) == []
    assert listed(TokenQuery(chain_ids=(2,))) == ["Cc"]
    assert listed(TokenQuery(categories=("ai", "wrapped"))) == ["0xbb", "Cc"]
    # Inclusive bounds.
    assert listed(TokenQuery(bounds=(("liquidity_usd", 10.0, 20.0),))) == ["0xaa", "Cc"]
    assert listed(TokenQuery(bounds=(("trust_score", 60, None),))) == ["0xbb", "Cc"]
    assert listed(TokenQuery(bounds=(("holders", None, 20),))) == ["0xaa", "Cc"]
    # Ages count back from the watermark (23:00): 23 h, 13 h and 3 h.
    assert listed(TokenQuery(bounds=(("age_seconds", 13 * 3600, None),))) == ["0xbb", "0xaa"]
    assert listed(TokenQuery(bounds=(("age_seconds", None, 13 * 3600),))) == ["0xbb", "Cc"]
    assert listed(TokenQuery(sort="holders")) == ["0xbb", "Cc", "0xaa"]


def test_a_scope_names_one_query() -> None:
    assert list_scope(chains=None, sort="a") == list_scope(sort="a", chains=None)
    assert list_scope(chains=[1]) != list_scope(chains=[2])
