"""A JSON-RPC client that retries what a provider refuses for a while and splits log ranges it
refuses to answer whole; nothing is ever skipped: what cannot be read is an error."""

import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx
import orjson

# Waits before each retry of a call the provider refused for now (429, 5xx, a dropped
# connection), longest last; after the last, the call fails.
BACKOFF_S = (0.2, 0.5, 1.0, 2.0, 5.0, 10.0)
# What providers answer when a log range holds too much (Alchemy, Infura, QuickNode, geth,
# erigon, anvil's own limit): the range is split in two and each half asked again.
TOO_WIDE = ("too many", "limit", "range", "exceed", "timeout", "timed out", "response size",
            "query returned more than", "block range")


class RpcError(RuntimeError):
    """A call the node answered with an error, or could not be made after every retry."""

    def __init__(self, method: str, message: str, code: int | None = None) -> None:
        super().__init__(f"{method}: {message}")
        self.method, self.message, self.code = method, message, code


class Rpc:
    """One node's JSON-RPC endpoint over HTTP."""

    def __init__(self, url: str, timeout_s: float = 30.0,
                 backoff_s: Sequence[float] = BACKOFF_S,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.url = url
        self.backoff_s = tuple(backoff_s)
        self.sleep = sleep
        self.client = httpx.Client(timeout=timeout_s)
        self.calls = 0
        self.retries = 0

    def close(self) -> None:
        """Close the connection pool."""
        self.client.close()

    def __enter__(self) -> "Rpc":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def call(self, method: str, *params: Any) -> Any:
        """One call's result."""
        return self.batch([(method, list(params))])[0]

    def batch(self, calls: Sequence[tuple[str, list[Any]]], errors: bool = False) -> list[Any]:
        """Several calls in one request, their results in order; an error fails the batch, or
        with `errors` takes its call's place as an RpcError."""
        if not calls:
            return []
        body = [{"jsonrpc": "2.0", "id": i, "method": m, "params": p}
                for i, (m, p) in enumerate(calls)]
        answers = self._post(calls[0][0], body if len(body) > 1 else body[0])
        if isinstance(answers, dict):
            answers = [answers]
        by_id = {a.get("id"): a for a in answers}
        results = []
        for i, (method, _) in enumerate(calls):
            answer = by_id.get(i)
            if answer is None:
                failed = [a["error"] for a in answers if a.get("error")]
                raise RpcError(method, str(failed[0].get("message", failed[0])) if failed
                               else "the node left a call of the batch unanswered")
            if "error" in answer:
                error = answer["error"] or {}
                failure = RpcError(method, str(error.get("message", error)), error.get("code"))
                if not errors:
                    raise failure
                results.append(failure)
                continue
            results.append(answer.get("result"))
        return results

    def _post(self, method: str, body: Any) -> Any:
        payload = orjson.dumps(body)
        for attempt in range(len(self.backoff_s) + 1):
            self.calls += 1
            try:
                response = self.client.post(self.url, content=payload,
                                            headers={"content-type": "application/json"})
            except httpx.TransportError as err:
                failure = f"{type(err).__name__}: {err}"
            else:
                if response.status_code == 429 or response.status_code >= 500:
                    failure = f"HTTP {response.status_code}"
                elif response.status_code >= 400:
                    raise RpcError(method, f"HTTP {response.status_code}: "
                                           f"{response.text[:200]}", response.status_code)
                else:
                    try:
                        return orjson.loads(response.content)
                    except orjson.JSONDecodeError:
                        failure = "an answer that is not JSON"
            if attempt == len(self.backoff_s):
                raise RpcError(method, f"{failure}, still after {attempt} retries")
            self.retries += 1
            self.sleep(self.backoff_s[attempt])
        raise AssertionError("unreachable")

    def logs(self, first: int, last: int, addresses: Sequence[str] | None,
             topics: Sequence[Any]) -> list[dict]:
        """Every log of [first, last] from `addresses` (None: any) matching `topics`; a range
        the node refuses as too wide is split in halves until it answers."""
        query: dict[str, Any] = {"fromBlock": hex(first), "toBlock": hex(last),
                                 "topics": list(topics)}
        if addresses is not None:
            if not addresses:
                return []
            query["address"] = list(addresses)
        try:
            return self.call("eth_getLogs", query)
        except RpcError as err:
            if first == last or not _too_wide(err):
                raise
        middle = (first + last) // 2
        return self.logs(first, middle, addresses, topics) + self.logs(middle + 1, last,
                                                                       addresses, topics)


def _too_wide(err: RpcError) -> bool:
    text = err.message.lower()
    return any(word in text for word in TOO_WIDE)


def quantity(value: str) -> int:
    """A hex quantity as an int."""
    return int(value, 16)
