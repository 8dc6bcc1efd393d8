"""Object-store backends: a local directory (embedded default) and S3 through boto3."""

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

import boto3
import botocore.config
import botocore.exceptions

from core.home import home

IMMUTABLE = "public, max-age=31536000, immutable"
REVALIDATE = "public, max-age=5, must-revalidate"
_META = ".meta"


@dataclass(frozen=True)
class StoredObject:
    """An object's bytes with the headers a CDN serves it with."""

    key: str
    body: bytes
    content_type: str
    cache_control: str
    etag: str


class NotFound(KeyError):
    """No object under that key."""


class StoreUnavailable(ConnectionError):
    """The object store did not answer."""


class ObjectStore(Protocol):
    """What the publisher and the edge need from an object store."""

    def put(self, key: str, body: bytes, content_type: str, cache_control: str) -> str: ...

    def get(self, key: str) -> StoredObject: ...

    def keys(self, prefix: str) -> list[str]: ...

    def children(self, prefix: str) -> list[str]: ...

    def delete(self, keys: list[str]) -> None: ...

    def put_file(self, key: str, path: Path) -> None: ...

    def remove(self, prefix: str) -> None: ...


def etag_of(body: bytes) -> str:
    """The quoted MD5 ETag S3 gives a single-part object."""
    return f'"{hashlib.md5(body, usedforsecurity=False).hexdigest()}"'


class LocalStore:
    """A directory; headers live in a sidecar tree under `.meta/` so a file server can use them."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)

    def put(self, key: str, body: bytes, content_type: str, cache_control: str) -> str:
        """Write the object and then its headers, each by atomic rename."""
        etag = etag_of(body)
        meta = json.dumps({"content_type": content_type, "cache_control": cache_control,
                           "etag": etag}).encode()
        _atomic_write(self._path(key), body)
        _atomic_write(self._path(f"{_META}/{key}.json"), meta)
        return etag

    def get(self, key: str) -> StoredObject:
        """The object and its headers (a file placed by `put_file` has none of its own)."""
        try:
            body = self._path(key).read_bytes()
        except FileNotFoundError:
            raise NotFound(key) from None
        try:
            meta = json.loads(self._path(f"{_META}/{key}.json").read_bytes())
        except FileNotFoundError:
            meta = {"content_type": "application/octet-stream", "cache_control": "",
                    "etag": etag_of(body)}
        return StoredObject(key, body, meta["content_type"], meta["cache_control"], meta["etag"])

    def put_file(self, key: str, path: Path) -> None:
        """Move a written file into place whole (a rename, on the same filesystem), without
        headers of its own: a table's data file."""
        target = self._path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, target)

    def remove(self, prefix: str) -> None:
        """Remove everything under `prefix` (a directory), headers included."""
        for path in (self._path(prefix), self._path(f"{_META}/{prefix}")):
            shutil.rmtree(path, ignore_errors=True)

    def keys(self, prefix: str) -> list[str]:
        """Keys under `prefix`, sorted; only the directory the prefix names is walked."""
        start = self.root / prefix.rpartition("/")[0]
        if not start.is_dir():
            return []
        keys = []
        for path in start.rglob("*"):
            rel = path.relative_to(self.root).as_posix()
            visible = path.is_file() and not rel.startswith(_META) and ".tmp-" not in path.name
            if visible and rel.startswith(prefix):
                keys.append(rel)
        return sorted(keys)

    def children(self, prefix: str) -> list[str]:
        """The names one level below `prefix` (which ends in "/") that hold any object, sorted."""
        start = self.root / prefix
        if not start.is_dir():
            return []
        return sorted(path.name for path in start.iterdir() if path.is_dir()
                      and any(found.is_file() for found in path.rglob("*")))

    def delete(self, keys: list[str]) -> None:
        """Remove objects and their headers; missing ones are ignored."""
        for key in keys:
            for path in (self._path(key), self._path(f"{_META}/{key}.json")):
                path.unlink(missing_ok=True)

    def _path(self, key: str) -> Path:
        if key.startswith("/") or ".." in key.split("/"):
            raise ValueError(f"bad object key {key!r}")
        return self.root / key


def _atomic_write(path: Path, body: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    tmp.write_bytes(body)
    os.replace(tmp, path)


class S3Store:
    """A bucket (and key prefix) on AWS S3 or any S3-compatible store."""

    def __init__(self, bucket: str, prefix: str = "", client: Any = None,
                 timeout_s: float = 5.0) -> None:
        self.bucket, self.prefix, self.timeout_s = bucket, prefix.strip("/"), timeout_s
        config = botocore.config.Config(connect_timeout=timeout_s, read_timeout=timeout_s,
                                        retries={"max_attempts": 2})
        self.client = client or boto3.client("s3", config=config)

    def __reduce__(self) -> tuple[type["S3Store"], tuple[str, str, None, float]]:
        """Sent to another process, the store makes its own client there."""
        return S3Store, (self.bucket, self.prefix, None, self.timeout_s)

    def _key(self, key: str) -> str:
        return f"{self.prefix}/{key}" if self.prefix else key

    def put(self, key: str, body: bytes, content_type: str, cache_control: str) -> str:
        """One PUT; S3 makes each object visible whole or not at all."""
        with _translated():
            answer = self.client.put_object(Bucket=self.bucket, Key=self._key(key), Body=body,
                                            ContentType=content_type, CacheControl=cache_control)
        return str(answer["ETag"])

    def put_file(self, key: str, path: Path) -> None:
        """Upload a file of any size (in parts when large); visible whole once done."""
        with _translated():
            self.client.upload_file(str(path), self.bucket, self._key(key))

    def get(self, key: str) -> StoredObject:
        """The object with the headers S3 stored."""
        with _translated(key):
            answer = self.client.get_object(Bucket=self.bucket, Key=self._key(key))
            body = answer["Body"].read()
        return StoredObject(key, body, answer.get("ContentType", ""),
                            answer.get("CacheControl", ""), answer["ETag"])

    def keys(self, prefix: str) -> list[str]:
        """Keys under `prefix`, sorted."""
        keys = []
        strip = len(self.prefix) + 1 if self.prefix else 0
        with _translated():
            pages = self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=self._key(prefix))
            for page in pages:
                keys += [item["Key"][strip:] for item in page.get("Contents", [])]
        return sorted(keys)

    def children(self, prefix: str) -> list[str]:
        """The names one level below `prefix` (which ends in "/") that hold any object, sorted:
        one delimited listing, not every key below."""
        names = []
        start = len(self._key(prefix))
        with _translated():
            pages = self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=self._key(prefix), Delimiter="/")
            for page in pages:
                names += [item["Prefix"][start:].rstrip("/")
                          for item in page.get("CommonPrefixes", [])]
        return sorted(names)

    def delete(self, keys: list[str]) -> None:
        """Batch deletes of up to 1000 keys."""
        with _translated():
            for i in range(0, len(keys), 1000):
                batch = [{"Key": self._key(k)} for k in keys[i:i + 1000]]
                self.client.delete_objects(Bucket=self.bucket, Delete={"Objects": batch})

    def remove(self, prefix: str) -> None:
        """Remove every object under `prefix` (a directory's worth of keys)."""
        self.delete(self.keys(prefix.rstrip("/") + "/"))


class _translated:
    """Maps boto errors to NotFound and StoreUnavailable."""

    def __init__(self, key: str = "") -> None:
        self.key = key

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, err: BaseException | None, tb: object) -> Literal[False]:
        if err is None:
            return False
        if isinstance(err, botocore.exceptions.ClientError):
            code = err.response.get("Error", {}).get("Code", "")
            if code in ("NoSuchKey", "404", "NotFound"):
                raise NotFound(self.key) from err
            raise StoreUnavailable(str(err)) from err
        if isinstance(err, botocore.exceptions.BotoCoreError):
            raise StoreUnavailable(str(err)) from err
        return False


def default_url() -> str:
    """$CHAINTAPE_STORE, else $CHAINTAPE_HOME/store, else ./var/store."""
    return os.environ.get("CHAINTAPE_STORE") or str(home() / "store")


def open_store(url: str | None = None) -> ObjectStore:
    """`s3://bucket/prefix` (endpoint from AWS_ENDPOINT_URL when set) or a directory path."""
    url = url or default_url()
    if url.startswith("s3://"):
        bucket, _, prefix = url[5:].partition("/")
        return S3Store(bucket, prefix)
    return LocalStore(url)


def is_remote(root: str) -> bool:
    """Whether a root names an object store prefix (s3://bucket/prefix) rather than a
    directory."""
    return "://" in root


def storage_options() -> dict[str, str]:
    """S3 settings from the environment, as delta-rs takes them: the endpoint (moto, MinIO),
    region and credentials."""
    options = {"AWS_REGION": os.environ.get("AWS_DEFAULT_REGION", "us-east-1"),
               # One writer per table: the lake's writers never commit to a table together,
               # nor do two steps to one product.
               "AWS_S3_ALLOW_UNSAFE_RENAME": "true"}
    endpoint = os.environ.get("AWS_ENDPOINT_URL")
    if endpoint:
        options["AWS_ENDPOINT_URL"] = endpoint
        options["AWS_ALLOW_HTTP"] = "true" if endpoint.startswith("http://") else "false"
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        if os.environ.get(name):
            options[name] = os.environ[name]
    return options


def polars_options(storage: dict[str, str]) -> dict[str, str]:
    """The same settings as polars' readers take them."""
    return {k.lower(): v for k, v in storage.items()}
