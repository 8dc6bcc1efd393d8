"""/llms.txt: the interface in plain words for language-model agents, rendered with Jinja2."""

from pathlib import Path

import jinja2

from edge.billing.plans import KEYLESS
from edge.web.params import Param
from edge.web.problems import CODES
from edge.web.registry import Operation

TEMPLATES = Path(__file__).parent / "templates"


def describe(param: Param) -> str:
    """A parameter's type, bounds and default in a few words."""
    parts = [{"int": "integer", "number": "number", "bool": "true/false",
              "list": "comma list", "repeat": "repeated"}.get(param.kind, "string")]
    if param.values:
        parts.append("one of " + ", ".join(param.values))
    if param.minimum is not None or param.maximum is not None:
        low = "" if param.minimum is None else f"{param.minimum:g}"
        high = "" if param.maximum is None else f"{param.maximum:g}"
        parts.append(f"{low}..{high}")
    if param.max_length is not None and param.kind == "string" and not param.values:
        parts.append(f"{param.min_length}..{param.max_length} characters")
    if param.kind in ("list", "repeat"):
        parts.append(f"at most {param.max_items} items")
    if param.default is not None:
        parts.append(f"default {str(param.default).lower() if param.kind == 'bool' else param.default}")
    return "; ".join(parts)


def llms_txt(operations: list[Operation], prefix: str) -> bytes:
    """The rendered document."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES),
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    return env.get_template("llms.txt.j2").render(
        operations=operations, prefix=prefix, keyless=KEYLESS, codes=list(CODES),
        describe=describe).encode()
