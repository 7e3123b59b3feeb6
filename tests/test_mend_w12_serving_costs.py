"""Mender MB (wave 12, review R3 M4): every cost print at the floor price goes through units.format_usd.

At --price 1e-4, a 125M model on 8 H100 costs 1,388 GPU-h x $0.0001 = $0.139: the plan's layouts table printed '$0'
and its price assumption '$0.00'; infer --rps's cost per million tokens printed '$0.000'.
"""

def test_plan_full_at_the_floor_price_prints_non_zero_costs(run_cli):
    code, out, err = run_cli("plan", "--params", "125M", "--gpu", "h100", "--gpus", "8", "--price", "1e-4", "--full")
    assert code == 0, err
    price = next(line for line in out.splitlines() if line.startswith("price per GPU-hour"))
    assert "$0.0001 (set)" in price, price
    rows = [line for line in out.splitlines() if line.startswith("8 ") and "dp8" in line]
    assert rows and all(" $0 " not in row and "$0.1" in row for row in rows), rows  # 1,388-1,390 GPU-h x $1e-4


def test_infer_rps_cost_per_million_tokens_is_not_zero_at_the_floor(run_cli):
    code, out, err = run_cli("infer", "--model", "qwen2.5-0.5b", "--gpu", "h100", "--price", "1e-4", "--rps", "1")
    assert code == 0, err
    line = next(line for line in out.splitlines() if line.startswith("cost per million tokens"))
    assert "$0.000 " not in line + " " and "e-06" in line, line
