"""A JSON-RPC client that retries what a provider refuses for a while and splits log ranges it
refuses to answer whole; nothing is ever skipped: what cannot be read is an error. An error is
read for what it says: a provider's rate limit (an HTTP 429, or a JSON-RPC error in a 200
answer) is waited out, for any call, honouring `Retry-After`; only a log range the provider
calls too wide is split."""

import re
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

import httpx
import orjson

# Waits before each retry of a call the provider refused for now (429, 5xx, a dropped
# connection, a rate-limit error), longest last; after the last, the call fails.
BACKOFF_S = (0.2, 0.5, 1.0, 2.0, 5.0, 10.0)
# A provider's Retry-After is honoured up to this long.
RETRY_AFTER_MOST_S = 60.0
# What providers answer when a call is over their rate or quota for now (Infura's -32005
# "request rate limited", Alchemy's 429 "compute units per second", QuickNode's "request
# limit reached", Ankr's "too many requests"): waited out and asked again.
RATE_LIMITED = re.compile(
    r"rate.?limit|request rate|too many requests|request limit|requests? per second|compute units|"
    r"capacity|throughput|credits|try again (later|in)|backoff|slow down", re.IGNORECASE)
RATE_LIMITED_CODES = {429, -32029, -32090}
# What they answer when a log query's range holds too much (Alchemy, Infura, QuickNode, geth,
# erigon, anvil's own limit): the range is split in two and each half asked again.
TOO_WIDE = re.compile(
    r"block range|range (is )?too (large|wide|big)|max(imum)? block range|returned more than|"
    r"more than \d+ (results|logs)|too many (results|logs)|response size|result(s)? (set )?too "
    r"large|log response size|query timeout|timed? ?out|limit the query", re.IGNORECASE)


T = TypeVar("T")
R = TypeVar("R")


class RpcError(RuntimeError):
    """A call the node answered with an error, or could not be made after every retry."""

    def __init__(self, method: str, message: str, code: int | None = None) -> None:
        super().__init__(f"{method}: {message}")
        self.method, self.message, self.code = method, message, code


class RpcUnreachable(RpcError):
    """A call no answer came back for after every retry: the node is down, unreachable, or
    keeps refusing (5xx, rate limits)."""


class RateLimit:
    """At most `per_s` requests a second over every thread (None: no limit), at least a
    `1/per_s` gap apart, counted from the instants they were let go: a thread that oversleeps
    its turn moves the next turns later instead of sending beside them."""

    def __init__(self, per_s: float | None, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.gap_s = 0.0 if per_s is None else 1.0 / per_s
        self.per_s = 0 if per_s is None else max(1, int(per_s))
        self.sleep, self.clock = sleep, clock
        self.sent: deque[float] = deque()
        self._lock = threading.Lock()

    def wait(self) -> None:
        """Until this request may be sent."""
        if not self.gap_s:
            return
        while True:
            with self._lock:
                now = self.clock()
                while self.sent and self.sent[0] <= now - 1.0:
                    self.sent.popleft()
                turn = now if not self.sent else self.sent[-1] + self.gap_s
                if len(self.sent) >= self.per_s:
                    turn = max(turn, self.sent[-self.per_s] + 1.0)
                if turn <= now:
                    self.sent.append(now)
                    return
            self.sleep(turn - now)


class Rpc:
    """One node's JSON-RPC endpoint over HTTP: at most `concurrency` requests in flight and
    `max_rps` a second."""

    def __init__(self, url: str, timeout_s: float = 30.0,
                 backoff_s: Sequence[float] = BACKOFF_S,
                 sleep: Callable[[float], None] = time.sleep, concurrency: int = 1,
                 max_rps: float | None = None) -> None:
        self.url = url
        self.backoff_s = tuple(backoff_s)
        self.sleep = sleep
        self.concurrency = max(1, concurrency)
        self.limit = RateLimit(max_rps, sleep)
        self.client = httpx.Client(timeout=timeout_s, limits=httpx.Limits(
            max_connections=max(10, self.concurrency)))
        self.calls = 0
        self.retries = 0
        self._counted = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None

    def close(self) -> None:
        """Close the connection pool and the threads that share it."""
        if self._pool is not None:
            self._pool.shutdown()
        self.client.close()

    def each(self, work: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """`work` of every item, up to `concurrency` at a time, the results in order."""
        if self.concurrency == 1 or len(items) < 2:
            return [work(item) for item in items]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="rpc")
        return list(self._pool.map(work, items))

    def batches(self, chunks: Sequence[Sequence[tuple[str, list[Any]]]],
                errors: bool = False) -> list[list[Any]]:
        """Several batch requests, up to `concurrency` in flight, their results in order."""
        return self.each(lambda chunk: self.batch(chunk, errors), chunks)

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
            self.limit.wait()
            with self._counted:
                self.calls += 1
            wait = self.backoff_s[attempt] if attempt < len(self.backoff_s) else 0.0
            try:
                response = self.client.post(self.url, content=payload,
                                            headers={"content-type": "application/json"})
            except httpx.TransportError as err:
                failure = f"{type(err).__name__}: {err} ({self.url})"
            else:
                if response.status_code == 429 or response.status_code >= 500:
                    failure = f"HTTP {response.status_code}"
                    wait = max(wait, retry_after(response.headers.get("retry-after")))
                elif response.status_code >= 400:
                    raise RpcError(method, f"HTTP {response.status_code}: "
                                           f"{response.text[:200]}", response.status_code)
                else:
                    try:
                        answers = orjson.loads(response.content)
                    except orjson.JSONDecodeError:
                        failure = "an answer that is not JSON"
                    else:
                        limited = rate_limited(answers)
                        if limited is None:
                            return answers
                        failure = f"rate limited: {limited}"
                        wait = max(wait, retry_after(response.headers.get("retry-after")))
            if attempt == len(self.backoff_s):
                raise RpcUnreachable(method, f"{failure}, still after {attempt} retries")
            with self._counted:
                self.retries += 1
            self.sleep(wait)
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


    def spread_logs(self, first: int, last: int, addresses: Sequence[str] | None,
                    topics: Sequence[Any]) -> list[dict]:
        """`logs` of [first, last], its range cut in `concurrency` parts read at once."""
        parts = min(self.concurrency, last - first + 1)
        step = -(-(last - first + 1) // parts)
        ranges = [(a, min(a + step - 1, last)) for a in range(first, last + 1, step)]
        found = self.each(lambda r: self.logs(r[0], r[1], addresses, topics), ranges)
        return [log for part in found for log in part]


def _too_wide(err: RpcError) -> bool:
    """Whether a log query's error says its range holds too much (and a rate limit does not)."""
    return TOO_WIDE.search(err.message) is not None and RATE_LIMITED.search(err.message) is None


def rate_limited(answers: Any) -> str | None:
    """The message of a rate-limit error among JSON-RPC answers (one, or a batch's), or None."""
    for answer in answers if isinstance(answers, list) else [answers]:
        error = answer.get("error") if isinstance(answer, dict) else None
        if not error:
            continue
        message = str(error.get("message", error)) if isinstance(error, dict) else str(error)
        code = error.get("code") if isinstance(error, dict) else None
        if code in RATE_LIMITED_CODES or RATE_LIMITED.search(message):
            return message
    return None


def retry_after(value: str | None) -> float:
    """Seconds a `Retry-After` header asks to wait (delay seconds or an HTTP date), at most
    RETRY_AFTER_MOST_S; 0 when absent or unreadable."""
    if not value:
        return 0.0
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = (parsedate_to_datetime(value) - datetime.now(UTC)).total_seconds()
        except (TypeError, ValueError):
            return 0.0
    return min(max(seconds, 0.0), RETRY_AFTER_MOST_S)


def quantity(value: str) -> int:
    """A hex quantity as an int."""
    return int(value, 16)
