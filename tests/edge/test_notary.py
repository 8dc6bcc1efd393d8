"""The notary: a bad verdict key stops it at once; its signatures recover to its address."""

import pytest
from eth_account import Account
from eth_account.messages import encode_typed_data

from edge.notary import Notary
from publish.verdicts import verdict_message

KEY = "0x" + "4c" * 32


@pytest.mark.parametrize("key", ["0x12", "zz" * 32, "", "0x" + "4c" * 33])
def test_a_key_that_is_not_32_bytes_of_hex_is_refused_at_once(key) -> None:
    with pytest.raises(ValueError, match="32 bytes"):
        Notary(key)


def test_a_verdict_signed_recovers_to_the_keys_address() -> None:
    signed = Notary(KEY).sign("TokenVerdict", verdict_message(1, "0x" + "ab" * 20, "listed", 7))
    expected = Account.from_key(KEY).address
    assert signed["signer"] == expected
    recovered = Account.recover_message(encode_typed_data(full_message=signed["typed_data"]),
                                        signature=signed["signature"])
    assert recovered == expected
