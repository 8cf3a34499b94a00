"""The sandbox's seccomp filter: system calls a notebook kernel never needs, refused.

Contract: :func:`write_filter` writes the BPF program (for bubblewrap's ``--seccomp FD``) into
a folder the caller owns and removes (each kernel's private work folder, so the file lives and
dies with the grading it serves, even in a worker process that exits without ``atexit``) and
returns its path, or raises :class:`SeccompUnavailable` saying what to install.
It is built with libseccomp (Debian's ``libseccomp2``, loaded through ``ctypes``), which knows
every architecture's system call numbers and kills a call made through another ABI (a 32-bit
``int 0x80`` on x86-64) instead of letting it slip past the numbers of the native one.

Everything not listed is allowed: a kernel runs Python, torch, compilers and threads, and an
allow-list of system calls for that would break with every new glibc. What is refused is what
escapes or reaches the host: mounts and namespaces, tracing other processes, the kernel
keyring, BPF, perf events, ``userfaultfd`` (a race-widening tool), ``io_uring`` (its requests
bypass seccomp), modules, ``reboot``, device nodes, and setuid/setgid bits on any file
(``chmod`` and friends, or ``open``/``creat`` creating one). Each is answered ``EPERM``,
so a library that probes for a feature sees "not permitted" and carries on.
``memfd_create`` is answered ``ENOSYS`` ("not implemented": asmjit, inside torch, then falls
back to plain memory): a memfd holds memory outside every mapping, which the fallback memory
bound cannot see (:mod:`autograder.sandbox.cgroup`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import functools
import os
import tempfile
from pathlib import Path

SCMP_ACT_ALLOW = 0x7FFF0000
SCMP_CMP_MASKED_EQ = 7


def _errno(code: int) -> int:
    return 0x00050000 | (code & 0xFFFF)


class _ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int),
                ("datum_a", ctypes.c_uint64), ("datum_b", ctypes.c_uint64)]


class SeccompUnavailable(RuntimeError):
    """libseccomp is missing or refused the filter; the message says what to install."""


# Refused outright.
DENIED = (
    "mount", "umount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen",
    "fsconfig", "fsmount", "fspick", "mount_setattr", "unshare", "setns",
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
    "reboot", "swapon", "swapoff", "acct", "quotactl", "syslog", "uselib", "vhangup",
    "open_by_handle_at", "name_to_handle_at", "lookup_dcookie", "fanotify_init",
    "mknod", "mknodat", "personality",
)
SUID_BITS = (0o4000, 0o2000)  # S_ISUID, S_ISGID
# (system call, index of its mode argument): refused when the mode carries a SUID_BITS bit.
MODE_ARGS = (("chmod", 1), ("fchmod", 1), ("fchmodat", 2), ("fchmodat2", 2),
             ("creat", 1), ("open", 2), ("openat", 3))
# clone's flags (argument 0) that make a new namespace: refused; clone3 hides its flags in
# memory seccomp cannot read, so it is refused with ENOSYS and glibc falls back to clone.
# NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWTIME:
CLONE_NAMESPACES = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000,
                    0x40000000, 0x00000080)


@functools.lru_cache(maxsize=1)
def _library() -> ctypes.CDLL:
    name = ctypes.util.find_library("seccomp") or "libseccomp.so.2"
    try:
        lib = ctypes.CDLL(name, use_errno=True)
    except OSError as err:
        raise SeccompUnavailable(f"libseccomp is not installed ({err}); Debian/Ubuntu: "
                                 "apt-get install libseccomp2") from None
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int,
                                           ctypes.c_uint, ctypes.POINTER(_ArgCmp)]
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    return lib


def _rule(lib: ctypes.CDLL, ctx: int, action: int, name: str, *cmps: _ArgCmp) -> None:
    number = lib.seccomp_syscall_resolve_name(name.encode())
    if number < 0:
        return  # not a system call on this architecture (e.g. open on arm64)
    array = (_ArgCmp * len(cmps))(*cmps) if cmps else None
    rc = lib.seccomp_rule_add_array(ctx, action, number, len(cmps), array)
    if rc < 0:
        raise SeccompUnavailable(f"libseccomp refused the rule for {name} ({os.strerror(-rc)})")


def _masked(arg: int, bit: int) -> _ArgCmp:
    return _ArgCmp(arg, SCMP_CMP_MASKED_EQ, bit, bit)


def _export(fd: int) -> None:
    """Write the filter's BPF program to the open descriptor ``fd``."""
    lib = _library()
    ctx = lib.seccomp_init(SCMP_ACT_ALLOW)
    if not ctx:
        raise SeccompUnavailable("libseccomp could not create a filter")
    deny = _errno(errno.EPERM)
    try:
        for name in DENIED:
            _rule(lib, ctx, deny, name)
        _rule(lib, ctx, _errno(errno.ENOSYS), "clone3")
        _rule(lib, ctx, _errno(errno.ENOSYS), "memfd_create")
        for flag in CLONE_NAMESPACES:
            _rule(lib, ctx, deny, "clone", _masked(0, flag))
        for name, arg in MODE_ARGS:
            for bit in SUID_BITS:
                _rule(lib, ctx, deny, name, _masked(arg, bit))
        rc = lib.seccomp_export_bpf(ctx, fd)
        if rc < 0:
            raise SeccompUnavailable(f"libseccomp could not export the filter ({os.strerror(-rc)})")
    finally:
        lib.seccomp_release(ctx)


@functools.lru_cache(maxsize=1)
def program() -> bytes:
    """The filter's BPF program, built once per process (libseccomp exports to a descriptor)."""
    with tempfile.TemporaryFile() as fh:  # unlinked at once: nothing of it stays on disk
        _export(fh.fileno())
        fh.seek(0)
        return fh.read()


def write_filter(folder: Path) -> Path:
    """``folder/seccomp.bpf``: the program, readable by its owner only; returns its path."""
    path = folder / "seccomp.bpf"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o400)
    with os.fdopen(fd, "wb") as fh:
        fh.write(program())
    return path
