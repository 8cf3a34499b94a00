"""An nbgrader ``Execute`` preprocessor that survives a kernel that dies.

Stock nbgrader aborts a student's whole notebook when the kernel dies
(``os._exit``, a segfault, the OOM killer): nbclient raises ``DeadKernelError``,
nbgrader deletes the autograded copy and records no grades, so the student shows
up as "needs manual grading" and the export has a hole.

Here the cells that ran keep their outputs, and every code cell that did not
finish gets an error output saying the kernel died. Scoring
(``autograder.judge.integrity.verdicts``) then gives test cells that never ran 0 (an
error output is a failure), which is the honest grade for code that did not run,
and the student's notebook is recorded like any other. The run goes on with the
next student.
"""

from __future__ import annotations

from typing import Any

from nbclient.exceptions import DeadKernelError
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import Execute

from tensorcourse.headless import NoLostWakeups

from ..judge.integrity import KERNEL_DIED


def _died_output(reason: str) -> NotebookNode:
    return NotebookNode(
        output_type="error",
        ename=KERNEL_DIED,
        evalue=reason,
        traceback=[f"{KERNEL_DIED}: {reason}"],
    )


class SurvivingExecute(NoLostWakeups, Execute):
    """Execute every cell; after a kernel death, mark the rest as not run instead of raising.

    ``NoLostWakeups`` (no widget emulation, re-armed sends, sliced waits): a submission's
    widget cell can never sit until the cell timeout and lose its points to it."""

    def preprocess(self, nb: NotebookNode, resources: Any = None, km: Any = None):
        self._kernel_dead = False
        try:
            return super().preprocess(nb, resources, km)
        except DeadKernelError:
            # Raised while shutting down a kernel that is already gone: the cells
            # have been marked by preprocess_cell, so the notebook is complete.
            if not self._kernel_dead:
                raise
            return nb, self.resources

    def preprocess_cell(self, cell: NotebookNode, resources: Any, index: int):
        if self._kernel_dead:
            if cell.cell_type == "code":
                cell.outputs = [_died_output("the kernel died in an earlier cell, "
                                             "so this cell did not run")]
            return cell, self.resources
        try:
            return super().preprocess_cell(cell, resources, index)
        except DeadKernelError:
            self._kernel_dead = True
            self.log.warning("Kernel died while running cell %d; the remaining cells "
                             "are marked as not run and score 0.", index)
            cell.outputs.append(_died_output("the kernel died while running this cell "
                                             "(os._exit, a crash, or out of memory)"))
            return cell, self.resources
