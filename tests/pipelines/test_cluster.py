"""The pipeline on a cluster by configuration: the Dagster instance on Postgres (the machine's
server, a database of the test's own), steps on two Celery worker processes through a real
redis-server broker; every product equal to an in-process rebuild, and both workers ran steps."""

import os
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from assets.warehouse import Warehouse
from tests.conftest import BIN, free_port, run_cli
from tests.e2e.test_incremental import close, products, rows

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def broker():
    port = free_port()
    server = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                               "--save", "", "--appendonly", "no"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True,
                         text=True).stdout.strip() != "PONG":
        assert time.monotonic() < deadline and server.poll() is None
        time.sleep(0.05)
    yield f"redis://127.0.0.1:{port}/0"
    server.terminate()
    server.wait(10)


@pytest.fixture
def database():
    """A fresh database on the machine's Postgres server."""
    name = f"chaintape_test_{uuid.uuid4().hex[:12]}"
    psql = ["psql", "-h", "127.0.0.1", "-U", "postgres", "-v", "ON_ERROR_STOP=1", "-c"]
    subprocess.run([*psql, f"CREATE DATABASE {name}"], check=True, capture_output=True)
    yield f"postgresql+psycopg2://postgres@127.0.0.1:5432/{name}"
    subprocess.run([*psql, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"], check=True,
                   capture_output=True)


def test_two_celery_workers_build_what_one_process_builds(small_lake, broker, database, tmp_path):
    local = tmp_path / "in-process"
    made = run_cli(["materialize"], local, CHAINTAPE_LAKE=small_lake.root)
    assert made.returncode == 0, made.stderr

    cluster = tmp_path / "cluster"
    (cluster / "dagster").mkdir(parents=True)
    (cluster / "dagster" / "dagster.yaml").write_text(
        f"telemetry:\n  enabled: false\nstorage:\n  postgres:\n    postgres_url: {database}\n")
    (cluster / "celery.yaml").write_text(
        f"execution:\n  config:\n    broker: {broker}\n    backend: {broker}\n")
    env = {"CHAINTAPE_LAKE": small_lake.root, "CHAINTAPE_EXECUTOR": "celery",
           "CHAINTAPE_CELERY_BROKER": broker}
    full = {**os.environ, **env, "CHAINTAPE_HOME": str(cluster),
            "DAGSTER_HOME": str(cluster / "dagster"),
            "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    workers = {}
    for name in ("one", "two"):
        log = open(cluster / f"{name}.log", "w")  # noqa: SIM115 - closed below
        workers[name] = (subprocess.Popen(
            [str(BIN / "dagster-celery"), "worker", "start", "-A", "dagster_celery.app", "-n",
             f"{name}@chaintape", "-y", str(cluster / "celery.yaml"), "-l", "INFO", "--",
             "--concurrency", "1"], cwd=REPO, env=full, stdout=log, stderr=subprocess.STDOUT),
            log)
    try:
        deadline = time.monotonic() + 120
        while not all("ready." in (cluster / f"{n}.log").read_text() for n in workers):
            assert time.monotonic() < deadline, [(cluster / f"{n}.log").read_text()[-2000:]
                                                 for n in workers]
            time.sleep(0.2)
        done = run_cli(["materialize"], cluster, **env)
        assert done.returncode == 0, done.stderr[-5000:]
    finally:
        for process, log in workers.values():
            process.terminate()
            process.wait(30)
            log.close()
    ran = {n: (cluster / f"{n}.log").read_text().count("succeeded in") for n in workers}
    assert all(count > 0 for count in ran.values()), ran

    on_workers = products(Warehouse(lake_root=small_lake.root, root=str(cluster / "warehouse")))
    in_process = products(Warehouse(lake_root=small_lake.root, root=str(local / "warehouse")))
    assert on_workers.keys() == in_process.keys()
    for name, frame in on_workers.items():
        assert frame.schema == in_process[name].schema, name
        for a, b in zip(rows(frame), rows(in_process[name]), strict=True):
            assert close(a, b), name
