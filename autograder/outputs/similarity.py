"""Similar answers: pairs of students whose answer cells are near-identical, for a human to read.

Fingerprints come from ``copydetect`` (winnowing over a normalized token stream: names,
whitespace and comments do not matter), never hand-written hashing. What this module adds is
the decision of which shared code is *evidence*:

* **The released stub is boilerplate**: its fingerprints are removed from every answer.
* **Common code is not evidence** (like MOSS's ``-m``): a fingerprint that more than
  ``common_share`` of the class (and at least ``common_min`` students) wrote for an exercise
  is how that exercise is solved (or commonly got wrong), and is removed too.
* **A one-liner is not enough**: a pair is flagged only when the distinctive code they share
  adds up to at least ``min_tokens`` normalized tokens over the assignment (one short
  canonical answer, which a few honest students may write alike, stays below it) **and**
  covers at least ``min_similarity`` of the smaller of their distinctive code.

Flagged is a prompt to look, never a verdict: the report shows each pair side by side with
the shared passages marked.

Contract: :func:`answers_of` reads the answer cells of every readable submitted notebook of
an assignment; :func:`similar_pairs` returns the flagged pairs, most shared code first.
"""

from __future__ import annotations

import io
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

K = 25          # copydetect's noise threshold: a match shorter than this many tokens never counts
WINDOW = 1      # winnowing window: every k-gram kept (classes are small enough)
MAX_CHARS = 32 * 1024  # of one answer, fingerprinted (a real answer is a few KiB)


@dataclass
class Shared:
    """One exercise's shared passages, as (start, end) character ranges of each answer."""

    grade_id: str
    source_a: str
    source_b: str
    ranges_a: list[tuple[int, int]] = field(default_factory=list)
    ranges_b: list[tuple[int, int]] = field(default_factory=list)


@dataclass
class Pair:
    a: str
    b: str
    tokens: int          # distinctive tokens the two share
    similarity: float    # tokens / the smaller distinctive size of the two
    shared: list[Shared] = field(default_factory=list)


def _releases(assignment: str) -> dict:
    import nbformat

    from ..course import NOTEBOOKS, notebook_names

    paths = {name: NOTEBOOKS / assignment / f"{name}.ipynb" for name in notebook_names(assignment)}
    return {name: nbformat.read(path, as_version=4) for name, path in paths.items() if path.is_file()}


def stubs_of(assignment: str) -> dict[str, str]:
    """``{answer grade_id: the released stub}``: what every student starts from."""
    from ..judge.answers import is_answer, meta

    return {meta(c)["grade_id"]: c.source for release in _releases(assignment).values()
            for c in release.cells if is_answer(c)}


def answers_of(workdir: Path, assignment: str) -> dict[str, dict[str, str]]:
    """``{student: {answer grade_id: source}}``: exactly what the grader graded, read from
    ``workdir/submitted`` with its own reader (:func:`autograder.judge.answers.read_answers`, cells
    matched to the release by grade id), so metadata a student edits cannot hide an answer.
    Unreadable files are left out (the grader reported them); each answer is cut at
    :data:`MAX_CHARS` for the fingerprints."""
    from ..judge.answers import read_answers

    found: dict[str, dict[str, str]] = {}
    submitted = workdir / "submitted"
    if not submitted.is_dir():
        return found
    releases = _releases(assignment)
    for folder in sorted(p for p in submitted.iterdir() if (p / assignment).is_dir()):
        cells: dict[str, str] = {}
        for name, release in releases.items():
            path = folder / assignment / f"{name}.ipynb"
            try:
                answers = read_answers(path.read_bytes(), release)
            except Exception:  # noqa: BLE001 - whatever a file holds, the report goes on
                continue
            cells.update({gid: src[:MAX_CHARS] for gid, src in answers.sources.items()})
        if cells:
            found[folder.name] = cells
    return found


def _fingerprint(name: str, source: str):
    from copydetect import CodeFingerprint

    return CodeFingerprint(name, K, WINDOW, filter=True, language="python", fp=io.StringIO(source))


def _learner_fingerprint(name: str, source: str):
    """``_fingerprint`` of a learner's answer, or None when the tokenizer fails on it: one odd
    answer is left out of the comparison, never the class report."""
    try:
        return _fingerprint(name, source)
    except Exception:  # noqa: BLE001 - learner text: see the docstring
        return None


def _without(fp, left_out: set[int]):
    """``fp`` with the fingerprints in ``left_out`` removed (copydetect's own ``boilerplate``
    misses repeats of a hash within one answer), its token coverage recomputed."""
    from copydetect.utils import get_token_coverage

    fp.hashes = {h for h in fp.hashes if h not in left_out}
    fp.hash_idx = {h: i for h, i in fp.hash_idx.items() if h not in left_out}
    fp.token_coverage = get_token_coverage(fp.hash_idx, K, len(fp.filtered_code))
    return fp


def similar_pairs(answers: dict[str, dict[str, str]], stubs: dict[str, str], *,
                  min_tokens: int = 60, min_similarity: float = 0.8,
                  common_share: float = 0.1, common_min: int = 4) -> list[Pair]:
    """The pairs whose distinctive shared code passes both thresholds (module docstring)."""
    from copydetect import compare_files

    students = sorted(answers)
    common_at = max(common_min, int(common_share * len(students)) + 1)
    prints: dict[str, dict[str, object]] = {s: {} for s in students}
    for gid in sorted({g for s in students for g in answers[s]}):
        stub = set(_fingerprint("stub.py", stubs.get(gid, "")).hashes)
        raw = {s: fp for s in students
               if gid in answers[s] and answers[s][gid].strip() != stubs.get(gid, "").strip()
               and (fp := _learner_fingerprint(f"{s}.py", answers[s][gid])) is not None}
        counts = Counter(h for fp in raw.values() for h in fp.hashes - stub)
        left_out = stub | {h for h, n in counts.items() if n >= common_at}
        for s, fp in raw.items():
            fp = _without(fp, left_out)
            if fp.hashes:
                prints[s][gid] = fp
    pairs = []
    for i, a in enumerate(students):
        for b in students[i + 1:]:
            tokens, size_a, size_b, shared = 0, 0, 0, []
            for gid in sorted(set(prints[a]) | set(prints[b])):
                fa, fb = prints[a].get(gid), prints[b].get(gid)
                size_a += int(fa.token_coverage) if fa else 0
                size_b += int(fb.token_coverage) if fb else 0
                if fa is None or fb is None:
                    continue
                overlap, _, (slices_a, slices_b) = compare_files(fa, fb)
                if overlap:
                    tokens += int(overlap)
                    shared.append(Shared(gid, fa.raw_code, fb.raw_code,
                                         [(int(x), int(y)) for x, y in zip(*slices_a)],
                                         [(int(x), int(y)) for x, y in zip(*slices_b)]))
            smaller = min(size_a, size_b)
            similarity = tokens / smaller if smaller else 0.0
            if tokens >= min_tokens and similarity >= min_similarity:
                pairs.append(Pair(a, b, tokens, min(1.0, similarity), shared))
    return sorted(pairs, key=lambda p: (-p.tokens, -p.similarity, p.a, p.b))
