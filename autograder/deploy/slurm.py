"""Grade on a Slurm cluster: Dask workers as Slurm jobs (dask-jobqueue), the grader here.

    pip install -e '.[grading]' dask-jobqueue
    python -m autograder.deploy.slurm --workers 8 [--partition P] [--account A] \\
        -- SUBMISSIONS 01-why-tensors [other `grade` options]

Run it on a login or submit node, from the course's repository, on a shared filesystem that the
compute nodes see at the same path (the workers run this repository's `.venv`, and bubblewrap
must be installed on the compute nodes: workers without it refuse to grade). This process runs
the Dask scheduler, with TLS (certificates made for this run, written to a 0700 folder in the
grading folder that the workers read), submits ``--workers`` Slurm jobs of
``CORES_PER_WORKER`` cores each, and runs ``python -m autograder grade ... --scheduler`` against
it: outcomes are recorded here, in the gradebook. The Slurm jobs are cancelled at the end.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from . import CORES_PER_WORKER, MEMORY_PER_NOTEBOOK_GIB, WALLTIME

REPO = Path(__file__).resolve().parent.parent.parent


def _minutes(walltime: str) -> int:
    h, m, *_ = (int(x) for x in walltime.split(":"))
    return 60 * h + m


def security(folder: Path):
    """TLS for this run: a fresh CA and certificates (Security.temporary), also set as the
    process's Dask config so that the grader's Client uses them."""
    import dask
    from distributed.security import Security

    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    sec = Security.temporary()
    dask.config.set({"distributed.comm.require-encryption": True,
                     "distributed.comm.tls.ca-file": sec.tls_ca_file,
                     "distributed.comm.tls.client.cert": sec.tls_client_cert,
                     "distributed.comm.tls.client.key": sec.tls_client_key})
    return sec


def cluster(*, cores: int = CORES_PER_WORKER, memory_gib: int | None = None,
            walltime: str = WALLTIME, partition: str | None = None, account: str | None = None,
            secure_dir: Path | None = None, interface: str | None = None, host: str | None = None):
    """The SLURMCluster: one Dask worker per Slurm job, ``cores`` notebooks graded at once."""
    from dask_jobqueue import SLURMCluster

    memory_gib = memory_gib or cores * MEMORY_PER_NOTEBOOK_GIB
    lifetime = max(_minutes(walltime) - 10, 5)
    extra = {}
    if secure_dir is not None:
        extra = {"security": security(secure_dir), "shared_temp_directory": str(secure_dir),
                 "protocol": "tls://"}
    return SLURMCluster(
        cores=cores, processes=1, memory=f"{memory_gib}GiB", walltime=walltime,
        job_name="tio-grading", queue=partition, account=account,
        python=sys.executable,
        job_script_prologue=[f"cd {REPO}"],
        # Retire before Slurm's limit kills the job: its notebooks move elsewhere, uncounted as
        # failures (a kill mid-notebook would count against that notebook).
        worker_extra_args=["--lifetime", f"{lifetime}m", "--lifetime-stagger", "4m"],
        interface=interface, scheduler_options={"host": host} if host else {},
        **extra)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, required=True, help="Slurm jobs (Dask workers)")
    p.add_argument("--cores", type=int, default=CORES_PER_WORKER)
    p.add_argument("--memory-gib", type=int, default=None)
    p.add_argument("--walltime", default=WALLTIME)
    p.add_argument("--partition")
    p.add_argument("--account")
    p.add_argument("--interface", help="network interface the workers reach this node on (ib0...)")
    p.add_argument("--workdir", type=Path, default=REPO / ".grading")
    p.add_argument("grade", nargs=argparse.REMAINDER, help="-- then `grade`'s arguments")
    args = p.parse_args(argv)
    grade_args = args.grade[1:] if args.grade[:1] == ["--"] else args.grade
    from autograder.cli import main as autograder

    with cluster(cores=args.cores, memory_gib=args.memory_gib, walltime=args.walltime,
                 partition=args.partition, account=args.account, interface=args.interface,
                 secure_dir=args.workdir.resolve() / "tls") as c:
        c.scale(jobs=args.workers)
        print(f"Dask scheduler {c.scheduler_address}; {args.workers} Slurm job(s) submitted",
              file=sys.stderr)
        return autograder(["grade", *grade_args, "--workdir", str(args.workdir),
                           "--scheduler", c.scheduler_address])


if __name__ == "__main__":
    sys.exit(main())
