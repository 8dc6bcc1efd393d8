"""The machine-readable descriptions, /openapi.yml and /llms.txt, built once from the catalog."""

from collections.abc import Awaitable

from edge.web.http import Request, Response
from edge.web.layers import Next


class Documents:
    """Answers GET on a document's path (at the root and under /api/v1) with the document."""

    def __init__(self, inner: Next, documents: dict[str, Response]) -> None:
        self.inner = inner
        self.documents = documents

    def __call__(self, request: Request) -> Awaitable[Response]:
        document = self.documents.get(request.path)
        if document is not None and request.method == "GET":
            return self._answer(document)
        return self.inner(request)

    @staticmethod
    async def _answer(document: Response) -> Response:
        return Response(document.body, document.status, document.content_type,
                        list(document.headers))
