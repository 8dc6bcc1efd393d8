-- name: token_activity
-- grain: one row per token with at least one swap in the longest window (chain_id, token)
-- description: Each token's window block over all its pairs, ending at the lake's watermark: a swap buys the token when the token left the pool (a sell of the base buys the quote), with USD volume, distinct buyers, sellers and makers across pairs.
{% from "macros.jinja" import clock, window_flags, in_longest_window, activity with context %}
-- Each swap counts once for the base and once for the quote: a two-row VALUES table gives the
-- two sides, so the legs are read once rather than once per side.
WITH recent AS (
    SELECT s.chain_id, s.pair, s.maker_key AS maker, s.side, s.block_time, s.volume_usd
    FROM swap_legs AS s
{{- clock() }}
    WHERE {{ in_longest_window(windows, "s") }}
),
legs AS (
    SELECT s.chain_id,
           CASE WHEN k.quote = 1 THEN pt.quote ELSE pt.base END AS token,
           s.maker,
           CASE WHEN k.quote = 0 THEN s.side WHEN s.side = 'buy' THEN 'sell' ELSE 'buy' END
               AS side,
           s.block_time,
           COALESCE(s.volume_usd, 0.0) AS usd
    FROM recent AS s
    JOIN pair_tokens AS pt ON s.chain_id = pt.chain_id AND s.pair = pt.pair
    CROSS JOIN (VALUES (0), (1)) AS k(quote)
),
windowed AS (
    SELECT
        l.chain_id,
        l.token,
        l.maker,
        l.side,
        l.usd,
{{- window_flags(windows, "l") }}
    FROM legs AS l
{{- clock() }}
),
{{ activity(windows, "token") }}
