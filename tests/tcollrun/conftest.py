"""Shared pieces of tcollrun's unit tests (no MPI runs here).

The runner package is loaded from the source tree, python/tcoll/runner/, as
the top-level package ``tcoll_runner``, the way the tcollrun script loads it:
without importing ``tcoll`` (so no extension and no NumPy are needed). The
script itself is $TC_TCOLLRUN (the CTest sets build/tools/tcollrun), else
tools/tcollrun. ``fake_launcher`` writes a stand-in for mpiexec that answers
``--version`` like Open MPI or MPICH and otherwise records its argv and
environment and exits with a chosen status.
"""

import importlib.util
import json
import os
import stat
import sys

import pytest

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUNNER_DIR = os.path.join(SRC, "python", "tcoll", "runner")

VERSION_TEXT = {
    "openmpi": "mpiexec (OpenRTE) 4.1.4\n\n"
               "Report bugs to http://www.open-mpi.org/community/help/\n",
    "openmpi5": "mpirun (Open MPI) 5.0.3\n\n"
                "Report bugs to https://www.open-mpi.org/community/help/\n",
    "mpich": "HYDRA build details:\n    Version:                                 4.0.2\n"
             "    Release Date:                            Thu Apr  7 12:34:45 CDT 2022\n",
    "other": "some-launcher 1.0\n",
}


def load_runner():
    if "tcoll_runner" in sys.modules:
        return sys.modules["tcoll_runner"]
    spec = importlib.util.spec_from_file_location(
        "tcoll_runner", os.path.join(RUNNER_DIR, "__init__.py"),
        submodule_search_locations=[RUNNER_DIR])
    module = importlib.util.module_from_spec(spec)
    sys.modules["tcoll_runner"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def runner():
    return load_runner()


@pytest.fixture
def fake_launcher(tmp_path):
    """make(flavor, status=0) -> (path, record): path of a fake mpiexec; after
    it ran, record() returns {"argv": [...], "env": {...}}."""
    def make(flavor, status=0, name="mpiexec"):
        path = tmp_path / name
        log = tmp_path / (name + ".json")
        path.write_text(
            "#!/usr/bin/python3\n"
            "import json, os, sys\n"
            "if sys.argv[1:] == ['--version']:\n"
            "    sys.stdout.write(%r)\n"
            "    sys.exit(0)\n"
            "json.dump({'argv': sys.argv, 'env': dict(os.environ)}, open(%r, 'w'))\n"
            "sys.exit(%d)\n" % (VERSION_TEXT[flavor], str(log), status))
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        return str(path), lambda: json.loads(log.read_text())
    return make


@pytest.fixture(scope="session")
def tcollrun_script():
    return os.environ.get("TC_TCOLLRUN") or os.path.join(SRC, "tools", "tcollrun")
