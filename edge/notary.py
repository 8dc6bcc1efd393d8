"""The notary: signs EIP-712 documents (token verdicts, verdict roots) with the service's key."""

from typing import Any

from eth_account import Account
from eth_account.messages import encode_typed_data

from publish.verdicts import typed_data


def _hex(raw: bytes) -> str:
    return "0x" + bytes(raw).hex()


class Notary:
    """Holds the verdict key ($CHAINTAPE_VERDICT_KEY, else a key file under the edge's home)."""

    def __init__(self, private_key: str) -> None:
        self.account = Account.from_key(private_key)
        self.address = self.account.address

    def sign(self, primary: str, message: dict[str, Any]) -> dict[str, Any]:
        """The typed data, its EIP-712 digest, the signer's address and the signature."""
        document = typed_data(primary, message)
        signed = self.account.sign_message(encode_typed_data(full_message=document))
        return {"typed_data": document, "digest": _hex(signed.message_hash),
                "signer": self.address, "signature": _hex(signed.signature)}
