"""Deployment recipes for grading on a Dask cluster (``grade --scheduler``): copy and adapt.

- :mod:`autograder.deploy.slurm`: a ``dask-jobqueue`` ``SLURMCluster`` (one Slurm job per Dask
  worker), with TLS, and the grader run against it;
- :mod:`autograder.deploy.kubernetes`: a ``dask-kubernetes`` ``DaskCluster`` spec from the grading
  image; ``dask-cluster.yaml`` beside this file is its output for the defaults.

Both need ``pip install -e '.[grading]'`` plus ``dask-jobqueue`` or ``dask-kubernetes``: neither is
imported by the grader itself. See autograder/README.md, "Grading on a Dask cluster".
"""

# What one notebook needs while it is graded: one CPU, and memory for its kernel (torch and the
# learner's tensors) plus the worker's share. RLIMIT_AS (--memory, 6 GiB of address space)
# bounds each kernel; actual use is far lower: 2 GiB a notebook is generous for this course.
CORES_PER_WORKER = 4          # notebooks one worker grades at once (its threads)
MEMORY_PER_NOTEBOOK_GIB = 2
WALLTIME = "04:00:00"         # a Slurm job's limit; workers retire 10 minutes before it
