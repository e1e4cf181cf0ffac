"""tcoll.runner.check_build: ``tcollrun --check-build``, what tcoll was built with.

Prints, in the layout of ``horovodrun --check-build``, which frameworks
tcoll serves (NumPy through ``tcoll``, PyTorch when ``tcoll.torch``
imports), its controller (MPI; never Gloo), its tensor operations (MPI:
tcoll's own engine over MPI; CUDA device tensors when ``tcoll.cuda_built()``;
never NCCL, DDL, CCL or Gloo), then tcoll's version, the MPI library the
package runs on (``MPI_Get_library_version``, which MPI allows before
``MPI_Init``) and the launcher tcollrun would use.

It imports the package in this process but never starts tcoll or MPI.
"""

import ctypes
import os
import re
import sys

# Where an MPI library's file name says which MPI it is.
_MPI_LIB_RE = re.compile(r"/lib(mpi|mpich)(_[a-z]+)?\.so[.0-9]*$")


def mpi_library():
    """The first line of MPI_Get_library_version of the MPI loaded into this
    process (by tcoll's extension), or "" when none is loaded."""
    try:
        with open("/proc/self/maps") as f:
            paths = [line.split(None, 5)[-1].strip() for line in f if ".so" in line]
    except OSError:
        return ""
    for path in dict.fromkeys(paths):
        if not _MPI_LIB_RE.search(path):
            continue
        try:
            lib = ctypes.CDLL(path)
            get = lib.MPI_Get_library_version
        except (OSError, AttributeError):
            continue
        buf = ctypes.create_string_buffer(16384)
        n = ctypes.c_int(0)
        if get(buf, ctypes.byref(n)) != 0:
            continue
        text = buf.value.decode("utf-8", "replace").strip()
        return " ".join(text.splitlines()[0].split()) if text else ""
    return ""


def _import(name):
    try:
        __import__(name)
        return sys.modules[name], ""
    except Exception as e:  # an import failure of any kind is the answer
        return None, "%s: %s" % (type(e).__name__, e)


def probe(pkgdir=None):
    """What the tcoll package here has: a dict with version, numpy, torch
    (bool each), cuda (tcoll.cuda_built()), mpi_library, where, and
    error/torch_error (why an import failed)."""
    info = {"version": None, "numpy": False, "torch": False, "cuda": False,
            "mpi_library": "", "where": "", "error": "", "torch_error": ""}
    added = False
    if pkgdir and pkgdir not in sys.path:
        sys.path.insert(0, pkgdir)
        added = True
    try:
        tcoll, info["error"] = _import("tcoll")
        if tcoll is None:
            return info
        info["version"] = tcoll.__version__
        info["numpy"] = True
        info["where"] = os.path.dirname(os.path.abspath(tcoll.__file__))
        info["cuda"] = bool(tcoll.cuda_built())
        info["mpi_library"] = mpi_library()
        torch, info["torch_error"] = _import("tcoll.torch")
        info["torch"] = torch is not None
        return info
    finally:
        if added:
            sys.path.remove(pkgdir)


def render(info, launcher=None, launcher_error="", verbose=False):
    """The report as text (info from probe; launcher: a mpi.Launcher or None)."""
    def box(on):
        return "[X]" if on else "[ ]"

    lines = ["tcoll v%s:" % info["version"], "",
             "Available Frameworks:",
             "    [ ] TensorFlow",
             "    %s PyTorch (tcoll.torch)" % box(info["torch"]),
             "    [ ] MXNet",
             "    %s NumPy (tcoll)" % box(info["numpy"]),
             "",
             "Available Controllers:",
             "    [X] MPI",
             "    [ ] Gloo",
             "",
             "Available Tensor Operations:",
             "    [ ] NCCL",
             "    [ ] DDL",
             "    [ ] CCL",
             "    [X] MPI (tcoll's engine)",
             "    [ ] Gloo",
             "    %s CUDA (device tensors)" % box(info["cuda"]),
             ""]
    if verbose and info["torch_error"]:
        lines.insert(5, "        (tcoll.torch does not import: %s)" % info["torch_error"])
    lines.append("MPI library: %s" % (info["mpi_library"] or "unknown"))
    if launcher is not None:
        lines.append("MPI launcher: %s (%s)" % (launcher.path, launcher.description))
    else:
        lines.append("MPI launcher: none (%s)" % launcher_error)
    lines.append("Python package: %s" % info["where"])
    lib = info["mpi_library"]
    if launcher is not None and lib:
        lib_flavor = "openmpi" if "Open MPI" in lib else "mpich" if "MPICH" in lib else ""
        if lib_flavor and lib_flavor != launcher.flavor:
            lines.append("WARNING: tcoll runs on %s but the launcher is %s: its ranks would "
                         "not find each other; pass --mpiexec with %s's launcher"
                         % (lib.split(",")[0], launcher.description, lib.split(",")[0]))
    return "\n".join(lines)


def run(pkgdir, launcher, launcher_error, verbose, out=None, err=None):
    """Prints the report. -> exit status: 0, or 1 when tcoll does not
    import (the reason on standard error)."""
    out = out or sys.stdout
    err = err or sys.stderr
    info = probe(pkgdir)
    if info["version"] is None:
        print("tcollrun: the tcoll Python package does not import%s: %s"
              % (" from " + pkgdir if pkgdir else "", info["error"]), file=err)
        return 1
    print(render(info, launcher, launcher_error, verbose), file=out)
    return 0
