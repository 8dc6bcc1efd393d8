"""The chaintape command line: simulate, ingest, materialize, publish, serve, up, ui; each
command in the module of what it works on."""

import click

from pipelines.cli.chains import devnet, ingest
from pipelines.cli.cluster import worker
from pipelines.cli.common import default_home, environment
from pipelines.cli.market import live, materialize, publish, simulate, tail
from pipelines.cli.serving import keys, mcp, serve, ui
from pipelines.cli.up import up

__all__ = ["default_home", "main"]


@click.group()
def main() -> None:
    """chaintape: on-chain market data, from raw lake to served snapshot."""
    environment()


for command in (simulate, live, tail, ingest, devnet, worker, materialize, publish, serve, up, ui,
                mcp, keys):
    main.add_command(command)
