-- name: wallet_position_windows
-- grain: one row per wallet and token it swapped or moved (chain_id, wallet, token)
-- description: Each position's flows inside every wallet window, ending at the lake's watermark: swaps, transfers, money in and out, realised profit and the cost basis it closed, winning and losing exits, and the rounds a sell closed with how long they were held.
{#- The windows nest (a day lies inside the week, the week inside the month, and so on), so
    each ledger row falls in one band, the shortest window holding it. The rows are summed per
    position and band once, and a window adds up its band and the shorter ones: thirteen sums
    over the ledger, not thirteen per window. -#}
{%- set windows = wallet_windows | list %}
{%- set money = ("invested", "volume", "realized", "cost_closed", "gross_profit", "gross_loss") %}
{%- set figures = ("swaps", "sells", "transfers") + money
                  + ("winning", "losing", "closed_rounds", "held_for") %}
WITH flows AS (
    SELECT
        l.chain_id, l.wallet, l.token,
        CASE
{%- for window, seconds in wallet_windows.items() if seconds is not none %}
            WHEN l.ts > a.as_of_s - {{ seconds }} THEN {{ loop.index0 }}
{%- endfor %}
            ELSE {{ windows | length - 1 }}
        END AS band,
        CASE WHEN l.side IN ('buy', 'sell') THEN 1 ELSE 0 END AS swaps,
        CASE WHEN l.side = 'sell' THEN 1 ELSE 0 END AS sells,
        CASE WHEN l.side IN ('transfer_in', 'transfer_out') THEN 1 ELSE 0 END AS transfers,
        CASE WHEN l.side = 'buy' THEN COALESCE(l.notional_usd, 0.0) ELSE 0.0 END AS invested,
        CASE WHEN l.side IN ('buy', 'sell') THEN COALESCE(l.notional_usd, 0.0) ELSE 0.0 END AS volume,
        l.realized_usd AS realized,
        l.cost_closed_usd AS cost_closed,
        CASE WHEN l.side = 'sell' AND l.realized_usd > 0 THEN l.realized_usd ELSE 0.0 END AS gross_profit,
        CASE WHEN l.side = 'sell' AND l.realized_usd < 0 THEN 0.0 - l.realized_usd ELSE 0.0 END AS gross_loss,
        CASE WHEN l.side = 'sell' AND l.realized_usd > 0 THEN 1 ELSE 0 END AS winning,
        CASE WHEN l.side = 'sell' AND l.realized_usd < 0 THEN 1 ELSE 0 END AS losing,
        CASE WHEN l.side = 'sell' AND l.closes THEN 1 ELSE 0 END AS closed_rounds,
        CASE WHEN l.side = 'sell' AND l.closes THEN l.ts - l.round_opened_at ELSE 0 END AS held_for
    FROM wallet_ledger AS l
    CROSS JOIN as_of AS a
),
banded AS (
    SELECT
        chain_id, wallet, token, band,
{%- for figure in figures %}
        SUM({{ figure }}) AS {{ figure }}{{ "," if not loop.last }}
{%- endfor %}
    FROM flows
    GROUP BY chain_id, wallet, token, band
)
SELECT
    chain_id, wallet, token,
{%- for window in windows %}
{%- set band = loop.index0 %}
{%- set last_window = loop.last %}
{%- for figure in figures %}
    SUM(CASE WHEN band <= {{ band }} THEN {{ figure }} ELSE {{ "0.0" if figure in money else "0" }} END) AS {{ figure }}_{{ window }}{{ "," if not (last_window and loop.last) }}
{%- endfor %}
{%- endfor %}
FROM banded
GROUP BY chain_id, wallet, token
