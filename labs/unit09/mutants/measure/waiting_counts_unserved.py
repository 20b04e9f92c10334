"""Mutant: the waiting share counts requests never prefilled (rejected, cancelled while
waiting), their whole residence as waiting."""


def waiting_share(run):
    starts = first_steps(run)  # noqa: F821
    waited = sum(starts.get(r["id"], r["statusMs"]) - r["arrivalMs"] for r in run["requests"])
    resided = sum(r["statusMs"] - r["arrivalMs"] for r in run["requests"])
    return Ratio(waited, resided, "ms waiting / ms in the system (all)")  # noqa: F821
