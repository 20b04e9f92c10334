"""Mutant: verdict compares each figure's mean with its target and ignores the interval, so a
cell whose interval holds the target is called feasible or infeasible, never not yet known."""


def verdict(checks, steady):
    def right_side(figure, target):
        return figure.mean >= target.value if target.at_least else figure.mean <= target.value

    if all(right_side(figure, target) for figure, target in checks):
        return Verdict(FEASIBLE, (), None, False)  # noqa: F821
    return Verdict(INFEASIBLE, (), None, False)  # noqa: F821
