"""API keys: issued by an admin command, stored only as hashes, looked up by the edge."""

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import secrets
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

import redis
import redis.asyncio

PREFIX = "ct_"
REDIS_HASH = "chaintape:keys"
RECHECK_S = 1.0


@dataclass(frozen=True)
class KeyRecord:
    """What is kept of a key: never the key itself."""

    key_id: str
    name: str
    plan: str
    created_at: str
    revoked_at: str | None = None

    @property
    def active(self) -> bool:
        """Not revoked."""
        return self.revoked_at is None


@functools.lru_cache(maxsize=4096)
def digest(key: str) -> str:
    """The stored form of a key (keys are 32 random bytes, so a plain SHA-256 suffices)."""
    return hashlib.sha256(key.encode()).hexdigest()


def new_key() -> str:
    """A fresh key."""
    return PREFIX + secrets.token_urlsafe(32)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _issue(name: str, plan: str) -> tuple[str, str, KeyRecord]:
    """A fresh key, its stored hash and its record."""
    key = new_key()
    return key, digest(key), KeyRecord(secrets.token_hex(4), name, plan, _now())


class FileKeys:
    """Keys in one JSON file (the embedded default); re-read when the file changes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.where = str(path.absolute())
        self._stamp: tuple[int, int] | None = None
        self._records: dict[str, KeyRecord] = {}
        self._checked = float("-inf")

    def _load(self, fresh: bool = True) -> dict[str, KeyRecord]:
        # The edge looks at the file at most once a second; the admin command always does.
        now = time.monotonic()
        if not fresh and now - self._checked < RECHECK_S:
            return self._records
        self._checked = now
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            self._stamp, self._records = None, {}
            return self._records
        stamp = (stat.st_mtime_ns, stat.st_size)
        if stamp != self._stamp:
            raw = json.loads(self.path.read_text())
            self._records = {h: KeyRecord(**r) for h, r in raw.items()}
            self._stamp = stamp
        return self._records

    @contextlib.contextmanager
    def _changing(self) -> Iterator[dict[str, KeyRecord]]:
        """The records, read afresh under an exclusive lock held until they are saved: two
        admin commands at once must not both read, change and rewrite (one change lost)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_suffix(".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            self._stamp = None
            records = dict(self._load())
            yield records
            self._save(records)

    def _save(self, records: dict[str, KeyRecord]) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({h: asdict(r) for h, r in records.items()}, indent=1))
        os.chmod(tmp, 0o600)
        tmp.replace(self.path)

    async def lookup(self, key: str) -> KeyRecord | None:
        """The record of `key`, revoked or not; None when it was never issued. A key the last
        read does not know sends the edge back to the file: it may have just been issued."""
        hashed = digest(key)
        found = self._load(fresh=False).get(hashed)
        return found if found is not None else self._load().get(hashed)

    def create(self, name: str, plan: str) -> tuple[str, KeyRecord]:
        """Issue a key: the key is returned once and only its hash is kept."""
        key, hashed, record = _issue(name, plan)
        with self._changing() as records:
            records[hashed] = record
        return key, record

    def all(self) -> list[KeyRecord]:
        """Every issued key's record."""
        return sorted(self._load().values(), key=lambda r: r.created_at)

    def revoke(self, key_id: str) -> KeyRecord | None:
        """Revoke by id; None when no key has that id."""
        with self._changing() as records:
            for h, record in records.items():
                if record.key_id == key_id:
                    records[h] = replace(record, revoked_at=record.revoked_at or _now())
                    return records[h]
        return None


class RedisKeys:
    """Keys in a Redis hash, shared by every edge instance."""

    def __init__(self, url: str) -> None:
        # Where, without the password the URL may carry.
        parts = urlsplit(url)
        self.where = f"Redis at {parts.hostname}:{parts.port or 6379}{parts.path or '/0'}"
        self.sync = redis.Redis.from_url(url)
        self.aio = redis.asyncio.Redis.from_url(url)

    async def lookup(self, key: str) -> KeyRecord | None:
        """The record of `key`, revoked or not; None when it was never issued."""
        raw = await self.aio.hget(REDIS_HASH, digest(key))
        return KeyRecord(**json.loads(raw)) if raw else None

    def create(self, name: str, plan: str) -> tuple[str, KeyRecord]:
        """Issue a key: the key is returned once and only its hash is kept."""
        key, hashed, record = _issue(name, plan)
        self.sync.hset(REDIS_HASH, hashed, json.dumps(asdict(record)))
        return key, record

    def all(self) -> list[KeyRecord]:
        """Every issued key's record."""
        return sorted((KeyRecord(**json.loads(v)) for v in self.sync.hvals(REDIS_HASH)),
                      key=lambda r: r.created_at)

    def revoke(self, key_id: str) -> KeyRecord | None:
        """Revoke by id; None when no key has that id."""
        for h, raw in self.sync.hgetall(REDIS_HASH).items():
            record = KeyRecord(**json.loads(raw))
            if record.key_id == key_id:
                revoked = replace(record, revoked_at=record.revoked_at or _now())
                # Each key is its own field, so this write cannot undo another's change.
                self.sync.hset(REDIS_HASH, h, json.dumps(asdict(revoked)))
                return revoked
        return None


def open_keys(redis_url: str | None, home: Path) -> "FileKeys | RedisKeys":
    """Redis keys when a URL is configured, else var/keys.json."""
    return RedisKeys(redis_url) if redis_url else FileKeys(home / "keys.json")
