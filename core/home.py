"""Where chaintape keeps its files by default: the lake, warehouse, store and keys live under it."""

import contextlib
import os
import secrets
from pathlib import Path


def home() -> Path:
    """$CHAINTAPE_HOME, else ./var."""
    return Path(os.environ.get("CHAINTAPE_HOME", "var"))


def secret(variable: str, path: Path) -> str:
    """A 32-byte hex secret: $variable, else the file at `path`, made once (racing makers
    agree: the first link wins and every process reads the same file)."""
    if os.environ.get(variable):
        return os.environ[variable]
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
        tmp.write_text(secrets.token_hex(32))
        tmp.chmod(0o600)
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)
        tmp.unlink()
    return path.read_text().strip()
