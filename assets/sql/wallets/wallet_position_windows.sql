-- name: wallet_position_windows
-- grain: one row per wallet and token it swapped or moved (chain_id, wallet, token)
-- description: Each position's flows inside every wallet window, ending at the lake's watermark: swaps, transfers, money in and out, realised profit and the cost basis it closed, winning and losing exits, and the rounds a sell closed with how long they were held.
{#- One pass over the ledger: every window is a set of conditional sums, so the ledger is read
    once rather than once per window. #}
WITH flagged AS (
    SELECT
        l.chain_id, l.wallet, l.token, l.side, l.notional_usd, l.realized_usd,
        l.cost_closed_usd, l.closes, l.ts - l.round_opened_at AS held_for,
{%- for window, seconds in wallet_windows.items() %}
        {% if seconds is none %}TRUE{% else %}l.ts > a.as_of_s - {{ seconds }}{% endif %} AS in_{{ window }}{{ "," if not loop.last }}
{%- endfor %}
    FROM wallet_ledger AS l
    CROSS JOIN as_of AS a
)
SELECT
    chain_id, wallet, token,
{%- for window in wallet_windows %}
    SUM(CASE WHEN in_{{ window }} AND side IN ('buy', 'sell') THEN 1 ELSE 0 END) AS swaps_{{ window }},
    SUM(CASE WHEN in_{{ window }} AND side = 'sell' THEN 1 ELSE 0 END) AS sells_{{ window }},
    SUM(CASE WHEN in_{{ window }} AND side IN ('transfer_in', 'transfer_out') THEN 1 ELSE 0 END) AS transfers_{{ window }},
    SUM(CASE WHEN in_{{ window }} AND side = 'buy' THEN COALESCE(notional_usd, 0.0) ELSE 0.0 END) AS invested_{{ window }},
    SUM(CASE WHEN in_{{ window }} AND side IN ('buy', 'sell') THEN COALESCE(notional_usd, 0.0) ELSE 0.0 END) AS volume_{{ window }},
    SUM(CASE WHEN in_{{ window }} THEN realized_usd ELSE 0.0 END) AS realized_{{ window }},
    SUM(CASE WHEN in_{{ window }} THEN cost_closed_usd ELSE 0.0 END) AS cost_closed_{{ window }},
    SUM(CASE WHEN in_{{ window }} AND side = 'sell' AND realized_usd > 0 THEN realized_usd ELSE 0.0 END) AS gross_profit_{{ window }},
    SUM(CASE WHEN in_{{ window }} AND side = 'sell' AND realized_usd < 0 THEN 0.0 - realized_usd ELSE 0.0 END) AS gross_loss_{{ window }},
    SUM(CASE WHEN in_{{ window }} AND side = 'sell' AND realized_usd > 0 THEN 1 ELSE 0 END) AS winning_{{ window }},
    SUM(CASE WHEN in_{{ window }} AND side = 'sell' AND realized_usd < 0 THEN 1 ELSE 0 END) AS losing_{{ window }},
    SUM(CASE WHEN in_{{ window }} AND side = 'sell' AND closes THEN 1 ELSE 0 END) AS closed_rounds_{{ window }},
    SUM(CASE WHEN in_{{ window }} AND side = 'sell' AND closes THEN held_for ELSE 0 END) AS held_for_{{ window }}{{ "," if not loop.last }}
{%- endfor %}
FROM flagged
GROUP BY chain_id, wallet, token
