"""The term around the scores: due dates, submission times, extensions and the late policy.

Kept in nbgrader's own terms, so that formgrader and nbgrader's tools read the same gradebook:

* **Due date**: the gradebook's ``Assignment.duedate``, set with ``python -m autograder due
  ASSIGNMENT WHEN`` (or formgrader's "Manage Assignments" page, or ``nbgrader db assignment add
  A --duedate=WHEN``). ``WHEN`` is nbgrader's format: ``2027-01-15 23:59:00 Europe/Berlin``
  (a zone name or offset; none means UTC).
* **Submission time**: ``SubmittedAssignment.timestamp``, from the first of
  1. ``<workdir>/submission-times.csv`` (``student,assignment,submitted_at``): what the
     instructor's LMS logged, and the only source a student cannot write;
  2. ``timestamp.txt`` in the student's assignment folder, which nbgrader's exchange writes on
     ``submit`` (from the student's own server: on a hub a student could write another one, a
     limit of nbgrader's exchange; a ``timestamp.txt`` inside a zip is the student's own file
     and is never read);
  3. the newest notebook's (or the zip's) modification time, with a note: a copy may have
     changed it.
* **Extension**: ``SubmittedAssignment.extension``, from ``<workdir>/extensions.csv``
  (``student,assignment,hours``), which ``python -m autograder extend`` writes: kept in a file
  because an extension is often granted before anything is submitted.
* **Penalty**: per notebook, by :class:`LatePolicy`, a ``LateSubmissionPlugin`` with nbgrader's
  contract (``late_submission_penalty(student_id, score, total_seconds_late)`` returns the
  points taken off, or ``None``), stored in ``SubmittedNotebook.late_submission_penalty``;
  nbgrader's exports and ours report ``score - penalty``. It is configured in
  ``<workdir>/nbgrader_config.py`` (:func:`write_config` writes a commented one), under
  ``LatePolicy``: ``penalty_method`` ``none`` (the default: lateness is shown, nothing taken
  off), ``zero``, ``per_hour`` or ``per_day`` (``percent`` of the notebook's score for each
  hour or day started, at most ``cap_percent``), ``grace_minutes``, and ``cutoff_hours`` (later
  than that past the due date, extension included: not accepted, the penalty is the score).

:func:`apply` writes times, extensions and penalties for graded submissions; ``grade``, ``due``,
``extend`` and ``adjust`` call it, so a penalty always matches the current score and policy.
"""

from __future__ import annotations

import csv
import datetime as dt
import math
from dataclasses import dataclass
from pathlib import Path

from nbgrader.plugins import LateSubmissionPlugin
from traitlets import Enum, Float
from traitlets.config import Config

from ..course import SOLUTIONS, CourseError

CONFIG = "nbgrader_config.py"
TIMES = "submission-times.csv"
EXTENSIONS = "extensions.csv"
MAX_STAMP_BYTES = 200


class LatePolicy(LateSubmissionPlugin):
    """nbgrader's late-submission plugin, with penalties per hour or day, a cap and a cutoff."""

    penalty_method = Enum(("none", "zero", "per_hour", "per_day"), default_value="none",
                          help="none: no penalty; zero: a late notebook scores 0; per_hour / "
                               "per_day: percent of its score per hour or day started").tag(config=True)
    percent = Float(10.0, help="per_hour/per_day: percent of the score per unit").tag(config=True)
    cap_percent = Float(100.0, help="the most a penalty takes, in percent").tag(config=True)
    grace_minutes = Float(0.0, help="lateness forgiven (a slow upload)").tag(config=True)
    cutoff_hours = Float(0.0, help="later than this: not accepted (0: no cutoff)").tag(config=True)

    def late_submission_penalty(self, student_id: str, score: float,
                                total_seconds_late: float) -> float | None:
        late = total_seconds_late - 60 * self.grace_minutes
        if late <= 0 or score <= 0:
            return None
        if self.cutoff_hours and late > 3600 * self.cutoff_hours:
            return score
        if self.penalty_method == "none":
            return None
        if self.penalty_method == "zero":
            return score
        unit = 3600 if self.penalty_method == "per_hour" else 86400
        share = min(self.cap_percent, math.ceil(late / unit) * self.percent) / 100
        return round(min(score, score * share), 6)

    def describe(self) -> str:
        """The policy in words, for feedback pages and the report."""
        rule = {"none": "no penalty", "zero": "a late notebook scores 0"}.get(self.penalty_method)
        if rule is None:
            unit = "hour" if self.penalty_method == "per_hour" else "day"
            rule = f"{self.percent:g}% of the score per {unit} started, at most {self.cap_percent:g}%"
        if self.cutoff_hours:
            rule += f"; not accepted more than {self.cutoff_hours:g} h late"
        if self.grace_minutes:
            rule += f"; {self.grace_minutes:g} min of grace"
        return rule


def load_config(workdir: Path) -> Config:
    """``<workdir>/nbgrader_config.py`` (nbgrader's file: ours is written by :func:`write_config`),
    or an empty configuration; a file Python cannot run is an error that says so."""
    from traitlets.config.loader import PyFileConfigLoader

    path = workdir / CONFIG
    if not path.is_file():
        return Config()
    try:
        return PyFileConfigLoader(CONFIG, path=str(workdir)).load_config()
    except Exception as err:  # noqa: BLE001 - the instructor's file: say which and why
        raise CourseError(f"{path} could not be read ({type(err).__name__}: {err}); fix it or "
                          "delete it (grade writes a fresh one).") from None


def policy(workdir: Path) -> LatePolicy:
    try:
        return LatePolicy(config=load_config(workdir))
    except Exception as err:  # noqa: BLE001 - a bad value in the instructor's config
        raise CourseError(f"{workdir / CONFIG}: LatePolicy: {err}") from None


def write_config(workdir: Path) -> Path:
    """Write ``<workdir>/nbgrader_config.py`` if there is none: formgrader opens on this
    gradebook (``cd WORKDIR && jupyter lab``, then Nbgrader > Formgrader), and the late policy
    is set here."""
    path = workdir / CONFIG
    if path.exists():
        return path
    workdir.mkdir(parents=True, exist_ok=True)
    path.write_text(f'''# nbgrader's configuration for this grading folder, written by
# `python -m autograder grade`: edit it, it is not overwritten.
# Formgrader: `cd {workdir} && jupyter lab`, then Nbgrader > Formgrader: its manual-grading
# pages open on this gradebook, and what you change there (scores, extra credit) is kept by
# every regrade (autograder/pipeline/adjustments.py).
c = get_config()  # noqa: F821
c.CourseDirectory.root = {str(workdir)!r}
c.CourseDirectory.db_url = {f"sqlite:///{workdir / 'gradebook.db'}"!r}
c.CourseDirectory.source_directory = {str(SOLUTIONS)!r}
c.CourseDirectory.release_directory = {str(workdir / 'release')!r}
c.Exchange.root = {str(workdir / 'exchange')!r}
# Late work (autograder/pipeline/term.py): set due dates with `python -m autograder due A "WHEN"`,
# extensions with `python -m autograder extend STUDENT A --hours H`.
c.AssignLatePenalties.plugin_class = "autograder.pipeline.term.LatePolicy"
c.LatePolicy.penalty_method = "none"   # none | zero | per_hour | per_day
c.LatePolicy.percent = 10.0            # per_hour / per_day: percent of the score per unit started
c.LatePolicy.cap_percent = 50.0        # the most a penalty takes
c.LatePolicy.grace_minutes = 0.0
c.LatePolicy.cutoff_hours = 0.0        # later than this past the due date: not accepted (0: never)
''')
    return path


def parse_time(text: str) -> dt.datetime:
    """nbgrader's timestamp format (``2027-01-15 23:59:00 Europe/Berlin``) as naive UTC;
    ``ValueError`` with the reason for anything else."""
    from nbgrader.utils import parse_utc

    text = text.strip()
    if not text or len(text) > 100:
        raise ValueError("empty or too long")
    try:
        return parse_utc(text)
    except Exception as err:  # noqa: BLE001 - dateutil's many errors: one kind for callers
        raise ValueError(f"not a time ({type(err).__name__})") from None


def _rows(path: Path, columns: tuple[str, ...]) -> list[dict[str, str]]:
    if not path.is_file():
        return []
    with path.open(newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh)
        if not set(columns) <= set(reader.fieldnames or []):
            raise CourseError(f"{path}: the first line must name the columns {', '.join(columns)}.")
        return [{k: (v or "").strip() for k, v in row.items() if k} for row in reader]


def extensions(workdir: Path) -> dict[tuple[str, str], float]:
    """``{(student, assignment): hours}`` from ``<workdir>/extensions.csv``."""
    out = {}
    for line, row in enumerate(_rows(workdir / EXTENSIONS, ("student", "assignment", "hours")), 2):
        try:
            hours = float(row["hours"])
        except ValueError:
            raise CourseError(f"{workdir / EXTENSIONS}, line {line}: hours must be a number, "
                              f"got {row['hours']!r}.") from None
        if not math.isfinite(hours) or hours < 0:
            raise CourseError(f"{workdir / EXTENSIONS}, line {line}: hours must be 0 or more.")
        out[(row["student"], row["assignment"])] = hours
    return out


def set_extension(workdir: Path, student: str, assignment: str, hours: float) -> None:
    """Write one extension (0 removes it) into ``<workdir>/extensions.csv``."""
    table = extensions(workdir)
    if hours:
        table[(student, assignment)] = hours
    else:
        table.pop((student, assignment), None)
    workdir.mkdir(parents=True, exist_ok=True)
    with (workdir / EXTENSIONS).open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["student", "assignment", "hours"])
        w.writerows([s, a, f"{h:g}"] for (s, a), h in sorted(table.items()))


@dataclass(frozen=True)
class Submitted:
    """When one submission came in, and how the grader knows."""

    when: dt.datetime | None
    source: str          # "times.csv", "timestamp.txt", "file time" or "" (unknown)


def submission_times(workdir: Path, stamps: dict[tuple[str, str], str],
                     mtimes: dict[tuple[str, str], float],
                     problems: list[str]) -> dict[tuple[str, str], Submitted]:
    """Each submission's time (module docstring, "Submission time"); an unreadable
    ``timestamp.txt`` is that student's problem line, never the grader's failure."""
    given: dict[tuple[str, str], dt.datetime] = {}
    for line, row in enumerate(_rows(workdir / TIMES, ("student", "assignment", "submitted_at")), 2):
        try:
            given[(row["student"], row["assignment"])] = parse_time(row["submitted_at"])
        except ValueError as err:
            raise CourseError(f"{workdir / TIMES}, line {line}: {row['submitted_at']!r} is not a "
                              f"time ({err}); write e.g. 2027-01-15 23:59:00 UTC.") from None
    out: dict[tuple[str, str], Submitted] = {}
    for key in set(stamps) | set(mtimes) | set(given):
        if key in given:
            out[key] = Submitted(given[key], TIMES)
            continue
        if key in stamps:
            try:
                out[key] = Submitted(parse_time(stamps[key]), "timestamp.txt")
                continue
            except ValueError as err:
                problems.append(f"{key[0]}/{key[1]}/timestamp.txt: unreadable ({err}); the "
                                "file's time is used instead.")
        if key in mtimes:
            when = dt.datetime.fromtimestamp(mtimes[key], dt.timezone.utc).replace(tzinfo=None)
            out[key] = Submitted(when, "file time")
    return out


def apply(workdir: Path, pairs: list[tuple[str, str]] | None = None,
          times: dict[tuple[str, str], Submitted] | None = None) -> list[str]:
    """Write times (where given), extensions and penalties into the gradebook for ``pairs``
    (default: every submission); returns notes for submissions with a due date whose time is
    only the file's. Not-graded notebooks get no penalty (they have no score)."""
    from nbgrader.api import Gradebook, MissingEntry

    from .gradebook import db_url

    late = policy(workdir)
    granted = extensions(workdir)
    notes: list[str] = []
    with Gradebook(db_url(workdir)) as gb:
        subs = ([s for a in gb.assignments for s in a.submissions] if pairs is None else [])
        for student, assignment in pairs or []:
            try:
                subs.append(gb.find_submission(assignment, student))
            except MissingEntry:
                continue
        for sub in subs:
            key = (sub.student.id, sub.assignment.name)
            if times and key in times and times[key].when is not None:
                sub.timestamp = times[key].when
                if times[key].source == "file time" and sub.assignment.duedate is not None:
                    notes.append(f"{key[0]}/{key[1]}: no submission time recorded; the file's "
                                 f"time ({sub.timestamp:%Y-%m-%d %H:%M} UTC) decides lateness. "
                                 f"Give the LMS's time in {workdir / TIMES}.")
            # formgrader counts a submission as autograded when the gradebook's time equals the
            # one in submitted/<student>/<assignment>/timestamp.txt (nbgrader's layout)
            stamp = workdir / "submitted" / key[0] / key[1] / "timestamp.txt"
            if stamp.parent.is_dir():
                if sub.timestamp is not None:
                    stamp.write_text(f"{sub.timestamp:%Y-%m-%d %H:%M:%S.%f} UTC\n")
                else:
                    stamp.unlink(missing_ok=True)
            hours = granted.get(key, 0.0)
            sub.extension = dt.timedelta(hours=hours) if hours else None
            seconds = sub.total_seconds_late
            for nb in sub.notebooks:
                score = sum(g.score for g in nb.grades if g.score is not None)
                graded = all(g.score is not None for g in nb.grades)
                penalty = late.late_submission_penalty(key[0], score, seconds) if graded else None
                nb.late_submission_penalty = float(penalty or 0.0)
        gb.db.commit()
    return notes


def set_duedate(workdir: Path, assignment: str, when: str) -> dt.datetime | None:
    """Set (or, with ``none``, clear) an assignment's due date in the gradebook."""
    from nbgrader.api import Gradebook

    from .gradebook import db_url

    if not (workdir / "gradebook.db").exists():
        raise CourseError(f"No gradebook in {workdir}: grade the assignment first (its due date "
                          "is kept with it).")
    due = None
    if when.strip().lower() != "none":
        try:
            due = parse_time(when)
        except ValueError as err:
            raise CourseError(f"{when!r} is not a time ({err}): write e.g. "
                              "\"2027-01-15 23:59:00 Europe/Berlin\" (none clears it).") from None
    with Gradebook(db_url(workdir)) as gb:
        gb.update_or_create_assignment(assignment, duedate=due)
    return due


def lateness(workdir: Path, student: str, assignment: str) -> dict[str, object]:
    """What the feedback page and the report say about one submission's time: ``{}`` when the
    assignment has no due date; else due, submitted, extension hours, hours late, penalty."""
    from nbgrader.api import Gradebook, MissingEntry

    from .gradebook import db_url

    with Gradebook(db_url(workdir)) as gb:
        try:
            sub = gb.find_submission(assignment, student)
        except MissingEntry:
            return {}
        if sub.assignment.duedate is None:
            return {}
        return {"due": sub.duedate, "submitted": sub.timestamp,
                "extension_hours": (sub.extension.total_seconds() / 3600) if sub.extension else 0.0,
                "hours_late": sub.total_seconds_late / 3600,
                "penalty": float(sub.late_submission_penalty or 0.0),
                "policy": policy(workdir).describe()}


def describe(info: dict[str, object]) -> str:
    """One line about a submission's time, from :func:`lateness`."""
    if not info:
        return ""
    due = f"due {info['due']:%Y-%m-%d %H:%M} UTC"
    if info["extension_hours"]:
        due += f" (with a {info['extension_hours']:g} h extension)"
    if info["submitted"] is None:
        return f"{due}; no submission time recorded."
    said = f"Submitted {info['submitted']:%Y-%m-%d %H:%M} UTC, {due}"
    if not info["hours_late"]:
        return said + ": on time."
    said += f": {info['hours_late']:.1f} h late"
    if info["penalty"]:
        return said + f", late penalty {info['penalty']:g} point(s) ({info['policy']})."
    return said + f" ({info['policy']})."

