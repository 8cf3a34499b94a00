"""What a learner's kernel may touch, and what it may send back: the boundary around the process.

A kernel runs under bubblewrap (:mod:`.launch`: a short list of what is mounted, no network,
a user that is never the host's root), with a seccomp filter (:mod:`.seccomp`), resource
limits set before it starts (:mod:`.rlimit_exec`, run as a script), one memory and process
budget for the whole sandbox (:mod:`.cgroup`), a private scratch folder that is measured and
removed (:mod:`.scratch`), and bounds on the messages the grader reads from it (:mod:`.flood`).

Contract: nothing here reads a submission's content or decides a score; a kernel that breaks
out of a bound is stopped and the bound is named. Imports nothing else of ``autograder``
(only the standard library, jupyter_client and pyzmq), so it can be reviewed alone.
"""

# The rooms this one may import (tests/test_layout.py holds it, and that none is above it).
MAY_IMPORT: tuple[str, ...] = ()
