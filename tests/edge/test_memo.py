"""What the edge keeps of its answers: only plain 200 answers, each call given headers of its
own, and one answer per snapshot and URL (the caches themselves: tests/core/test_caches.py)."""

import asyncio
from types import SimpleNamespace

from edge.memo import kept_answers, kept_while
from edge.web.http import Response


def call(handler, snapshot: str, path: str, query: str = "", seq: int | None = None,
         rows: tuple[str, ...] = ()) -> Response:
    live = None if seq is None else SimpleNamespace(seq=seq, as_of_text=f"as of {seq}",
                                                    rows=rows)
    request = SimpleNamespace(state=SimpleNamespace(snapshot=SimpleNamespace(snapshot_id=snapshot),
                                                    live=live),
                              path=path, raw_query=query)
    return asyncio.run(handler(request, {}))


def test_an_answer_is_computed_once_per_snapshot_and_url() -> None:
    calls = []

    @kept_answers
    async def handler(request, params) -> Response:
        calls.append((request.state.snapshot.snapshot_id, request.raw_query))
        return Response(f"answer {len(calls)}".encode(), headers=[("x-snapshot-id", "s")])

    first = call(handler, "memo-s1", "/memo", "limit=2")
    first.headers.append(("x-ratelimit-remaining", "9"))
    again = call(handler, "memo-s1", "/memo", "limit=2")
    assert again.body == b"answer 1" and again.headers == [("x-snapshot-id", "s")]
    assert call(handler, "memo-s2", "/memo", "limit=2").body == b"answer 2"
    assert call(handler, "memo-s1", "/memo", "limit=3").body == b"answer 3"
    assert calls == [("memo-s1", "limit=2"), ("memo-s2", "limit=2"), ("memo-s1", "limit=3")]
    # A live tail over the same snapshot is other data: answered again, then kept for it.
    assert call(handler, "memo-s1", "/memo", "limit=2", seq=7).body == b"answer 4"
    assert call(handler, "memo-s1", "/memo", "limit=2", seq=7).body == b"answer 4"
    assert call(handler, "memo-s1", "/memo", "limit=2", seq=8).body == b"answer 5"


def test_only_plain_200_answers_are_kept() -> None:
    calls = []

    @kept_answers
    async def handler(request, params) -> Response:
        calls.append(1)
        return Response(b"{}", status=404)

    call(handler, "memo-s3", "/missing")
    call(handler, "memo-s3", "/missing")
    assert len(calls) == 2


def test_an_answer_kept_while_its_rows_of_the_tail_stay_is_stamped_with_the_newest_tail() -> None:
    calls = []

    @kept_while(lambda request, params: request.state.live and request.state.live.rows)
    async def handler(request, params) -> Response:
        calls.append(request.state.live and request.state.live.seq)
        live = request.state.live
        return Response(f"answer {len(calls)}".encode(),
                        headers=[("x-snapshot-id", "s"),
                                 ("x-data-as-of", live.as_of_text if live else "snapshot")])

    assert call(handler, "memo-s4", "/pair").headers[1] == ("x-data-as-of", "snapshot")
    one = call(handler, "memo-s4", "/pair", seq=1, rows=("a",))
    # Tails 2 and 3 hold the same rows of it: the answer of tail 1, as of each.
    two = call(handler, "memo-s4", "/pair", seq=2, rows=("a",))
    three = call(handler, "memo-s4", "/pair", seq=3, rows=("a",))
    assert one.body == two.body == three.body == b"answer 2"
    assert [r.headers for r in (two, three)] == [
        [("x-snapshot-id", "s"), ("x-data-as-of", "as of 2")],
        [("x-snapshot-id", "s"), ("x-data-as-of", "as of 3")]]
    # Tail 4 adds a row of it: answered again.
    assert call(handler, "memo-s4", "/pair", seq=4, rows=("a", "b")).body == b"answer 3"
    assert calls == [None, 1, 4]
