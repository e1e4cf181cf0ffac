/*
 * ext.h - what the files of the _tcoll extension module share: the Request
 * type (request.c), the exceptions and the status-to-exception mapping
 * (errors.c), the submission calls (submit.c) and the module itself
 * (module.c).
 *
 * The extension is a thin layer over libtcoll's C API (include/tcoll.h):
 * buffers come in through the buffer protocol (NumPy arrays) or as PyTorch
 * CPU tensors (tensor.c: their memory, once tcoll.torch registered the
 * tensor type), are held by the Request until the operation completes, and
 * are never copied here. The
 * engine thread never touches a Python object, so it never needs the GIL;
 * every wait releases it.
 */
#ifndef TC_PY_EXT_H
#define TC_PY_EXT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "tcoll.h"

#define TCX_MAX_BUFS 2 /* the send and receive buffers of one request */

typedef struct {
    PyObject_HEAD tc_request_t *req; /* NULL once released */
    Py_buffer bufs[TCX_MAX_BUFS];    /* held while the operation may touch them */
    int nbufs;
    Py_ssize_t exports; /* buffer views of the output alive */
    int device;         /* the CUDA device of its tensors, or -1 (host memory) */
} TcRequest;

extern PyTypeObject TcRequest_Type;

/* errors.c: the exception classes, one per status (tcx_errors[st]); Error is
 * tcx_errors[0]. */
extern PyObject *tcx_errors[TC_ERR_TIMEOUT + 1];
int tcx_errors_init(PyObject *module);
/* Raises the exception of st with msg (NULL: tc_last_error()). Returns NULL. */
PyObject *tcx_raise(tc_status_t st, const char *msg);

/* request.c: a Request holding req and the buffers bufs[0..nbufs-1] (moved
 * into it: the caller must not release them). NULL with an exception set
 * when out of memory (then req is freed once done and the buffers are
 * released). */
PyObject *tcx_request_new(tc_request_t *req, Py_buffer *bufs, int nbufs);
/* Releases what requests dropped while pending left behind, once their
 * operations completed (called with the GIL, at each submission). */
void tcx_orphans_sweep(void);
/* At shutdown, after every request completed: releases every orphan. */
void tcx_orphans_release_all(void);

/* tensor.c: _register_torch(Tensor, strided); and obj as a writable buffer
 * over its memory if it is a registered torch tensor: 1 (view filled,
 * holding a reference to obj; *device_p -1 for a CPU tensor, else the CUDA
 * device whose memory the view is over), 0 (not a torch tensor: view
 * untouched), -1 (a tensor tcoll cannot take as memory: ValueError set). */
PyObject *tcx_register_torch(PyObject *self, PyObject *args);

/* shared.c: SharedBuffer, and mem_alloc(nbytes) making one. */
extern PyTypeObject TcShared_Type;
PyObject *tcx_mem_alloc(PyObject *self, PyObject *arg);
int tcx_tensor_buffer(const char *what, PyObject *obj, Py_buffer *view, int *device_p);

/* submit.c: the module's collective calls. */
extern PyMethodDef tcx_submit_methods[];

#endif
