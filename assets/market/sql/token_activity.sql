-- name: token_activity
-- grain: one row per token with at least one swap in the longest window (chain_id, token)
-- description: Each token's window block over all its pairs, ending at the lake's watermark: a swap buys the token when the token left the pool (a sell of the base buys the quote), with USD volume, distinct buyers, sellers and makers across pairs.
{% from "macros.jinja" import windowed_legs, maker_fold, maker_sums, quote_sides, window_blocks with context %}
-- Swaps are summed per pair and maker first, as for pairs; each of those rows then counts once
-- for the base and once, buys and sells swapped, for the quote (a two-row VALUES table gives
-- the two sides), so the token join and the doubling happen on the folded rows, not the swaps.
WITH {{ windowed_legs(windows) }},
{{ maker_fold(windows, "pair", "per_pair") }},
sided AS (
    SELECT
        m.chain_id,
        CASE WHEN k.quote = 1 THEN pt.quote ELSE pt.base END AS token,
        m.maker,
{{- quote_sides(windows, "m") }}
    FROM per_pair AS m
    JOIN pair_tokens AS pt ON m.chain_id = pt.chain_id AND m.pair = pt.pair
    CROSS JOIN (VALUES (0), (1)) AS k(quote)
),
per_maker AS (
    SELECT
        chain_id,
        token,
        maker,
{{- maker_sums(windows) }}
    FROM sided
    GROUP BY chain_id, token, maker
),
{{ window_blocks(windows, "token", "per_maker") }}
