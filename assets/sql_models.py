"""SQL models: one Jinja-templated `.sql` file per model, parsed by sqlglot, run by polars."""

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import jinja2
import polars as pl
import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel
from sqlglot.optimizer.scope import traverse_scope

from core.vocabulary import PAIR_WINDOWS, TERMINAL_TOKEN_STATUSES

# Each domain keeps its models beside its code, in `assets/<domain>/sql/<model>.sql`.
SQL_ROOT = Path(__file__).parent
READ_DIALECT = "postgres"
# The board's day-long periods by how many seconds before the watermark they end and start:
# the day to now, the day before it (rank movement) and the day a week before (weekly growth).
BOARD_PERIODS = {"now": (0, 86_400), "d1": (86_400, 172_800), "d7": (604_800, 691_200)}
_HEADER = re.compile(r"^--\s*(\w+):\s*(.+)$")
_JINJA = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


class SqlModelError(ValueError):
    """A model that does not render, parse, transpile or run; the message names its file."""


def model_context() -> dict:
    """The Jinja variables every model may use: windows and the thresholds of meaning rules."""
    return {
        "windows": PAIR_WINDOWS,
        "board_periods": BOARD_PERIODS,
        "day_s": 86_400,
        "terminal_statuses": TERMINAL_TOKEN_STATUSES,
        # A creator who pulls at least this share of the liquidity ever minted has rugged.
        "rug_pulled_share": 0.9,
        # Figures of a chain whose indexer trails its head by more than this are stale.
        "stale_lag_seconds": 120,
    }


@dataclass(frozen=True)
class SqlModel:
    """One `.sql` file: its header (name, grain, description) and its templated query."""

    path: Path
    name: str
    domain: str
    grain: str
    description: str
    template: str

    @classmethod
    def load(cls, path: Path) -> "SqlModel":
        """Read a model file and its `-- key: value` header."""
        text = path.read_text()
        header = {}
        for line in text.splitlines():
            match = _HEADER.match(line)
            if not match:
                break
            header[match.group(1)] = match.group(2).strip()
        missing = {"name", "grain", "description"} - header.keys()
        if missing:
            raise SqlModelError(f"{path}: header lacks {', '.join(sorted(missing))}")
        if header["name"] != path.stem:
            raise SqlModelError(f"{path}: header name {header['name']!r} is not the file's stem")
        return cls(path, header["name"], path.parent.parent.name, header["grain"],
                   header["description"], text)

    def render(self, **context) -> str:
        """The query with its Jinja variables filled in (undefined ones are errors)."""
        try:
            return _JINJA.from_string(self.template).render(**{**model_context(), **context})
        except jinja2.TemplateError as err:
            raise SqlModelError(f"{self.path}: {err}") from err

    @cached_property
    def expression(self) -> exp.Expr:
        """The parsed query."""
        try:
            return sqlglot.parse_one(self.render(), read=READ_DIALECT)
        except sqlglot.errors.ParseError as err:
            raise SqlModelError(f"{self.path}: {err}") from err

    @cached_property
    def tables(self) -> tuple[str, ...]:
        """The tables the query reads (its lineage); CTE names are not tables."""
        names = set()
        for scope in traverse_scope(self.expression):
            for source in scope.sources.values():
                if isinstance(source, exp.Table):
                    names.add(source.name)
        return tuple(sorted(names))

    def transpile(self, dialect: str = "spark") -> str:
        """The query for another engine, rewritten where that engine would read it otherwise
        (see `portable`); unsupported constructs raise."""
        try:
            parsed = sqlglot.parse_one(self.render(), read=READ_DIALECT)
            return portable(parsed, dialect, self.path).sql(
                dialect=dialect, unsupported_level=ErrorLevel.RAISE)
        except sqlglot.errors.SqlglotError as err:
            raise SqlModelError(f"{self.path}: {err}") from err

    def inputs(self, frames: Mapping[str, pl.LazyFrame | pl.DataFrame]
                ) -> dict[str, pl.LazyFrame | pl.DataFrame]:
        """The frame of each table in the lineage; one missing is an error."""
        missing = set(self.tables) - frames.keys()
        if missing:
            raise SqlModelError(f"{self.path}: no frame for {', '.join(sorted(missing))}")
        return {name: frames[name] for name in self.tables}

    def run(self, frames: Mapping[str, pl.LazyFrame | pl.DataFrame]) -> pl.DataFrame:
        """Execute with polars' SQL engine over `frames` (one per table in the lineage)."""
        context = pl.SQLContext(self.inputs(frames))
        try:
            # Joins run in the order the model writes them: polars' reordering by estimated
            # cardinality can pair two tables on a shared chain id alone (a cross product).
            return context.execute(self.render(), eager=False).collect(
                optimizations=pl.QueryOptFlags(join_order=False))
        except (pl.exceptions.PolarsError, pl.exceptions.SQLInterfaceError) as err:
            raise SqlModelError(f"{self.path}: {err}") from err


def portable(expression: exp.Expr, dialect: str, path: Path) -> exp.Expr:
    """The query rewritten for `dialect` where a plain transpilation would fail or mean
    something else: Spark has no `EXTRACT(EPOCH FROM t)` (it is `UNIX_TIMESTAMP(t)`), and its
    `COLLECT_LIST(DISTINCT x)`, what `ARRAY_AGG(DISTINCT x ORDER BY x)` becomes, keeps no
    order (`SORT_ARRAY(COLLECT_SET(x))` does)."""
    if dialect != "spark":
        return expression

    def rewrite(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Extract) and node.name.upper() == "EPOCH":
            return exp.TimeToUnix(this=node.expression)
        if isinstance(node, exp.ArrayAgg) and isinstance(node.this, exp.Order):
            inner, order = node.this.this, node.this.expressions
            if not isinstance(inner, exp.Distinct) or len(inner.expressions) != 1 or len(
                    order) != 1 or order[0].this != inner.expressions[0] or order[0].args.get(
                    "desc"):
                raise SqlModelError(f"{path}: Spark keeps no order in ARRAY_AGG but that of "
                                    "DISTINCT x ORDER BY x")
            return exp.Anonymous(this="SORT_ARRAY", expressions=[
                exp.ArrayUniqueAgg(this=inner.expressions[0])])
        return node

    return expression.copy().transform(rewrite)


def load_models(root: Path = SQL_ROOT) -> dict[str, SqlModel]:
    """Every model under `root/<domain>/sql/<model>.sql`, by name (names are unique)."""
    models: dict[str, SqlModel] = {}
    for path in sorted(root.glob("*/sql/*.sql")):
        model = SqlModel.load(path)
        if model.name in models:
            raise SqlModelError(f"{path}: model name {model.name!r} is also "
                                f"{models[model.name].path}")
        models[model.name] = model
    return models
