"""The pipeline on a cluster by configuration: the Dagster instance on Postgres (the machine's
server, a database of the test's own), steps on two Celery worker processes through a real
redis-server broker, the lake, the warehouse and the snapshots on S3 (a moto server); every
product equal to an in-process build (there the books' chains folded whole, here in pieces,
in processes of the steps' own), both workers ran steps, and a worker killed mid-step has
that step run by the other; workers started together on a new database all start."""

import os
import re
import signal
import subprocess
import time
import uuid
from pathlib import Path

import boto3
import pytest

from assets.warehouse import Warehouse
from sources.lake import LakeWriter
from tests.conftest import BIN, free_port, run_cli, until
from tests.e2e.test_incremental import close, products, rows

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.stack(seconds=123)


@pytest.fixture
def broker():
    port = free_port()
    server = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                               "--save", "", "--appendonly", "no"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    until(lambda: server.poll() is not None or subprocess.run(
        ["redis-cli", "-p", str(port), "ping"], capture_output=True,
        text=True).stdout.strip() == "PONG", 20, "redis answering")
    assert server.poll() is None
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


def cluster_home(tmp_path: Path, database: str) -> Path:
    """A home whose Dagster instance lives in `database`."""
    home = tmp_path / "cluster"
    (home / "dagster").mkdir(parents=True)
    (home / "dagster" / "dagster.yaml").write_text(
        f"telemetry:\n  enabled: false\nstorage:\n  postgres:\n    postgres_url: {database}\n")
    return home


def start_workers(home: Path, env: dict, names: tuple[str, ...]) -> dict[str, subprocess.Popen]:
    """`chaintape worker` processes, each in a process group of its own (the Celery worker is
    its child), once each says it is ready."""
    full = {**os.environ, **env, "CHAINTAPE_HOME": str(home),
            "DAGSTER_HOME": str(home / "dagster")}
    workers = {}
    for name in names:
        with open(home / f"{name}.log", "w") as log:
            workers[name] = subprocess.Popen(
                [str(BIN / "chaintape"), "worker", "--name", f"{name}@chaintape"], env=full,
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    until(lambda: all("ready." in (home / f"{n}.log").read_text() for n in names), 120,
          "every worker ready")
    return workers


def stop(workers: dict[str, subprocess.Popen]) -> None:
    for process in workers.values():
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(30)


def assert_same_products(made_in: Warehouse, rebuilt_in: Warehouse) -> None:
    made, rebuilt = products(made_in), products(rebuilt_in)
    assert made.keys() == rebuilt.keys()
    for name, frame in made.items():
        assert frame.schema == rebuilt[name].schema, name
        for x, y in zip(rows(frame), rows(rebuilt[name]), strict=True):
            assert close(x, y), name


def steps_run(home: Path, name: str) -> int:
    return (home / f"{name}.log").read_text().count("succeeded in")


@pytest.fixture(scope="module")
def local(small_lake, tmp_path_factory) -> Path:
    """The same lake built in one process, as `chaintape materialize` does by default."""
    home = tmp_path_factory.mktemp("in-process")
    made = run_cli(["materialize"], home, CHAINTAPE_LAKE=small_lake.root)
    assert made.returncode == 0, made.stderr
    return home


def on_s3(lake: LakeWriter, bucket: str) -> str:
    """A copy of a lake's directory under s3://bucket/lake (its Delta logs name their files
    relative to the table, so the tree copied as it is is the same lake)."""
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket=bucket)
    root = Path(lake.root)
    for path in root.rglob("*"):
        if path.is_file():
            s3.upload_file(str(path), bucket, f"lake/{path.relative_to(root).as_posix()}")
    return f"s3://{bucket}/lake"


def test_two_workers_build_what_one_process_builds_though_one_is_killed(small_lake, local,
                                                                        broker, database,
                                                                        s3_env, tmp_path):
    """Both workers run steps; one is then killed with SIGKILL in the middle of a step, which
    the other runs; every product equals the one-process build. The lake, the warehouse and
    the snapshots are on S3."""
    home = cluster_home(tmp_path, database)
    lake = on_s3(small_lake, "cluster")
    env = {"CHAINTAPE_LAKE": lake, "CHAINTAPE_WAREHOUSE": "s3://cluster/warehouse",
           "CHAINTAPE_STORE": "s3://cluster/store", "CHAINTAPE_EXECUTOR": "celery",
           "CHAINTAPE_CELERY_BROKER": broker, "CHAINTAPE_CELERY_REDELIVER_SECONDS": "5",
           # Every chain's wallet books folded in pieces, each in a process the step starts.
           "CHAINTAPE_LEDGER_PIECE_ROWS": "400"}
    workers = start_workers(home, env, ("one", "two"))
    full = {**os.environ, **env, "CHAINTAPE_HOME": str(home), "DAGSTER_HOME": str(home / "dagster")}
    run = subprocess.Popen([str(BIN / "chaintape"), "materialize"], env=full,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        # Once worker one has taken a few steps, it is killed in the middle of its next.
        until(lambda: (home / "one.log").read_text().count("received") >= 4
              or run.poll() is not None, 300, "worker one's fourth step")
        assert run.poll() is None
        os.killpg(workers["one"].pid, signal.SIGKILL)
        workers["one"].wait(30)
        _, said = run.communicate(timeout=600)
        assert run.returncode == 0, said[-5000:]
    finally:
        if run.poll() is None:
            run.kill()
        stop(workers)
    assert steps_run(home, "one") > 0 and steps_run(home, "two") > 0
    # The steps worker one had taken and not finished were run by worker two.
    one, two = ((home / f"{n}.log").read_text() for n in ("one", "two"))
    taken = set(re.findall(r"Task execute_plan\[([0-9a-f-]+)\] received", one))
    finished = set(re.findall(r"Task execute_plan\[([0-9a-f-]+)\] succeeded", one))
    assert taken - finished
    assert taken - finished <= set(re.findall(r"Task execute_plan\[([0-9a-f-]+)\] succeeded",
                                              two))
    assert_same_products(Warehouse(lake_root=lake, root="s3://cluster/warehouse"),
                         Warehouse(lake_root=small_lake.root, root=str(local / "warehouse")))
    assert LakeWriter(lake).read("swaps").height == small_lake.read("swaps").height
    # The run's snapshot was published to the bucket.
    assert boto3.client("s3").get_object(Bucket="cluster", Key="store/snapshots/LATEST")["Body"].read()


# Each waits until the same instant (the imports done), then makes the instance's storage.
TOGETHER = """
import sys, time
from pipelines.cli.cluster import instance_made
import dagster, sqlalchemy
go = float(sys.argv[1])
while time.time() < go:
    time.sleep(0.001)
instance_made()
"""


def test_workers_started_together_on_a_new_database_all_start(database, tmp_path):
    # Ten at once race to make the instance's tables: without the retry, one of them failed
    # with "type ... already exists" in about one of five such tries here (as a worker of the
    # cluster bench did). Every one must start, and find the instance whole.
    home = cluster_home(tmp_path, database) / "dagster"
    go = time.time() + 8
    starting = [subprocess.Popen([str(BIN / "python"), "-c", TOGETHER, str(go)], cwd=REPO,
                                 env={**os.environ, "DAGSTER_HOME": str(home)},
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                for _ in range(10)]
    said = [process.communicate(timeout=120)[1] for process in starting]
    assert [process.returncode for process in starting] == [0] * 10, said
    made = subprocess.run(["psql", "-h", "127.0.0.1", "-U", "postgres", "-d",
                           database.rsplit("/", 1)[1], "-Atc",
                           "SELECT count(*) FROM information_schema.tables WHERE "
                           "table_name IN ('runs', 'event_logs', 'jobs')"],
                          capture_output=True, text=True, check=True)
    assert made.stdout.strip() == "3"
