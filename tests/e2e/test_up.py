"""The first command of the README: `chaintape up` simulates, materialises, publishes and then
serves, over a real socket, from the process it was started as; and what `chaintape serve`
says of where it listens."""

import os
import socket
import subprocess

import httpx

from tests.conftest import BIN, free_port, run_cli, wait_http


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


def test_serve_says_it_listens_only_once_it_accepts_connections(home) -> None:
    port = free_port()
    env = {**os.environ, "CHAINTAPE_HOME": str(home)}
    serve = subprocess.Popen([str(BIN / "chaintape"), "serve", "--port", str(port)], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        line = serve.stderr.readline()
        assert line.startswith(f"edge listening on http://127.0.0.1:{port}")
        # Said, so already bound: a connection made at once is accepted.
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    finally:
        serve.terminate()
        serve.communicate(timeout=30)


def test_serve_on_a_port_taken_says_so_and_fails(home) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run_cli(["serve", "--port", str(port)], home)
    assert done.returncode != 0
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr
    assert "edge listening" not in done.stderr
