"""Mutant: overload is named from a growing queue only, so a run whose admission control holds
the queue still and rejects half the arrivals is not overloaded."""

REJECTED_SHARE = 2.0  # a share never reached: rejections never count
