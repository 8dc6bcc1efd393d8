"""The notary: signs EIP-712 documents (token verdicts, verdict roots) with the service's key."""

import functools
from typing import TYPE_CHECKING, Any

from publish.verdicts import typed_data

# eth-account and its curve libraries take half a second to load: a worker loads them at its
# first signature, not when it starts.
if TYPE_CHECKING:
    from eth_account.signers.local import LocalAccount


def _hex(raw: bytes) -> str:
    return "0x" + bytes(raw).hex()


class Notary:
    """Holds the verdict key ($CHAINTAPE_VERDICT_KEY, else a key file under the edge's home)."""

    def __init__(self, private_key: str) -> None:
        # Checked here, so that a bad key stops the edge at its start, not at a signature.
        try:
            valid = len(bytes.fromhex(private_key.removeprefix("0x"))) == 32
        except ValueError:
            valid = False
        if not valid:
            raise ValueError("the verdict key is not 32 bytes of hex")
        self.private_key = private_key

    @functools.cached_property
    def account(self) -> "LocalAccount":
        """The key's account."""
        from eth_account import Account

        account: LocalAccount = Account.from_key(self.private_key)
        return account

    @property
    def address(self) -> str:
        """The signer's address."""
        return str(self.account.address)

    def sign(self, primary: str, message: dict[str, Any]) -> dict[str, Any]:
        """The typed data, its EIP-712 digest, the signer's address and the signature."""
        from eth_account.messages import encode_typed_data

        document = typed_data(primary, message)
        signed = self.account.sign_message(encode_typed_data(full_message=document))
        return {"typed_data": document, "digest": _hex(signed.message_hash),
                "signer": self.address, "signature": _hex(signed.signature)}
