import sys
from pathlib import Path

# Tests import their helpers (course.py, nbrun.py, wrong_answers/) by plain name.
sys.path.insert(0, str(Path(__file__).resolve().parent))


def pytest_configure(config) -> None:
    """One reference cache per test run (autograder/pipeline/reference_cache.py), shared by its
    workers: each solution's reference run happens once per run, not once per grading test,
    and nothing is read from or left in the user's own cache."""
    import os
    import tempfile

    if not hasattr(config, "workerinput") and "TIO_REFERENCE_CACHE" not in os.environ:
        # The xdist workers start after this and inherit the variable.
        folder = tempfile.mkdtemp(prefix="tio-references-")
        os.environ["TIO_REFERENCE_CACHE"] = folder
        config._tio_reference_cache = folder


def pytest_unconfigure(config) -> None:
    import os
    import shutil

    folder = getattr(config, "_tio_reference_cache", None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)
        os.environ.pop("TIO_REFERENCE_CACHE", None)
