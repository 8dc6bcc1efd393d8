from sources.simulator import amm


def test_amount_out_takes_the_fee_and_rounds_down():
    # 100 in against 1000/1000 at 0.30%: 100*9970*1000 / (1000*10000 + 100*9970) = 90.66…
    assert amm.amount_out(100, 1_000, 1_000, 30) == 90


def test_k_check_accepts_the_fair_output_and_refuses_one_more():
    assert amm.k_holds(1_000, 1_000, 100, 90, 30)
    # (1100*10000 - 100*30) * (909*10000) = 99,962,730,000,000 < 1000*1000*10000**2
    assert not amm.k_holds(1_000, 1_000, 100, 91, 30)


def test_first_deposit_locks_the_minimum_liquidity():
    assert amm.initial_liquidity(4_000_000, 1_000_000) == 2_000_000 - 1_000
