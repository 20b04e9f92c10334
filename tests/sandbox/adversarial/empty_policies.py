"""Finding 11: an empty policies.py (a student who submitted the wrong file).

Every case says that policies.py defines no such function, in one line, with no traceback
through grader internals.

EARNS: none
"""
