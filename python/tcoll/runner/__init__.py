"""tcoll.runner: ``tcollrun``, a launcher like ``horovodrun`` for tcoll jobs.

``tcollrun -np 4 -H host1:2,host2:2 python train.py`` starts the job
through the MPI launcher (Open MPI's or MPICH's ``mpiexec``) with flags
suited to Python ranks, horovodrun's tuning flags turned into TCOLL_*
knobs, and the variables ranks need passed on; ``tcollrun --check-build``
says what tcoll was built with. ``python3 -m tcoll.runner`` is the same
command. The modules, one concern each:

* cli: the command line and the run (``main``);
* knobs: horovodrun's tuning flags -> TCOLL_* variables;
* hosts: ``-H`` and hostfiles, local and remote hosts, the ssh check;
* mpi: the launcher's flavor and its command line;
* check_build: ``--check-build``.

Standard library only: the ``tcollrun`` script loads this package without
importing ``tcoll`` itself (no NumPy, no MPI in the launcher's process).
Usage and every flag: docs/tcollrun.md.
"""

from .cli import main  # noqa: F401

__all__ = ["main"]
