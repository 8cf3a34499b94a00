import sys
from pathlib import Path

# Tests import their helpers (course.py, nbrun.py, wrong_answers/) by plain name.
sys.path.insert(0, str(Path(__file__).resolve().parent))
