"""The edge's settings from the environment: a size is a whole number of MB, else a clear
error naming the variable."""

import pytest

from edge.settings import Settings


def test_the_blocks_bound_is_read_in_mb(monkeypatch) -> None:
    assert Settings.from_env().blocks_mb == 1024
    monkeypatch.setenv("CHAINTAPE_EDGE_BLOCKS_MB", "256")
    assert Settings.from_env().blocks_mb == 256


@pytest.mark.parametrize("said", ["0", "-5", "1.5", "lots", ""])
def test_a_blocks_bound_that_is_not_a_whole_number_of_mb_is_refused(monkeypatch, said) -> None:
    monkeypatch.setenv("CHAINTAPE_EDGE_BLOCKS_MB", said)
    with pytest.raises(ValueError, match="CHAINTAPE_EDGE_BLOCKS_MB"):
        Settings.from_env()
