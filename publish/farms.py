"""The farm list's filters and orderings (spec 4.9), shared by the publisher (the default pages
per chain and sort) and the edge (every query), so that both order farms the same way."""

from dataclasses import asdict, dataclass

import polars as pl

from publish.cursor import list_scope
from publish.writer import PagedList

FARM_SORT_COLUMNS = {"tvl": "tvl_usd", "apr": "apr", "updated_at": "updated_at"}
DEFAULT_FARM_SORT = "tvl"


@dataclass(frozen=True)
class FarmQuery:
    """One GET /farms query: chains in the order given, ticker substring (any case), factory
    addresses (each chain's native spelling), sort (None: chain by chain, each by TVL) and
    direction."""

    chain_ids: tuple[int, ...]
    q: str | None = None
    factories: tuple[str, ...] | None = None
    sort: str | None = None
    descending: bool = True

    @property
    def merged(self) -> bool:
        """Several chains merged into one list: its pages carry no prev_cursor."""
        return len(self.chain_ids) > 1


def farm_scope(query: FarmQuery) -> str:
    """The fingerprint of a farm query, carried by its cursors."""
    return list_scope(list="farms", **asdict(query))


def farm_list(farms: pl.DataFrame, query: FarmQuery) -> pl.DataFrame:
    """The farms in order: one query per chain, merged; globally by `sort` when set, else
    chain by chain in the order asked. Unknown figures sort last; ties go by address and pid."""
    column = FARM_SORT_COLUMNS[query.sort or DEFAULT_FARM_SORT]
    per_chain = []
    for position, chain_id in enumerate(query.chain_ids):
        rows = farms.filter(pl.col("chain_id") == chain_id)
        if query.q:
            rows = rows.filter(pl.col("ticker").str.to_lowercase()
                               .str.contains(query.q.lower(), literal=True))
        if query.factories:
            rows = rows.filter(pl.col("factory").is_in(query.factories))
        per_chain.append(rows.with_columns(_chain_order=pl.lit(position)))
    merged = pl.concat(per_chain) if per_chain else farms.clear().with_columns(
        _chain_order=pl.lit(0))
    keys = ([] if query.sort else ["_chain_order"]) + [column, "address", "pid"]
    descending = ([] if query.sort else [False]) + [query.descending, False, False]
    return merged.sort(keys, descending=descending, nulls_last=True).drop("_chain_order")


def farm_pages(farms: pl.DataFrame, records: pl.DataFrame) -> list[PagedList]:
    """Each chain's farms in every sort, highest first (the edge pages further and filters)."""
    out = []
    for chain_id, slug in records.select("chain_id", "slug").sort("chain_id").iter_rows():
        for sort in FARM_SORT_COLUMNS:
            query = FarmQuery((chain_id,), sort=sort)
            out.append(PagedList("farms", farm_list(farms, query).select(
                "chain_id", "address", "pid", "item"), ("chain_id", "address", "pid"),
                farm_scope(query), f"farms/{slug}/{sort}", served=False))
    return out
