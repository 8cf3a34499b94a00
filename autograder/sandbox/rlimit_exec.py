"""Set resource limits, then ``exec`` a command: ``python -I -S rlimit_exec.py SPEC -- CMD...``.

Run as a script (isolated mode, no site), so it starts in milliseconds and imports nothing
from the environment. ``SPEC`` is
``as=BYTES,cpu=SECONDS,fsize=BYTES,nproc=N,nofile=N,core=BYTES[,fd=N:PATH]`` (each optional);
each limit is set as both soft and hard limit, so the limited process cannot raise it.
``nproc`` counts tasks (threads too) of the process's real user id. ``cg=HEX`` (repeatable:
a path, hex-encoded so that no character of it can break SPEC) is a ``cgroup.procs`` file this
process joins first, so that everything the command starts is inside the sandbox's group
(:mod:`autograder.sandbox.cgroup`); if it cannot, nothing runs. ``fd=N:PATH`` (last, so
``PATH`` may hold commas) opens ``PATH`` read-only as descriptor ``N``, inherited by the
command (bubblewrap's ``--seccomp N`` reads the filter from it). Exits 127 with a message when
the command cannot start.
"""

import os
import resource
import sys

_LIMITS = {"as": resource.RLIMIT_AS, "cpu": resource.RLIMIT_CPU,
           "fsize": resource.RLIMIT_FSIZE, "nproc": resource.RLIMIT_NPROC,
           "nofile": resource.RLIMIT_NOFILE, "core": resource.RLIMIT_CORE}


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        sys.stderr.write("usage: rlimit_exec.py SPEC -- COMMAND [ARGS...]\n")
        return 2
    # fd= comes last and its PATH runs to the end of SPEC: a folder name may hold commas.
    limits, _, descriptor = argv[0].partition("fd=")
    items = list(filter(None, limits.split(",")))
    for item in items:
        if item.startswith("cg="):
            path = bytes.fromhex(item[3:]).decode()
            try:
                with open(path, "w") as fh:
                    fh.write(str(os.getpid()))
            except OSError as err:
                sys.stderr.write(f"rlimit_exec: cannot join the sandbox's cgroup {path}: {err}\n")
                return 127
    if descriptor:
        number, _, path = descriptor.partition(":")
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        os.dup2(fd, int(number), inheritable=True)
        os.close(fd)
    for item in items:
        key, _, value = item.partition("=")
        if key == "cg":
            continue
        limit = int(value)
        resource.setrlimit(_LIMITS[key], (limit, limit))
    try:
        os.execvp(argv[2], argv[2:])
    except OSError as err:
        sys.stderr.write(f"rlimit_exec: cannot run {argv[2]}: {err}\n")
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
