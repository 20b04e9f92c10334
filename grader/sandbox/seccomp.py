"""The seccomp filter every sandboxed child runs under (installed by ``confine``, in the child,
before any of the submission's code): a classic BPF program, built here in the grader.

It refuses (``EPERM``) every system call that creates a kernel object which would outlive the
child's processes or hold memory that its address-space limit does not count
(``DENIED_BY_KIND``), and new namespaces or mounts (a user namespace of its own could mount a
tmpfs of any size). ``clone3`` gets ``ENOSYS`` (its flags cannot be inspected; the C library
falls back to ``clone``, whose namespace flags are refused). Any other architecture or ABI than
the host's native one (i386 ``int 0x80``, x32) kills the process. Everything else is allowed:
the filter is a deny list, so a system call that a later kernel adds is allowed until it is
listed here.
"""

from __future__ import annotations

import functools
import os
import struct

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


def program(machine: str) -> list[tuple[int, int, int, int]]:
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


@functools.cache
def filter_bytes(machine: str | None = None) -> bytes:
    """The filter for ``machine`` (default: this host's) as the kernel takes it (``struct
    sock_filter`` entries); KeyError for a machine without a table."""
    ops = program(machine or os.uname().machine)
    return b"".join(struct.pack("=HBBI", *op) for op in ops)
