"""The first code every sandboxed child runs (copied into the case folder as ``NAME``):

    python -I -S -B _infralab_confine.py SCRIPT ARG...

It confines the process, then runs ``SCRIPT`` (the runner) as ``__main__`` with ``ARG...``:

- ``PR_SET_PDEATHSIG``: the child dies with the grader process that started it (bubblewrap
  does the same with ``--die-with-parent``; without bubblewrap this is the only tie);
- ``PR_SET_NO_NEW_PRIVS`` and a seccomp filter, inherited by every process the child makes and
  impossible to lift, that refuses (``EPERM``) every system call creating a kernel object which
  would outlive the child's processes or hold memory that its address-space limit does not
  count (``DENIED``): System V shared memory, message queues and semaphores, POSIX message
  queues, memfds, keys, io_uring, userfaultfd, perf events, BPF, and new namespaces or mounts
  (a user namespace of its own could mount a tmpfs of any size). ``clone3`` gets ``ENOSYS``
  (its flags cannot be inspected; the C library falls back to ``clone``, whose namespace
  flags are refused). Any other architecture or ABI than the host's native one is refused.

Standard library only; it must not import anything from the grader. An architecture without a
table here, or a kernel that refuses the filter, ends the child with ``EXIT_UNCONFINED`` and
one line on stderr before any submission code runs (``host`` probes this once and refuses to
grade).
"""

import ctypes
import os
import signal
import struct
import sys

NAME = "_infralab_confine.py"  # its name in the case folder
EXIT_UNCONFINED = 97

PR_SET_PDEATHSIG, PR_SET_SECCOMP, PR_SET_NO_NEW_PRIVS = 1, 22, 38
SECCOMP_MODE_FILTER = 2
RET_ALLOW, RET_ERRNO, RET_KILL = 0x7FFF0000, 0x00050000, 0x80000000
EPERM, ENOSYS = 1, 38
CLONE_NEW_FLAGS = 0x7E020080  # NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWTIME
X32_BIT = 0x40000000

DENIED_BY_KIND = {  # what each group of refused system calls would let a child make
    "System V shared memory": ("shmget", "shmat", "shmctl"),
    "System V semaphores": ("semget", "semop", "semtimedop", "semctl"),
    "System V message queues": ("msgget", "msgsnd", "msgrcv", "msgctl"),
    "POSIX message queues": (
        "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr",
    ),
    "memory files": ("memfd_create", "memfd_secret"),
    "keys": ("add_key", "request_key", "keyctl"),
    "kernel-side buffers": (
        "io_uring_setup", "io_uring_enter", "io_uring_register", "userfaultfd",
        "perf_event_open", "bpf",
    ),
    "namespaces and mounts": (
        "unshare", "setns", "mount", "umount2", "pivot_root", "open_tree", "move_mount",
        "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
    ),
}  # fmt: skip
DENIED = [name for names in DENIED_BY_KIND.values() for name in names]

# (audit architecture, syscall numbers) of each supported machine (asm/unistd_64.h, and the
# generic table asm-generic/unistd.h for arm64).
TABLES = {
    "x86_64": (
        0xC000003E,
        {
            "shmget": 29, "shmat": 30, "shmctl": 31, "clone": 56, "semget": 64, "semop": 65,
            "semctl": 66, "msgget": 68, "msgsnd": 69, "msgrcv": 70, "msgctl": 71,
            "pivot_root": 155, "mount": 165, "umount2": 166, "semtimedop": 220,
            "mq_open": 240, "mq_unlink": 241, "mq_timedsend": 242, "mq_timedreceive": 243,
            "mq_notify": 244, "mq_getsetattr": 245, "add_key": 248, "request_key": 249,
            "keyctl": 250, "unshare": 272, "perf_event_open": 298, "setns": 308,
            "memfd_create": 319, "bpf": 321, "userfaultfd": 323,
            "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
            "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431,
            "fsmount": 432, "fspick": 433, "clone3": 435, "mount_setattr": 442,
            "memfd_secret": 447,
        },
    ),
    "aarch64": (
        0xC00000B7,
        {
            "umount2": 39, "mount": 40, "pivot_root": 41, "unshare": 97, "mq_open": 180,
            "mq_unlink": 181, "mq_timedsend": 182, "mq_timedreceive": 183, "mq_notify": 184,
            "mq_getsetattr": 185, "msgget": 186, "msgctl": 187, "msgrcv": 188, "msgsnd": 189,
            "semget": 190, "semctl": 191, "semtimedop": 192, "semop": 193, "shmget": 194,
            "shmctl": 195, "shmat": 196, "add_key": 217, "request_key": 218, "keyctl": 219,
            "clone": 220, "perf_event_open": 241, "setns": 268, "memfd_create": 279,
            "bpf": 280, "userfaultfd": 282, "io_uring_setup": 425, "io_uring_enter": 426,
            "io_uring_register": 427, "open_tree": 428, "move_mount": 429, "fsopen": 430,
            "fsconfig": 431, "fsmount": 432, "fspick": 433, "clone3": 435,
            "mount_setattr": 442, "memfd_secret": 447,
        },
    ),
}  # fmt: skip

# classic BPF opcodes
LD_ABS_W, JEQ_K, JGE_K, JSET_K, RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
NR, ARCH, ARG0_LOW = 0, 4, 16  # offsets in struct seccomp_data (little-endian)


def program(machine):
    """The filter for ``machine`` (``os.uname().machine``) as a list of
    (code, jump if true, jump if false, k) instructions; KeyError for an unknown machine."""
    arch, numbers = TABLES[machine]
    denied = [numbers[name] for name in DENIED]
    head = [(LD_ABS_W, 0, 0, ARCH), (JEQ_K, 1, 0, arch), (RET_K, 0, 0, RET_KILL)]
    head.append((LD_ABS_W, 0, 0, NR))
    if machine == "x86_64":
        head.append((JGE_K, 0, 1, X32_BIT))  # the x32 ABI: refused as a whole
        head.append((RET_K, 0, 0, RET_KILL))
    checks = [(JEQ_K, None, 0, nr) for nr in denied]  # None: to the EPERM return
    tail = [
        (JEQ_K, 1, 0, numbers["clone3"]),
        (JEQ_K, 1, 3, numbers["clone"]),
        (RET_K, 0, 0, RET_ERRNO | ENOSYS),
        (LD_ABS_W, 0, 0, ARG0_LOW),
        (JSET_K, 1, 0, CLONE_NEW_FLAGS),
        (RET_K, 0, 0, RET_ALLOW),
        (RET_K, 0, 0, RET_ERRNO | EPERM),
    ]
    deny_at = len(checks) + len(tail) - 1  # from the first check
    body = [(c, deny_at - i - 1, jf, k) if jt is None else (c, jt, jf, k)
            for i, (c, jt, jf, k) in enumerate(checks)]  # fmt: skip
    return head + body + tail


def apply(machine=None):
    """Confine this process (see the module's docstring); OSError when the kernel refuses,
    KeyError for a machine without a table."""
    prog = program(machine or os.uname().machine)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong,
                           ctypes.c_ulong]  # fmt: skip
    parent = os.getppid()
    _check(libc, libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, None, 0, 0))
    if os.getppid() != parent:  # the grader died before the tie was made
        os._exit(EXIT_UNCONFINED)
    _check(libc, libc.prctl(PR_SET_NO_NEW_PRIVS, 1, None, 0, 0))
    code = b"".join(struct.pack("=HBBI", *op) for op in prog)
    filters = ctypes.create_string_buffer(code)

    class Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = Fprog(len(prog), ctypes.addressof(filters))
    _check(libc, libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0))


def _check(libc, result):
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))


def main():
    try:
        apply()
    except (OSError, KeyError) as exc:
        sys.stderr.write(f"sandbox: cannot confine the child ({exc!r})\n")
        sys.stderr.flush()
        os._exit(EXIT_UNCONFINED)
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), sys.argv[1])
    sys.argv = sys.argv[1:]
    with open(script, "rb") as handle:
        code = compile(handle.read(), script, "exec")
    exec(code, {"__name__": "__main__", "__file__": script, "__builtins__": __builtins__})


if __name__ == "__main__":
    main()
