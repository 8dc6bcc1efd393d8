"""The answers the computed lookups keep: bounded by bytes, oldest forgotten first, only plain
200 answers, and each call given headers of its own."""

from edge.http import Response
from edge.memo import Answers


def test_answers_forget_the_oldest_once_past_their_bytes() -> None:
    kept = Answers(max_bytes=10)
    kept.keep(("s1", "/a", ""), Response(b"aaaa"))
    kept.keep(("s1", "/b", ""), Response(b"bbbb"))
    assert kept.bytes == 8
    kept.keep(("s1", "/c", ""), Response(b"cccc"))  # 12 bytes would pass 10: /a goes
    assert kept.get(("s1", "/a", "")) is None
    assert [kept.get(("s1", p, "")).body for p in ("/b", "/c")] == [b"bbbb", b"cccc"]
    assert kept.bytes == 8


def test_only_plain_answers_within_the_budget_are_kept() -> None:
    kept = Answers(max_bytes=10)
    kept.keep(("s1", "/big", ""), Response(b"x" * 11))
    kept.keep(("s1", "/gone", ""), Response(b"{}", status=404))
    assert kept.get(("s1", "/big", "")) is None and kept.get(("s1", "/gone", "")) is None
    assert kept.bytes == 0


def test_an_answer_is_kept_per_snapshot_and_query() -> None:
    kept = Answers(max_bytes=100)
    kept.keep(("s1", "/a", "limit=2"), Response(b"one"))
    assert kept.get(("s2", "/a", "limit=2")) is None
    assert kept.get(("s1", "/a", "limit=3")) is None


def test_each_call_gets_headers_of_its_own() -> None:
    kept = Answers(max_bytes=100)
    kept.keep(("s1", "/a", ""), Response(b"one", headers=[("x-snapshot-id", "s1")]))
    first = kept.get(("s1", "/a", ""))
    first.headers.append(("x-ratelimit-remaining", "9"))
    assert kept.get(("s1", "/a", "")).headers == [("x-snapshot-id", "s1")]
