"""Columns for runs of a million requests: 8 bytes a value instead of a Python object each.

The fast path keeps its per-step and per-request values in ``array.array`` columns (a float or
an int is 8 bytes there, against 24 to 32 bytes plus a list slot as Python objects) and its
tables (``chunks``, ``slices``: rows of a few ints) in ``Table``, one flat ``array('q')``. Both
read like the lists of the compact run format: indexing and iteration give Python ``int`` and
``float`` values, a ``Table`` row is a sequence of ints, so ``servesim.compact``'s readers and
the full-format writer take them as they are; the run-file writer (``grader.jsonio``) encodes
them a block at a time (``json_blocks``), to the same text as the lists they stand for.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported by the functions that use it, when they are called: a
    import numpy as np  # run that never needs it (``plainrun``) never pays for importing it


def floats(values=()) -> array:
    """A float column (``array('d')``) of ``values`` (an iterable or a numpy array)."""
    if _is_ndarray(values):
        import numpy as np

        column = array("d")
        column.frombytes(np.ascontiguousarray(values, dtype=np.float64).tobytes())
        return column
    return array("d", values)


def ints(values=()) -> array:
    """An int column (``array('q')``) of ``values`` (an iterable or a numpy array)."""
    if _is_ndarray(values):
        import numpy as np

        column = array("q")
        column.frombytes(np.ascontiguousarray(values, dtype=np.int64).tobytes())
        return column
    return array("q", values)


def _is_ndarray(values) -> bool:
    numpy = sys.modules.get("numpy")  # not imported: it cannot be a numpy array
    return numpy is not None and isinstance(values, numpy.ndarray)


def zeros(count: int) -> array:
    """An int column of ``count`` zeros."""
    return array("q", bytes(8 * count))


def view(column: array) -> np.ndarray:
    """A numpy view of an ``array`` column (no copy; do not resize the column while it lives)."""
    import numpy as np

    return np.frombuffer(column, dtype=np.float64 if column.typecode == "d" else np.int64)


class Table:
    """Rows of ``width`` ints in one flat ``array('q')``, read as a list of rows.

    ``table[i]`` is row ``i`` (a sequence of ``width`` ints), ``table[a:b]`` the rows ``a`` to
    ``b`` as a ``Table``, iteration gives each row as a tuple; ``numpy.asarray(table)`` is a
    ``(rows, width)`` int64 view. Rows are added with ``add``.
    """

    __slots__ = ("flat", "width")

    def __init__(self, width: int, flat: array | None = None):
        self.width = width
        self.flat = array("q") if flat is None else flat

    @classmethod
    def of(cls, rows: np.ndarray) -> Table:
        """The table of a ``(rows, width)`` numpy array."""
        return cls(rows.shape[1], ints(rows.reshape(-1)))

    def add(self, *row: int) -> None:
        self.flat.extend(row)

    def set(self, row: int, column: int, value: int) -> None:
        self.flat[row * self.width + column] = value

    def column(self, column: int) -> np.ndarray:
        """Column ``column`` of every row (a numpy view)."""
        import numpy as np

        return np.asarray(self)[:, column]

    def column_values(self, column: int) -> array:
        """Column ``column`` of every row, as an ``array`` (``servesim.table`` reads it)."""
        return self.flat[column :: self.width]

    def __len__(self) -> int:
        return len(self.flat) // self.width

    def __getitem__(self, at):
        w = self.width
        if isinstance(at, slice):
            start, stop, step = at.indices(len(self))
            if step != 1:
                raise ValueError("Table slices have step 1")
            return Table(w, self.flat[start * w : max(start, stop) * w])
        if at < 0:
            at += len(self)
        if not 0 <= at < len(self):
            raise IndexError("Table row out of range")
        return self.flat[at * w : at * w + w]

    def __iter__(self) -> Iterator[tuple[int, ...]]:
        return zip(*[iter(self.flat)] * self.width)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        import numpy as np

        rows = np.frombuffer(self.flat, dtype=np.int64).reshape(-1, self.width)
        return rows if dtype is None else rows.astype(dtype, copy=False)

    def __eq__(self, other) -> bool:
        if isinstance(other, Table):
            return self.width == other.width and self.flat == other.flat
        return NotImplemented

    __hash__ = None  # mutable, like the list it stands for

    def tolist(self) -> list[list[int]]:
        return [list(row) for row in self]

    def json_blocks(self, rows: int) -> Iterator[list[tuple[int, ...]]]:
        """The rows (tuples, which JSON writes as lists), ``rows`` at a time (what the run-file
        writer encodes)."""
        w = self.width
        for at in range(0, len(self), rows):  # rows cut from one list of ints, all in C; a
            values = self.flat[at * w : (at + rows) * w].tolist()  # tuple is written as a list
            yield list(zip(*[iter(values)] * w))


def json_blocks(column: array, size: int) -> Iterator[list]:
    """An ``array`` column as lists of ``size`` values (Python floats or ints)."""
    for at in range(0, len(column), size):
        yield column[at : at + size].tolist()
