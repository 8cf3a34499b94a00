"""A Dask cluster on Kubernetes for grading (dask-kubernetes' operator): the spec, as YAML.

    docker build -f autograder/deploy/Dockerfile -t REGISTRY/tio-grading:TAG . && docker push ...
    pip install -e '.[grading]' dask-kubernetes
    python -m autograder.deploy.kubernetes --image REGISTRY/tio-grading:TAG --workers 8 > cluster.yaml
    helm install --repo https://helm.dask.org --create-namespace -n dask-operator \
        --generate-name dask-kubernetes-operator      # once per cluster: the Dask operator
    kubectl apply -f cluster.yaml
    kubectl port-forward svc/tio-grading-scheduler 8786:8786 &
    python -m autograder grade SUBMISSIONS 01-why-tensors --scheduler tcp://localhost:8786

``dask-cluster.yaml`` beside this file is the output for the defaults (tests check it matches).
The image is the course's grading image, ``autograder/deploy/Dockerfile`` (the course's
environment, Debian's ``bubblewrap``, ``'.[grading]'``), built from the same commit as the
grader's checkout. The containers run ``dask scheduler`` and ``dask worker``: the ``dask`` CLI of
the pinned ``distributed`` (the old ``dask-worker``/``dask-scheduler`` scripts are gone;
tests/test_grading_cluster.py runs these very argument lists against a local scheduler).
Workers run as the image's unprivileged user (1000); bubblewrap then needs, in the pod:

* unprivileged user namespaces on the nodes, and a seccomp/AppArmor profile that lets it create
  them (``Unconfined`` below, or a profile of your own that allows them);
* a ``/proc`` it may mount anew: the sandbox mounts a fresh ``/proc`` for its PID namespace (a
  bound one would show every other kernel of the pod), and the kernel refuses that under the
  runtime's default *masked* ``/proc``. So the worker pod runs in a user namespace of its own
  (``hostUsers: false``) with ``procMount: Unmasked``: Kubernetes 1.31 or later, whose
  ``UserNamespacesSupport`` and ``ProcMountType`` features are on by default from 1.33. Where
  the pod's ``/proc`` stays masked, each worker refuses to grade and says so (``grade`` exits 2:
  "this pod's /proc is masked").

No service-account token is mounted. A worker that cannot sandbox refuses every notebook:
nothing is graded unsandboxed.
"""

from __future__ import annotations

import argparse
import copy
import sys

from . import CORES_PER_WORKER, MEMORY_PER_NOTEBOOK_GIB

NAME = "tio-grading"
IMAGE = "registry.example.edu/tio-grading:latest"   # a placeholder: build and push your own
REPO_IN_IMAGE = "/srv/tensors-inside-out"
USER = 1000   # repo2docker's default user (jovyan)


def cluster_spec(image: str = IMAGE, workers: int = 2, cores: int = CORES_PER_WORKER,
                 memory_gib: int | None = None) -> dict:
    """The DaskCluster resource: ``make_cluster_spec`` from the grading image, hardened."""
    from dask_kubernetes.operator import make_cluster_spec

    memory = f"{memory_gib or cores * MEMORY_PER_NOTEBOOK_GIB}Gi"
    resources = {"requests": {"cpu": str(cores), "memory": memory},
                 "limits": {"cpu": str(cores), "memory": memory}}
    spec = make_cluster_spec(name=NAME, image=image, n_workers=workers, resources=resources,
                             worker_command="dask worker")
    security = {"runAsUser": USER, "runAsGroup": USER, "runAsNonRoot": True,
                "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                # bubblewrap creates user, PID, network and mount namespaces: the runtime's
                # default seccomp profile and AppArmor's userns restriction refuse that.
                "seccompProfile": {"type": "Unconfined"},
                "appArmorProfile": {"type": "Unconfined"}}
    for role in ("worker", "scheduler"):
        pod = spec["spec"][role]["spec"]
        pod["automountServiceAccountToken"] = False
        (container,) = pod["containers"]
        container["workingDir"] = REPO_IN_IMAGE
        container.pop("env", None)   # null in the generated spec
        if role == "worker":
            container["securityContext"] = {**copy.deepcopy(security), "procMount": "Unmasked"}
            pod["hostUsers"] = False   # procMount Unmasked needs the pod's own user namespace
            args = container["args"]
            # One process, ``cores`` threads: one notebook per thread, each in its own kernel.
            args[2:2] = ["--nworkers", "1", "--nthreads", str(cores)]
        else:
            container["securityContext"] = {k: v for k, v in security.items()
                                            if k not in ("seccompProfile", "appArmorProfile")}
            # The operator writes the old script name; the pinned distributed has `dask scheduler`.
            container["args"] = ["dask", "scheduler", *container["args"][1:]]
            # A scheduler takes little: the spec's default is the worker's size.
            container["resources"] = {"requests": {"cpu": "1", "memory": "2Gi"},
                                      "limits": {"cpu": "1", "memory": "2Gi"}}
    return spec


def to_yaml(spec: dict) -> str:
    import yaml

    return ("# Generated by `python -m autograder.deploy.kubernetes` (autograder/deploy/kubernetes.py)\n"
            + yaml.safe_dump(spec, sort_keys=False))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--image", default=IMAGE)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--cores", type=int, default=CORES_PER_WORKER)
    p.add_argument("--memory-gib", type=int, default=None)
    args = p.parse_args(argv)
    sys.stdout.write(to_yaml(cluster_spec(args.image, args.workers, args.cores, args.memory_gib)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
