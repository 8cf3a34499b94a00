"""Grade one submitted notebook: the unit that runs in a worker process (or a container).

Contract: :func:`grade_notebook` takes a :class:`Job` (plain data: paths, the learner's bytes,
limits) and returns a :class:`Outcome` (plain data: per-test verdicts and feedback-safe
messages, problems for the instructor, the executed notebook as JSON text). It never writes
the gradebook and never touches the submissions folder: the parent process records outcomes,
one writer, in a fixed order.

Steps: read the answers out of the learner's notebook (:mod:`autograder.judge.answers`), screen
each (:mod:`autograder.judge.screen`; rejected ones are replaced by a stub and never run), rebuild
the notebook from the release with the hidden tests, add the integrity cells
(:mod:`autograder.judge.integrity`), execute it in a fresh kernel in the sandbox
(:mod:`autograder.sandbox.launch`) with per-cell and per-notebook time limits, and score it here.
"""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import nbformat
from nbclient.exceptions import CellExecutionComplete
from nbclient.util import run_sync
from nbformat.notebooknode import NotebookNode

from ..judge.answers import NotANotebook, exercises, is_answer, meta, read_answers, rebuild
from ..judge.causes import answer_cause, learner_lines, timeout_cause
from ..judge.integrity import ROLE, Verdict, bound_names, clean_text, instrument, release_names, verdicts
from ..judge.rewrite import NOT_RUN, rewrite
from ..judge.screen import screen
from ..judge.values import decide, partial, records
from ..judge.variants import predictions_problem, written_answers, written_records
from ..judge.variants import references as variant_references
from ..sandbox.cgroup import POLL_SECONDS
from ..sandbox.flood import FLOOD_IOPUB_WAIT, MAX_MESSAGE_BYTES, BoundedKernelClient, FloodGuard, FloodStop
from ..sandbox.launch import MIB, Limits, kernel_manager
from ..sandbox.scratch import measure, private_folder, unlinked_bytes
from .execute import SurvivingExecute
from .gradebook import NOT_GRADED

# A loaded machine can deliver a cell's last output seconds after its reply: wait for it (the
# pass tokens are in it), never drop it.
IOPUB_WAIT = 120


@dataclass
class Job:
    """One notebook of one submission, and how to run it."""

    student: str
    assignment: str
    notebook: str
    data: bytes
    release: str            # path of notebooks/<assignment>/<notebook>.ipynb
    solution: str           # path of solutions/<assignment>/<notebook>.ipynb
    limits: Limits = field(default_factory=Limits)
    sandboxed: bool = True
    hidden: list[str] = field(default_factory=list)   # folders the kernel must never see
    # The release's and the solution's notebook JSON, when the job travels to a machine that
    # may lack these files (a Dask worker); preferred over the paths above when set.
    release_text: str = ""
    solution_text: str = ""
    # The solution's recorded value checks, by test grade id (autograder.judge.values): each passed
    # test's checks are decided again here against these. None: no reference (its own run).
    reference: dict[str, list[dict]] | None = None
    # The student's variants of the predict exercises, {exercise: [number, params]}, from the
    # manifest and the student's id (autograder.judge.variants); empty: the published ones.
    variants: dict[str, list[Any]] = field(default_factory=dict)



def not_graded(student: str, assignment: str, notebook: str, why: str) -> Outcome:
    """The outcome of a notebook the grader could not grade (see :attr:`Outcome.status`)."""
    return Outcome(student, assignment, notebook, status=NOT_GRADED, failure=why,
                   problems=[f"{student}/{assignment}: NOT GRADED ({why}). This is not a score: "
                             "regrade with `python -m autograder grade SUBMISSIONS "
                             "--retry-failed`."])


@dataclass
class TestResult:
    grade_id: str
    passed: bool
    reason: str              # for the instructor: "", failed, timeout, kernel died, tampering...
    message: str             # for the learner: never hidden test code, never printed output
    # The id of the misconception the failed check named (tensorcourse.misconceptions), checked
    # against the grader's own catalog; "" when none (passed, or the check names none).
    misconception: str = ""
    # A failed test with parts (tensorcourse.check.parts): the points its passing checks earned,
    # decided outside the sandbox (autograder.judge.values.partial); None: all or nothing.
    score: float | None = None
    # The variant of the exercise this submission was graded on (None: it has no variants).
    variant: int | None = None


@dataclass
class Outcome:
    student: str
    assignment: str
    notebook: str
    tests: list[TestResult] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    tampering: list[str] = field(default_factory=list)
    executed: str = ""       # the executed notebook (JSON), for the instructor only
    # "graded", or NOT_GRADED: the grader failed for its own reasons (sandbox or kernel did
    # not start, its setup failed before learner code ran, an error of its own). Not a score:
    # no points are recorded, and `grade --retry-failed` grades it again.
    status: str = "graded"
    failure: str = ""        # why it was not graded, for the instructor
    # Wall seconds by phase: kernel start (sandbox, Python, ipykernel), bootstrap (imports,
    # snapshot), notebook (release and answer cells), tests, integrity, judging (the rest).
    timings: dict[str, float] = field(default_factory=dict)
    # The value checks each test recorded (autograder.judge.values): the reference run's are the
    # oracle for everyone else's. Not written to results.
    values: dict[str, list[dict]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
def learner_message(failure: dict, reason: str, rejected: str) -> str:
    """What the learner may see about one failed test: never test code, never what was printed.

    ``failure`` is the test runner's report (:func:`autograder.judge.integrity.failure_report`). Only
    an error raised by the course's own code (the test itself or ``tensorcourse.check``,
    recognised in the kernel by code identity, never by file name) shows its first line;
    anything raised in or through the learner's code, or inside a library, shows only its type,
    since its text could quote the hidden test's inputs.
    """
    if rejected:
        return f"your answer was not run: {rejected}"
    if reason.startswith("tampering"):
        return "not graded: the grader's integrity check failed (your instructor has the details)"
    if reason == "kernel died":
        return "the kernel died before this test finished (os._exit, a crash, or out of memory)"
    if reason == "timeout":
        return "the test ran past the time limit and was interrupted"
    if reason == "notebook time limit":
        return "the notebook ran past its time limit; this test did not run"
    if reason.startswith("output flood"):
        return f"{reason}: the notebook was stopped and this test did not run (print less)"
    if not failure:
        return reason
    ename = _ANSI.sub("", failure.get("ename", "")) or "an error"
    kind = failure.get("kind")
    if kind == "ours":
        first = _ANSI.sub("", failure.get("first", "")).strip()
        return f"{ename}: {first}" if first else f"{ename} (a check failed)"
    if kind == "library":
        return (f"{ename} was raised inside a library the test called with your result "
                "(check its type, shape and dtype)")
    return f"your code raised {ename}"


def named_misconception(failure: dict, reason: str, rejected: str) -> str:
    """The misconception a failed check named, if the course's catalog (the grader's own copy)
    knows it and the failure came from the course's code; else ``""``."""
    from tensorcourse.misconceptions import catalog

    if rejected or reason != "failed" or failure.get("kind") != "ours":
        return ""
    named = failure.get("misconception", "")
    return named if named in catalog() else ""


class _LimitedExecute(SurvivingExecute):
    """SurvivingExecute that keeps at most ``output_limit`` bytes of output.

    Beyond the limit only the grader's own lines (``TIO-...``) are kept: printing without end
    cannot hide a result or exhaust the grader's memory.
    """

    output_limit = 1 << 20
    timings: dict[str, float]
    guard: FloodGuard
    grader_cell_timeout = 600  # the bootstrap imports torch: never cut short on a loaded machine
    ready = False              # the kernel started and answered: from here, learner code may run
    _idle = True               # this cell's last output (its "idle") arrived

    async def async_start_new_kernel_client(self) -> Any:
        start = time.monotonic()
        kc = await super().async_start_new_kernel_client()
        self.guard.attach(kc)  # before any learner code: the bootstrap cell is the first sent
        self.guard.on_behind = self._fell_behind
        self.ready = True
        self.timings["kernel start"] = time.monotonic() - start
        return kc

    # nbclient binds the sync name to its own async function: point it at the override.
    start_new_kernel_client = run_sync(async_start_new_kernel_client)

    def _fell_behind(self) -> None:
        """The grader fell behind this cell's flood, so ZMQ may drop its last output: wait
        seconds for it, not the loaded machine's minutes, and if it never comes go on (the
        cell's loss, told in :meth:`on_cell_executed`; a cut notebook would cost every cell
        after it, and an honest loop of prints on a loaded machine can fall this far behind)."""
        self.iopub_timeout = FLOOD_IOPUB_WAIT
        self.raise_on_iopub_timeout = False

    def preprocess_cell(self, cell: NotebookNode, resources: Any, index: int):
        start = time.monotonic()
        # Each cell's last output is awaited in full, and missing is the machine's failure,
        # unless the grader falls behind during this cell (_fell_behind).
        self.iopub_timeout, self.raise_on_iopub_timeout = IOPUB_WAIT, True
        self._idle = False
        self.guard.new_cell()
        try:
            return super().preprocess_cell(cell, resources, index)
        finally:
            self._flush_kept()
            role = cell.get("metadata", {}).get(ROLE, {}).get("role", "notebook")
            phase = {"test": "tests"}.get(role, role)
            self.timings[phase] = self.timings.get(phase, 0.0) + time.monotonic() - start

    def process_message(self, msg: dict, cell: NotebookNode, cell_index: int) -> Any:
        try:
            return super().process_message(msg, cell, cell_index)
        except CellExecutionComplete:
            self._idle = True  # the cell's last output arrived
            raise
        except Exception as err:  # noqa: BLE001 - the content is the learner's, see below
            if msg.get("msg_type") not in LEARNER_SHAPED:
                raise
            # What a _repr_ method returns (data, metadata) reaches nbformat's validation here:
            # `{"text/plain": 0}` is not a valid output. An output the grader cannot keep is
            # dropped like one over the limit; never a grader failure (red team of #29).
            self.log.warning("dropped an output the grader cannot keep (%s)", type(err).__name__)
            cell.outputs.append(nbformat.v4.new_output(
                "stream", name="stderr", text="[an output that is not valid in a notebook was dropped]\n"))
            return None

    def on_cell_executed(self, **kwargs: Any) -> None:
        """nbgrader's hook, bounded: when a cell's reply is an error that no output shows (a
        timeout; or an error output kept beyond the limit, whose name was cut), nbgrader adds
        the reply's error *whole*, past every output bound (up to a message's 8 MiB, in every
        test cell a learner's function fails). The grader reads only its name."""
        cell, content = kwargs["cell"], kwargs["execute_reply"].get("content", {})
        lost = "" if self._idle else self.guard.lost_output()
        if lost:
            cell.outputs.append(nbformat.v4.new_output("stream", name="stderr", text=lost))
        if content.get("status") != "error":
            return
        ename = str(content.get("ename", ""))
        if not any(o.get("output_type") == "error" and o.get("ename") in (ename, ename[:200])
                   for o in cell.outputs):
            cell.outputs.append(nbformat.v4.new_output(
                "error", ename=ename[:200], evalue=str(content.get("evalue", ""))[:1000],
                traceback=[str(line)[:1000] for line in content.get("traceback", [])[-20:]]
                or ["ERROR: An error occurred while showtraceback was disabled"]))

    def _timeout_for(self, cell: NotebookNode) -> int:
        if cell.get("metadata", {}).get(ROLE, {}).get("role") in ("bootstrap", "integrity"):
            return max(int(self.timeout or 0), self.grader_cell_timeout)
        return int(self.timeout or 0)

    def output(self, outs: list, msg: dict, display_id: Any, cell_index: int):
        self._kept = getattr(self, "_kept", 0)
        content = msg.get("content", {})
        # Every field counts: text, data, metadata, an error's name, value and traceback; and
        # each output its overhead (a flood of one-byte outputs is not free).
        size = _content_bytes(content) + OUTPUT_OVERHEAD
        if self._kept + size <= self.output_limit:
            self._kept += size
            return super().output(outs, msg, display_id, cell_index)
        if msg.get("msg_type") == "stream":
            # Keep the grader's lines whole, within their own budget (a learner can print lines
            # that look like them: the budget bounds those too), every line end (a line and its
            # newline can come in two messages: without the newline the next line would join
            # it, red team of the flood change), and short pieces that may be one of them
            # split in two.
            text = str(content.get("text", ""))
            self._fragments = getattr(self, "_fragments", 0) + 1
            self._grader_kept = getattr(self, "_grader_kept", 0)
            pieces = [piece for piece in text.splitlines(keepends=True)
                      if piece.startswith("TIO-") or not piece.strip("\r\n")
                      or (len(text) < 80 and self._fragments < 1000)]
            size = sum(len(piece) for piece in pieces) + OUTPUT_OVERHEAD
            if pieces and self._grader_kept + size <= GRADER_LINES_BYTES:
                self._grader_kept += size
                self._keep(outs, str(content.get("name", "stdout")), "".join(pieces))
        elif msg.get("msg_type") == "error":
            # The cell's failure must still show (it decides the verdict), without its text.
            outs.append(nbformat.v4.new_output("error", ename=str(content.get("ename", ""))[:200],
                                               evalue="[over the grader's output limit]",
                                               traceback=[]))
        if not getattr(self, "_truncated", False):
            self._truncated = True
            outs.append(nbformat.v4.new_output("stream", name="stderr",
                                               text="[output beyond the grader's limit dropped]\n"))
        return None

    def _keep(self, outs: list, name: str, text: str) -> None:
        """Add ``text`` to the cell's last kept stream of ``name``, or start one: one output
        per run of lines, joined once (red team: 213,000 one-line outputs, one object each,
        took the grader to 817 MiB)."""
        tail = getattr(self, "_tail", None)
        if tail is not None and outs and outs[-1] is tail[0] and tail[0].name == name:
            tail[1].append(text)
            return
        self._flush_kept()
        node = nbformat.v4.new_output("stream", name=name, text="")
        outs.append(node)
        self._tail = (node, [text])

    def _flush_kept(self) -> None:
        tail = getattr(self, "_tail", None)
        if tail is not None:
            tail[0].text = "".join(tail[1])
            self._tail = None


GRADER_LINES_BYTES = 16 * MIB   # the grader's own lines (tokens, values) kept beyond output_bytes
OUTPUT_OVERHEAD = 64             # what keeping one output costs beyond its text (objects, a list slot)
# Messages whose content the learner's code shapes (text, a _repr_'s data and metadata).
LEARNER_SHAPED = frozenset({"stream", "display_data", "execute_result", "update_display_data",
                            "error", "clear_output"})


def _content_bytes(content: Any) -> int:
    """Size of a message's content as JSON (what keeping it would cost), bounded work."""
    try:
        return len(json.dumps(content, default=str))
    except (TypeError, ValueError, RecursionError):
        return MAX_MESSAGE_BYTES  # no message read is larger (autograder/sandbox/flood.py)


class _Watchdog:
    """Kills the sandbox when the notebook's wall time, its socket folder's bounds or its memory
    budget (:mod:`autograder.sandbox.cgroup`: its group's OOM state, or in the fallback its measured
    total) are exceeded.

    Measures ``time.monotonic()``, not loop turns; each look at the folder is bounded work
    (:func:`autograder.sandbox.scratch.measure`); if the watchdog itself fails, it kills the kernel
    rather than let the limits lapse.
    """

    def __init__(self, km: Any, limits: Limits, folder: Path, guard: FloodGuard) -> None:
        self.km, self.limits, self.folder, self.guard = km, limits, folder, guard
        self.reason = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._guarded, daemon=True)

    def __enter__(self) -> _Watchdog:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _guarded(self) -> None:
        try:
            self._run()
        except BaseException as err:  # noqa: BLE001 - a failing watchdog must not free the kernel
            self.reason = f"grader error: the watchdog failed ({type(err).__name__})"
            self._kill()

    def _run(self) -> None:
        deadline = time.monotonic() + self.limits.notebook_timeout
        group = getattr(self.km, "group", None)
        # A group's OOM state is one small file; the fallback's measure must look often.
        tick = POLL_SECONDS if group is not None and group.support.mode == "none" else 0.5
        next_measure = 0.0
        while not self._stop.wait(min(tick, max(0.0, deadline - time.monotonic()))):
            if time.monotonic() >= deadline:
                self.reason = "notebook time limit"
            elif group is not None and group.exceeded():
                self.reason = group.budget_message()
            elif flood := self.guard.why_stopped(self._kernel_alive()):
                self.reason = flood
            elif time.monotonic() >= next_measure:
                next_measure = time.monotonic() + 1.0
                usage = measure(self.folder, max_bytes=self.limits.file_bytes,
                                max_entries=self.limits.scratch_entries)
                if not usage.over and group is not None:
                    held = unlinked_bytes(group.pids(), self.folder)
                    if usage.bytes + held > self.limits.file_bytes:
                        usage.over = (f"more than {self.limits.file_bytes >> 20} MiB, "
                                      "counting deleted files still open")
                if usage.over:
                    self.reason = f"scratch folder over its limits ({usage.over})"
            if self.reason:
                self._kill()
                return

    def _kernel_alive(self) -> bool:
        process = getattr(getattr(self.km, "provisioner", None), "process", None)
        return process is not None and process.poll() is None

    def _kill(self) -> None:
        group = getattr(self.km, "group", None)
        if group is not None:
            group.kill()  # every process of the sandbox, not only the kernel's process group
        provisioner = getattr(self.km, "provisioner", None)
        process = getattr(provisioner, "process", None)
        if process is not None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except OSError:
                pass


class GraderFailure(RuntimeError):
    """Grading could not happen for the grader's own reasons: the notebook is not graded."""


def _execute(nb: NotebookNode, job: Job, timings: dict[str, float] | None = None,
             ) -> tuple[NotebookNode, str]:
    """Run ``nb`` in a fresh sandboxed kernel; return it executed and why it was cut short.

    Raises :class:`GraderFailure` when the kernel never started (no learner code ran).
    """
    timings = {} if timings is None else timings
    with private_folder() as work:
        km = None
        try:
            try:
                km = kernel_manager(work, job.limits, sandboxed=job.sandboxed,
                                    hidden=[Path(h) for h in job.hidden])
            except OSError as err:
                raise GraderFailure(f"the sandbox's cgroup could not be made ({err})") from None
            ep = _LimitedExecute(timeout=job.limits.cell_timeout, interrupt_on_timeout=True,
                                 allow_errors=True, kernel_name="python3", startup_timeout=120,
                                 iopub_timeout=IOPUB_WAIT, raise_on_iopub_timeout=True,
                                 extra_arguments=["--HistoryManager.hist_file=:memory:"])
            ep.output_limit = job.limits.output_bytes
            ep.timings = timings
            ep.timeout_func = ep._timeout_for
            # What the kernel sends is bounded too (autograder/sandbox/flood.py): a flood of output
            # stops this notebook, never the grader.
            km.client_factory = BoundedKernelClient
            ep.guard = guard = FloodGuard()
            with _Watchdog(km, job.limits, work / "sock", guard) as dog:
                try:
                    ep.preprocess(nb, {"metadata": {"path": str(work / "sock")}}, km=km)
                except FloodStop as err:
                    dog.reason = dog.reason or str(err)  # a message refused unparsed: the learner's
                except Exception as err:  # noqa: BLE001 - keep what ran; the rest scores 0
                    if not ep.ready and not dog.reason:
                        log = _log_tail(work / "kernel.log")
                        raise GraderFailure(f"the kernel did not start ({type(err).__name__}: "
                                            f"{_first_line(err)}){log}") from None
                    # (A cell's last output that never came, the grader not behind a flood:
                    # the machine's failure, not graded.)
                    if not dog.reason:
                        dog.reason = (f"grading stopped early ({type(err).__name__}: "
                                      f"{_first_line(err)})")
            if not dog.reason and km.group is not None and km.group.exceeded():
                # The group's OOM kill ended the kernel before the watchdog's next look.
                dog.reason = km.group.budget_message()
                dog._kill()
            return nb, dog.reason
        finally:
            if km is not None:
                km.reap()


def _first_line(err: BaseException) -> str:
    return str(err).splitlines()[0][:160] if str(err) else ""


def _log_tail(path: Path) -> str:
    try:
        text = path.read_bytes()[-400:].decode("utf-8", "replace").strip()
    except OSError:
        return ""
    return f"; kernel log: {text}" if text else ""


def _refusals(nb: NotebookNode) -> list[str]:
    """What the run-time attribute guard refused (its ``TIO-REFUSED`` lines), once each.

    A learner can print such a line too: it can only report them, never earn a point."""
    found: list[str] = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                text = out.get("text", "")
                text = "".join(t for t in text if isinstance(t, str)) if isinstance(text, list) \
                    else text if isinstance(text, str) else ""  # the learner's: text only
                for line in text.splitlines():
                    what = line[len("TIO-REFUSED "):][:120] if line.startswith("TIO-REFUSED ") else ""
                    if what and what not in found:
                        found.append(what)
    return found


REJECTED_STUB = ("raise RuntimeError('This answer was not run by the grader: it uses something "
                 "graded answers may not use, or that the grader cannot read (see your "
                 "feedback).')")


def prepare_answer(source: str, protected: frozenset[str] = frozenset()) -> tuple[str, str]:
    """The code to run for one answer and, when it is refused, why (else ``""``).

    Screened (autograder.judge.screen), then every attribute access is checked again at run time
    (autograder.judge.rewrite). Never raises: an answer the grader cannot process, for any reason, is
    the learner's input refused (a stub runs, its exercise scores 0, Tampering says why), never
    a grader failure that would leave the notebook "not graded" (a 0 dodged at will).
    """
    try:
        reasons = screen(source, protected)
        if not reasons:
            guarded = rewrite(source)
            if guarded != NOT_RUN:
                return guarded, ""
            reasons = ["not read by the grader (the run-time guard could not rewrite it)"]
    except Exception as err:  # noqa: BLE001 - see the docstring
        reasons = [f"not read by the grader ({type(err).__name__})"]
    return REJECTED_STUB, "; ".join(reasons[:3])


def grade_notebook(job: Job) -> Outcome:
    """Grade one notebook (see the module docstring). Never raises for a learner's mistake."""
    started = time.monotonic()
    out = Outcome(job.student, job.assignment, job.notebook)
    label = f"{job.student}/{job.assignment}"
    release = (nbformat.reads(job.release_text, as_version=4) if job.release_text
               else nbformat.read(job.release, as_version=4))
    solution = (nbformat.reads(job.solution_text, as_version=4) if job.solution_text
                else nbformat.read(job.solution, as_version=4))
    tests = exercises(release)
    try:
        found = read_answers(job.data, release)
    except NotANotebook as err:
        out.problems.append(f"{label}: not a readable notebook ({err}); graded as missing "
                            "(0 points). Ask the student to re-download and resubmit it.")
        out.tests = [TestResult(g, False, "not a readable notebook",
                                "your submission could not be read as a notebook") for g in tests]
        return out
    out.problems += [f"{label}: {note}" for note in found.notes]
    rejected: dict[str, str] = {}
    to_run: dict[str, str] = {}
    answer_names = {n for nb_ in (release, solution) for c in nb_.cells if is_answer(c)
                    for n in bound_names(c.source)}
    # The release's own names: a test restores them; a `global` in an answer may not rebind one.
    protected = frozenset(n for names in release_names(release, answer_names).values() for n in names)
    for gid, source in found.sources.items():
        to_run[gid], why = prepare_answer(source, protected)
        if not why and (why := predictions_problem(job.assignment, gid, source)):
            to_run[gid] = REJECTED_STUB
        if why:
            rejected[gid] = why
    # What makes an answer fail whatever its test does, worked out here from its text alone.
    stubs = {meta(c)["grade_id"]: c.source for c in release.cells if is_answer(c)}
    causes = {gid: answer_cause(source, stubs.get(gid, "")) for gid, source in found.sources.items()
              if gid not in rejected}
    # The student's variants: the kernel is told them; their expected answers come from here.
    reference, numbers = variant_references(job.reference, job.variants)
    # Predict exercises with variants: decided on the predictions as the answer cell wrote them.
    as_written = written_answers(job.assignment, job.variants, found.sources, stubs)
    nb, plan = instrument(rebuild(release, solution, to_run), answer_names, job.variants)
    try:
        nb, cut = _execute(nb, job, out.timings)
    except GraderFailure as err:
        return not_graded(job.student, job.assignment, job.notebook, str(err))
    found_verdicts = verdicts(nb, plan)
    setup = next((v.reason for v in found_verdicts.values() if v.reason.startswith("grader setup")), "")
    if setup or cut.startswith(("grader error", "grading stopped early")):
        # Before learner code ran, or the grader's own machinery broke: not the learner's score.
        return not_graded(job.student, job.assignment, job.notebook, setup or cut)
    cells = {c.metadata[ROLE]["grade_id"]: c for c in nb.cells
             if c.get("metadata", {}).get(ROLE, {}).get("role") == "test"}
    outside: list[str] = []
    for gid in plan.order:
        v = found_verdicts[gid]
        if gid in cells:
            out.values[gid] = records(cells[gid], plan.pass_tokens[gid])
            if gid in as_written and reference is not None \
                    and len(reference.get(gid, ())) == len(as_written[gid][0]):
                out.values[gid] = written_records(reference[gid], out.values[gid], *as_written[gid])
        if v.passed and reference is not None and gid in reference:
            why = decide(reference[gid], out.values.get(gid, []))
            if why:
                # The kernel said pass; the values, decided here, say no.
                v = Verdict(False, f"failed outside the sandbox: {why}")
                outside.append(f"{gid} ({why})")
        reason = v.reason
        if cut and reason in ("kernel died", "not run"):
            reason = cut
        why = "; ".join(rejected[a] for a in tests.get(gid, []) if a in rejected)
        message = "passed"
        if not v.passed:
            cause = next((causes[a] for a in tests.get(gid, []) if causes.get(a)), "")
            message = (timeout_cause(job.limits.cell_timeout) if reason == "timeout" and not why
                       else cause if reason == "failed" and cause and not why
                       else learner_message(v.failure, reason, why))
            if reason == "failed" and not why and not cause and v.failure.get("where"):
                place = learner_lines(v.failure.get("where", []), list(found.sources.values()))
                message += f" {place}" if place else ""
        earned = None
        if not v.passed and reason == "failed" and not why and reference is not None \
                and gid in reference:
            earned = partial(reference[gid], out.values.get(gid, []))
            if earned:
                message += f" (partial credit: {earned:g} point(s) for the parts you got right)"
        out.tests.append(TestResult(gid, v.passed, reason, message,
                                    named_misconception(v.failure, reason, why) if not v.passed
                                    else "", earned, numbers.get(gid)))
    # One line per submission: what was refused before running, what the checks caught.
    tampered = next((v.tampered for v in found_verdicts.values() if v.tampered), "")
    found_what = [f"answer {gid} not run ({why})" for gid, why in rejected.items()]
    if tampered:
        first = next(g for g in plan.order if found_verdicts[g].tampered)
        found_what.append(f"integrity check failed from {first} on ({tampered}): that test and "
                          "every later one score 0")
    if outside:
        found_what.append("the kernel reported a pass the values checked outside the sandbox do "
                          "not bear out: " + "; ".join(outside[:3]))
    refused = _refusals(nb)
    if refused:
        found_what.append("refused at run time: " + "; ".join(refused[:3]))
    if found_what:
        out.tampering.append(f"{label}: " + "; ".join(found_what))
    if cut:
        out.problems.append(f"{label}: {cut}; the kernel was stopped and the tests that did not "
                            "run score 0.")
    elif any(t.reason == "kernel died" for t in out.tests):
        out.problems.append(f"{label}: the kernel died during grading; cells that did not run "
                            "score 0.")
    try:  # the outputs are the learner's: a lone surrogate, nesting too deep to serialise
        out.executed = clean_text(nbformat.writes(nb))
    except Exception as err:  # noqa: BLE001 - the scores stand; only the instructor's copy is lost
        out.problems.append(f"{label}: the executed notebook could not be saved "
                            f"({type(err).__name__}); its scores stand.")
    out.timings["judging"] = time.monotonic() - started - sum(out.timings.values())
    out.timings = {k: round(v, 3) for k, v in out.timings.items()}
    return out
