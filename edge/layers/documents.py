"""The machine-readable descriptions, /openapi.yml and /llms.txt, built once from the catalog."""

from edge.http import Request, Response
from edge.layers import Next


class Documents:
    """Answers GET on a document's path (at the root and under /api/v1) with the document."""

    def __init__(self, inner: Next, documents: dict[str, Response]) -> None:
        self.inner = inner
        self.documents = documents

    async def __call__(self, request: Request) -> Response:
        document = self.documents.get(request.path)
        if document is not None and request.method == "GET":
            return Response(document.body, document.status, document.content_type,
                            list(document.headers))
        return await self.inner(request)
