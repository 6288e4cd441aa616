"""Verdict rules shared by the experiments."""



REPRODUCED, PARTLY, NOT, NOT_RUN = "reproduced", "partly", "not reproduced", "not run"


def ratio_verdict(ratios, full=0.9, part=0.75):
    """Reproduced when every ratio (braid / paper) ≥ `full`; partly when every one ≥ `part` or
    at least half ≥ `full`; else not."""
    rs = [r for r in ratios if r is not None]
    if not rs:
        return NOT_RUN
    if all(r >= full for r in rs):
        return REPRODUCED
    if all(r >= part for r in rs) or sum(r >= full for r in rs) * 2 >= len(rs):
        return PARTLY
    return NOT


def claims_verdict(claims):
    """Every claim held → reproduced; some → partly; none → not."""
    held = [ok for _, ok in claims if ok is not None]
    if not held:
        return NOT_RUN
    if all(held):
        return REPRODUCED
    return PARTLY if any(held) else NOT
