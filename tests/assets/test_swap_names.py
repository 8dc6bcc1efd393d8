"""The lake's swaps named for the wallet trades' spans: a closed day by its files, the live day's
spans by their rows, so that swaps arriving in the hour leave the rest of the day's name as
it was. By hand."""

from datetime import UTC, datetime, timedelta

from assets.snapshot.assets import swap_names
from assets.snapshot.trades import DaySwaps
from tests.assets.swaps_lake import swap_rows, swaps_lake

DAY_20 = datetime(2026, 11, 20, tzinfo=UTC)
H = timedelta(hours=1)
# The watermark: 05:30 on the 20th; its hour starts at 05:00.
CUT = int((DAY_20 + 5.5 * H).timestamp())
DAY_19_S, DAY_20_S, HOUR_S = (int(t.timestamp()) for t in (DAY_20 - 24 * H, DAY_20,
                                                            DAY_20 + 5 * H))


def test_swaps_arriving_in_the_hour_rename_the_hour_only(tmp_path) -> None:
    lake = swaps_lake(tmp_path, [DAY_20 - H, DAY_20 + H, DAY_20 + 5.2 * H])
    before = swap_names(DaySwaps(lake), CUT)
    assert set(before) == {DAY_19_S, DAY_20_S, HOUR_S}
    # Another chain's swap in the hour, in files of its own: the day's files change, and the
    # first chain's swaps come at other places among them.
    lake.append("swaps", swap_rows([DAY_20 + 5.3 * H], chain_id=2))
    after = swap_names(DaySwaps(lake), CUT)
    assert after[DAY_19_S] == before[DAY_19_S]
    assert after[DAY_20_S] == before[DAY_20_S]
    assert after[HOUR_S] != before[HOUR_S]


def test_a_closed_day_written_again_is_renamed(tmp_path) -> None:
    lake = swaps_lake(tmp_path, [DAY_20 - H, DAY_20 + H])
    before = swap_names(DaySwaps(lake), CUT)
    lake.write("swaps", swap_rows([DAY_20 - 2 * H], blocks=[9]))
    after = swap_names(DaySwaps(lake), CUT)
    assert after[DAY_19_S] != before[DAY_19_S]
    assert after[DAY_20_S] == before[DAY_20_S]
