"""Which device the demos run on, and a one-line banner that says so.

Every notebook starts with ``device = tc.setup()``. CPU-only is the common case
(laptops, Binder, free Colab), so nothing in the course may *require* CUDA: a demo
that only makes sense on a GPU checks :func:`has_cuda` and takes a CPU path or says
why it is skipped.
"""

from __future__ import annotations

import logging
import os
import platform

import torch

__all__ = ["pick_device", "has_cuda", "describe", "banner", "setup", "torch_build", "why_cpu"]

# Set TENSORCOURSE_DEVICE=cpu to force the CPU path on a GPU machine (useful to see
# what CPU-only learners see, and how tests exercise the CPU branch on any machine).
_ENV_VAR = "TENSORCOURSE_DEVICE"


def has_cuda() -> bool:
    """True when a CUDA device is usable *and* not disabled by ``TENSORCOURSE_DEVICE=cpu``."""
    if os.environ.get(_ENV_VAR, "").strip().lower() == "cpu":
        return False
    return torch.cuda.is_available()


def pick_device(prefer: str | None = None) -> torch.device:
    """Return ``cuda`` when available, else ``cpu``.

    ``prefer`` (or the ``TENSORCOURSE_DEVICE`` environment variable) may force
    ``"cpu"`` or ``"cuda"``; asking for CUDA where there is none raises a
    ``RuntimeError`` that says what to do instead of silently falling back.
    """
    choice = (prefer or os.environ.get(_ENV_VAR, "") or "auto").strip().lower()
    if choice not in {"auto", "cpu", "cuda"}:
        raise ValueError(
            f"Unknown device choice {choice!r}: use 'auto', 'cpu' or 'cuda' "
            f"(argument `prefer` or environment variable {_ENV_VAR})."
        )
    if choice == "cpu":
        return torch.device("cpu")
    if choice == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(
            "CUDA was requested but torch.cuda.is_available() is False. "
            "On Colab pick Runtime > Change runtime type > GPU; elsewhere use "
            "pick_device('cpu') or unset " + _ENV_VAR + "."
        )
    return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")


def torch_build() -> str:
    """What this torch can run on: ``"cuda"`` (a CUDA build that sees a GPU), ``"cuda-no-driver"``
    (a CUDA build on a machine without a usable NVIDIA GPU or driver: PyPI's default torch on a
    Linux laptop, Colab without a GPU), ``"mps"`` (Apple silicon) or ``"cpu-only"``.

    The distinction matters beyond the device choice: GPU-only calls fail differently on a
    CUDA build without a driver ("Found no NVIDIA driver") than on a CPU-only build.
    """
    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cuda-no-driver" if torch.version.cuda else "cpu-only"


def why_cpu() -> str:
    """Why the demos run on the CPU here, in words a learner can act on ("" when they do not)."""
    if os.environ.get(_ENV_VAR, "").strip().lower() == "cpu":
        return f"{_ENV_VAR}=cpu asks for the CPU"
    build = torch_build()
    if build == "cuda":
        return ""
    if build == "cuda-no-driver":
        return (f"this torch is a CUDA {torch.version.cuda} build, but no NVIDIA GPU or driver is "
                "usable here")
    if build == "mps":
        return ("Apple's GPU (MPS) is here, but the course's GPU demos are CUDA's (pinned copies, "
                "streams, CUDA memory), so they use the CPU")
    return "this torch is a CPU-only build" if not torch.backends.cuda.is_built() else "no GPU here"


def describe(device: torch.device | str | None = None) -> str:
    """A short description of the machine behind ``device``, printed next to every timing."""
    dev = torch.device(device) if device is not None else pick_device()
    if dev.type == "cuda":
        index = dev.index if dev.index is not None else torch.cuda.current_device()
        name = torch.cuda.get_device_name(index)
        return f"{name} (cuda:{index}), torch {torch.__version__}, CUDA {torch.version.cuda}"
    cpu = platform.processor() or platform.machine() or "unknown CPU"
    return f"CPU {cpu}, {torch.get_num_threads()} threads, torch {torch.__version__}"


def banner(device: torch.device) -> str:
    """One line saying which device the demos use and what that means for them."""
    if device.type == "cuda":
        return (
            f"Demos run on the GPU: {describe(device)}. "
            "GPU-only demos (pinned copies, streams, CUDA memory) run for real."
        )
    reason = why_cpu() or "asked for"
    return (
        f"Demos run on the CPU ({reason}): {describe(device)}. "
        "GPU-only demos take their CPU path or say why they are skipped; "
        "every exercise works the same."
    )


def setup(prefer: str | None = None, seed: int | None = 0) -> torch.device:
    """Pick the device, seed torch's generators, print the banner, return the device.

    Seeding makes the demo outputs the same from run to run, so the prose can
    describe them; pass ``seed=None`` to leave the generators alone.
    """
    device = pick_device(prefer)
    if torch_build() == "cuda-no-driver":
        # The banner says it once: torch.utils.cpp_extension would say it again on stderr (a red
        # box, "No CUDA runtime is found") wherever torch.utils.benchmark or torch.compile's C++
        # compiler loads it on a machine with a CUDA toolkit but no GPU (Colab without a GPU).
        logging.getLogger("torch.utils.cpp_extension").setLevel(logging.ERROR)
    if seed is not None:
        torch.manual_seed(seed)
    print(banner(device))
    return device
