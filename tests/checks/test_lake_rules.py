"""The lake's own rules: a token exists before it is pooled or traded, and names its deployment."""

from datetime import UTC, datetime, timedelta

import polars as pl
import pytest

from sources.contract import traded_before_deployed
from sources.lake import LakeError, LakeWriter

T = datetime(2026, 11, 19, 18, tzinfo=UTC)


def test_a_pair_created_or_traded_before_its_token_was_deployed_is_reported() -> None:
    # X is deployed at 18:00. Pair p (X/Q) is created at 18:05 and first trades at 18:10: fine.
    # Pair q (X/Q) is created at 17:00, before X existed; pair r is created in time but trades
    # at 17:30. Q was deployed long before.
    tokens = pl.DataFrame({"chain_id": [1, 1], "address": ["X", "Q"],
                           "deployed_at": [T, T - timedelta(days=300)]})
    pairs = pl.DataFrame({"chain_id": [1, 1, 1], "address": ["p", "q", "r"],
                          "created_at": [T + timedelta(minutes=5), T - timedelta(hours=1),
                                         T - timedelta(hours=2)],
                          "token0": ["X", "Q", "X"], "token1": ["Q", "X", "Q"]})
    swaps = pl.DataFrame({"chain_id": [1, 1, 1], "pair": ["p", "q", "r"],
                          "block_time": [T + timedelta(minutes=10), T + timedelta(hours=1),
                                         T - timedelta(minutes=30)]})
    broken = traded_before_deployed(tokens, pairs, swaps)
    assert sorted(zip(broken["pair"], broken["token"], strict=True)) == [("q", "X"), ("r", "X")]


def test_a_token_without_its_deployment_is_refused_whole(small_lake, tmp_path) -> None:
    tokens = small_lake.read("tokens").head(3)
    lake = LakeWriter(tmp_path)
    for bad in (tokens.with_columns(deploy_tx=pl.when(pl.int_range(3) == 1).then(pl.lit(""))
                                    .otherwise("deploy_tx")),
                tokens.with_columns(deploy_block=pl.when(pl.int_range(3) == 2).then(0)
                                    .otherwise("deploy_block"))):
        with pytest.raises(LakeError):
            lake.write("tokens", bad)
    assert lake.files("tokens") == []
    # The simulator names every token's deployment, perp markets' listed bases included.
    every = small_lake.read("tokens")
    assert every["deploy_tx"].str.len_chars().min() > 0 and every["deploy_block"].min() > 0
    assert traded_before_deployed(every, small_lake.read("pairs"), small_lake.read("swaps")) \
        .is_empty()
