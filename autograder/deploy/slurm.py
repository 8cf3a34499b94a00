"""Grade on a Slurm cluster: a driver job runs the grader, Dask workers are Slurm jobs (dask-jobqueue).

    pip install -e '.[grading]' dask-jobqueue
    python -m autograder.deploy.slurm --workers 8 [--partition P] [--account A] \\
        -- SUBMISSIONS 01-why-tensors [other `grade` options]

Run it on a login or submit node, from the course's repository, on a shared filesystem that the
compute nodes see at the same path (every job runs this repository's `.venv`, and bubblewrap
must be installed on the compute nodes: workers without it refuse to grade). Nothing is computed
on the login node, which many centres forbid: the command writes a **driver job**
(``<workdir>/slurm-driver.sbatch``) and submits it with ``sbatch``, then exits, printing the job
id and its log (``<workdir>/slurm-driver-<jobid>.out``). The driver job, on a compute node, runs
this module again with ``--in-job``: the Dask scheduler, with TLS (certificates made for this
run, written to a 0700 folder in the grading folder that the workers read); ``--workers`` Slurm
jobs of ``CORES_PER_WORKER`` cores each, submitted from the job (Slurm allows ``sbatch`` on
compute nodes unless your centre says otherwise: then run ``--in-job`` inside an ``salloc``);
the solutions' reference run; and ``python -m autograder grade ... --scheduler`` against it.
Outcomes are recorded by the driver, in the gradebook. The worker jobs are cancelled at the end.
``--print`` writes the driver script to standard output instead of submitting it.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
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


DRIVER_CORES = 2   # the driver job: the scheduler, the gradebook writer, the reference run


def driver_script(argv: list[str], *, walltime: str, workdir: Path, partition: str | None,
                  account: str | None) -> str:
    """The driver job's sbatch script: this module again, ``--in-job``, with ``argv``."""
    lines = ["#!/usr/bin/env bash", "#SBATCH -J tio-grading-driver",
             f"#SBATCH --cpus-per-task={DRIVER_CORES}",
             f"#SBATCH --mem={DRIVER_CORES * MEMORY_PER_NOTEBOOK_GIB + 2}G",
             f"#SBATCH -t {walltime}", f"#SBATCH -o {workdir}/slurm-driver-%j.out"]
    lines += [f"#SBATCH -p {partition}"] if partition else []
    lines += [f"#SBATCH -A {account}"] if account else []
    lines += ["set -euo pipefail", f"cd {shlex.quote(str(REPO))}",
              shlex.join(["exec", sys.executable, "-m", "autograder.deploy.slurm", "--in-job",
                          *argv])]
    return "\n".join(lines) + "\n"


def submit(script: str, workdir: Path) -> int:
    """Write the driver script and ``sbatch`` it; a clear message where there is no Slurm."""
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "slurm-driver.sbatch"
    path.write_text(script)
    if shutil.which("sbatch") is None:
        print(f"error: `sbatch` is not on PATH: run this on a Slurm login node. The driver "
              f"script is in {path} (submit it with `sbatch {path}`).", file=sys.stderr)
        return 2
    done = subprocess.run(["sbatch", "--parsable", str(path)], capture_output=True, text=True)
    if done.returncode != 0:
        print(f"error: sbatch refused {path}: {done.stderr.strip()}", file=sys.stderr)
        return 2
    job = done.stdout.strip().split(";")[0]
    print(f"Submitted the grading driver as Slurm job {job}; it runs the scheduler, the workers' "
          f"jobs and the grading. Log: {workdir}/slurm-driver-{job}.out; results in {workdir}.")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, required=True, help="Slurm jobs (Dask workers)")
    p.add_argument("--cores", type=int, default=CORES_PER_WORKER)
    p.add_argument("--memory-gib", type=int, default=None)
    p.add_argument("--walltime", default=WALLTIME)
    p.add_argument("--partition")
    p.add_argument("--account")
    p.add_argument("--interface", help="network interface the workers reach this node on (ib0...)")
    p.add_argument("--workdir", type=Path, default=REPO / ".grading")
    p.add_argument("--in-job", action="store_true",
                   help="run the scheduler and the grader here (inside the driver job)")
    p.add_argument("--print", action="store_true", help="print the driver job's script, submit nothing")
    p.add_argument("grade", nargs=argparse.REMAINDER, help="-- then `grade`'s arguments")
    args = p.parse_args(argv)
    grade_args = args.grade[1:] if args.grade[:1] == ["--"] else args.grade
    if not grade_args:
        p.error("give `grade`'s arguments after `--`: SUBMISSIONS [ASSIGNMENT ...] [options]")
    if not args.in_job:
        workdir = args.workdir.resolve()
        forwarded = [a for a in argv if a != "--print"]
        cut = forwarded.index("--") + 1 if "--" in forwarded else len(forwarded) - len(grade_args)
        if not forwarded[cut].startswith("-"):   # SUBMISSIONS: the job starts in the repository
            forwarded[cut] = str(Path(forwarded[cut]).resolve())
        if "--workdir" not in forwarded:
            forwarded[:0] = ["--workdir", str(workdir)]
        script = driver_script(forwarded, walltime=args.walltime, workdir=workdir,
                               partition=args.partition, account=args.account)
        if args.print:
            sys.stdout.write(script)
            return 0
        return submit(script, workdir)
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
