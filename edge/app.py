"""create_app(): the edge composed of its layers, served over RSGI (granian) or ASGI."""

import importlib.metadata

from core.store import ObjectStore, open_store
from edge.agents.endpoint import AgentEndpoint, AgentRoute
from edge.catalog import OPERATIONS
from edge.page import page_documents
from edge.routes import (
    boards,
    chains,
    cohorts,
    farms,
    oracle,
    perps,
    platform,
    verdicts,
    wallets,
)
from edge.routes.market import pairs, search, streams, tokens, trades
from edge.server import Server
from edge.services import Services
from edge.settings import Settings
from edge.web.http import Response
from edge.web.layers.deprecation import Deprecation
from edge.web.layers.dispatch import dispatch
from edge.web.layers.documents import Documents
from edge.web.layers.gate import Gate
from edge.web.layers.limits import Limits
from edge.web.layers.problems import Problems
from edge.web.layers.request_ids import RequestIds
from edge.web.layers.routing import Routing
from edge.web.layers.settlement import Settlement
from edge.web.llms import llms_txt
from edge.web.openapi import openapi_yaml
from edge.web.registry import API_PREFIX, Operation, Router, mount
from publish.cursor import CursorSigner, default_signer

ROUTES = (boards, chains, cohorts, farms, oracle, pairs, perps, platform, search, streams, tokens, trades,
          verdicts, wallets)


def operations() -> list[Operation]:
    """Every declared operation, with a handler where its product is built."""
    return mount(OPERATIONS, {key: handler for module in ROUTES
                              for key, handler in module.HANDLERS.items()})


def documents(router: Router) -> dict[str, Response]:
    """/openapi.yml and /llms.txt, at the root and under /api/v1; the page at `/`."""
    made = {"/openapi.yml": Response(openapi_yaml(router.operations, version()), 200,
                                     "application/yaml"),
            "/llms.txt": Response(llms_txt(router.operations, API_PREFIX), 200,
                                  "text/plain; charset=utf-8")}
    return {prefix + name: document for name, document in made.items()
            for prefix in ("", API_PREFIX)} | page_documents()


def create_app(store: ObjectStore | None = None, signer: CursorSigner | None = None,
               settings: Settings | None = None) -> Server:
    """The edge over `store` (default: $CHAINTAPE_STORE or ./var/store), outermost layer first:
    request ids, deprecation, problems, limits, the agent tools at /mcp, documents, routing,
    the gate, settlement and the operation's handler."""
    router = Router(operations())
    services = Services(store or open_store(), signer or default_signer(),
                        settings or Settings.from_env(), router)
    routes = Documents(Routing(Gate(Settlement(dispatch, services.admissions),
                                    services.admissions), services), documents(router))
    # A tool call goes through every layer, as the HTTP call it stands for.
    agents = AgentEndpoint(router.operations, lambda request: handle(request), version())
    handle = RequestIds(Deprecation(Problems(Limits(AgentRoute(agents, routes)))))
    return Server(services, handle, agents)


def version() -> str:
    try:
        return importlib.metadata.version("chaintape")
    except importlib.metadata.PackageNotFoundError:
        return "0"
