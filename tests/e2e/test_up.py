"""The first command of the README: `chaintape up` simulates, materialises, publishes and then
serves, over a real socket, from the process it was started as."""

import os
import subprocess

import httpx

from tests.conftest import BIN, free_port, wait_http


def test_up_serves_what_it_just_published(tmp_path) -> None:
    port = free_port()
    env = {**os.environ, "CHAINTAPE_HOME": str(tmp_path), "DAGSTER_HOME": str(tmp_path / "dagster"),
           "PORT": str(port)}
    up = subprocess.Popen([str(BIN / "chaintape"), "up", "--swaps", "3000"], env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        # Simulating and materialising come first; the edge answers only once they are done.
        wait_http(f"http://127.0.0.1:{port}/api/v1/status", timeout=300)
        chains = httpx.get(f"http://127.0.0.1:{port}/api/v1/chains?limit=100", timeout=30)
        assert chains.status_code == 200
        published = {p.name for p in (tmp_path / "store" / "snapshots").iterdir()
                     if p.is_dir()}
        assert len(published) == 1
        # Six simulated chains, each listed by the snapshot the run published.
        assert len(chains.json()["items"]) == 6
        assert up.poll() is None
    finally:
        up.terminate()
        try:
            _, errors = up.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            up.kill()
            _, errors = up.communicate()
    assert "edge listening on" in errors
