"""Log data read word by word: the values written out by hand, and what eth-abi refuses."""

import pytest
from eth_abi.exceptions import InsufficientDataBytes

from sources.evm.families import decoded

MINUS_ONE = "f" * 64


def word(value: int) -> str:
    return f"{value:064x}"


def test_one_word_types_by_hand():
    data = "0x" + MINUS_ONE + word(5) + word(0xAB) + word(1) + MINUS_ONE
    assert decoded(["int24", "uint112", "address", "bool", "int256"], data) == (
        -1, 5, "0x" + "0" * 38 + "ab", True, -1)
    # A bytes32 is its 32 bytes.
    assert decoded(["bytes32"], "0x" + word(1)) == (b"\0" * 31 + b"\1",)
    # Fewer types than words read the first (a fork's extra words after them).
    assert decoded(["uint256"], "0x" + word(7) + word(8)) == (7,)


@pytest.mark.parametrize(("kind", "value"), [
    ("uint112", 1 << 112),  # a bit above its width
    ("int24", 1 << 23),  # positive, past int24's largest
    ("address", 1 << 160),
    ("bool", 2),
])
def test_a_word_too_wide_for_its_type_is_refused(kind, value):
    with pytest.raises(ValueError):
        decoded([kind], "0x" + word(value))


def test_data_too_short_is_refused():
    with pytest.raises(InsufficientDataBytes):
        decoded(["uint256", "uint256"], "0x" + word(1))
