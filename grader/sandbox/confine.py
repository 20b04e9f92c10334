"""The first code every sandboxed child runs (copied into the case folder as ``NAME``):

    python -I -S -B _infralab_confine.py FILTER SCRIPT ARG...

It confines the process, then runs ``SCRIPT`` (the runner) as ``__main__`` with ``ARG...``:

- ``PR_SET_PDEATHSIG``: the child dies with the grader process that started it (bubblewrap
  does the same with ``--die-with-parent``; without bubblewrap this is the only tie);
- ``PR_SET_NO_NEW_PRIVS`` and the seccomp filter ``FILTER`` (hex; ``seccomp.filter_bytes``),
  inherited by every process the child makes and impossible to lift.

Standard library only, and short: the child compiles this file at every start. A kernel that
refuses the filter ends the child with ``EXIT_UNCONFINED`` and one line on stderr before any
submission code runs (``host`` probes this once and refuses to grade).
"""

import ctypes
import os
import signal
import sys

NAME = "_infralab_confine.py"  # its name in the case folder
EXIT_UNCONFINED = 97
PR_SET_PDEATHSIG, PR_SET_SECCOMP, PR_SET_NO_NEW_PRIVS = 1, 22, 38
SECCOMP_MODE_FILTER = 2


class _Program(ctypes.Structure):  # struct sock_fprog
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def apply(program):
    """Confine this process under ``program`` (bytes of ``struct sock_filter``); OSError when
    the kernel refuses."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong,
                           ctypes.c_ulong]  # fmt: skip
    parent = os.getppid()
    _check(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, None, 0, 0))
    if os.getppid() != parent:  # the grader died before the tie was made
        os._exit(EXIT_UNCONFINED)
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, None, 0, 0))
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _Program(len(program) // 8, ctypes.addressof(buffer))
    _check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0))


def _check(result):
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))


def main():
    try:
        apply(bytes.fromhex(sys.argv[1]))
    except (OSError, ValueError, IndexError) as exc:
        sys.stderr.write(f"sandbox: cannot confine the child ({exc!r})\n")
        sys.stderr.flush()
        os._exit(EXIT_UNCONFINED)
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), sys.argv[2])
    sys.argv = sys.argv[2:]
    with open(script, "rb") as handle:
        code = compile(handle.read(), script, "exec")
    exec(code, {"__name__": "__main__", "__file__": script, "__builtins__": __builtins__})


if __name__ == "__main__":
    main()
