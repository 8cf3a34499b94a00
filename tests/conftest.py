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


# The longest test files (seconds of one worker's time in a full run on a 2-core machine, from
# `pytest --durations`), run first: `--dist loadfile` hands files to the workers in collection
# order, so a long file collected late ran while the other worker sat idle (stage 1 ended with
# minutes at half the machine). Longest first leaves only short files for the end. A file not
# listed keeps its place after these; the list is a schedule, never a skip.
LONGEST_FIRST = ["test_pipeline.py", "test_notebooks.py", "test_grading_attacks.py",
                 "test_report.py", "test_term.py", "test_grading_cluster.py",
                 "test_grading_sandbox.py"]


def pytest_collection_modifyitems(config, items) -> None:
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: order kept within
