/*
 * request.c - the Request type: one tcoll request, the buffers it holds,
 * waiting for it without the GIL, and its output.
 *
 * A Request holds its input and output buffers (Py_buffer views, which keep
 * the arrays alive and their memory in place) until the operation has
 * completed: the engine thread reads and writes that memory without the
 * GIL. An output tcoll allocated (allgather, reducescatter, alltoall) is
 * exported through the buffer protocol without a copy; a NumPy array made
 * from it keeps the Request, and so the output, alive.
 *
 * A Request dropped while its operation is pending cannot let its buffers
 * go (the engine may still write into them) nor free the request (that
 * would wait): it becomes an orphan, and a later call releases it once the
 * operation is done (tcx_orphans_sweep). Everything here runs with the GIL
 * except the wait itself.
 */
#include "ext.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- orphans ------------------------------------------------------------ */

typedef struct orphan {
    struct orphan *next;
    tc_request_t *req;
    Py_buffer bufs[TCX_MAX_BUFS];
    int nbufs;
} orphan_t;

static orphan_t *orphans; /* guarded by the GIL */

static void release_bufs(Py_buffer *bufs, int *nbufs)
{
    int i;

    for (i = 0; i < *nbufs; i++) {
        PyBuffer_Release(&bufs[i]);
    }
    *nbufs = 0;
}

static int is_done(tc_request_t *req)
{
    int done = 0;

    return tc_test(req, &done) != TC_OK || done;
}

void tcx_orphans_sweep(void)
{
    orphan_t **pp = &orphans, *o;

    while ((o = *pp) != NULL) {
        if (!is_done(o->req)) {
            pp = &o->next;
            continue;
        }
        *pp = o->next;
        release_bufs(o->bufs, &o->nbufs);
        tc_request_free(o->req);
        free(o);
    }
}

void tcx_orphans_release_all(void)
{
    orphan_t *o;

    while ((o = orphans) != NULL) {
        orphans = o->next;
        release_bufs(o->bufs, &o->nbufs);
        if (is_done(o->req)) {
            tc_request_free(o->req);
        } /* else: tcoll stopped without completing it; leave it */
        free(o);
    }
}

/* ---- the type ----------------------------------------------------------- */

PyObject *tcx_request_new(tc_request_t *req, Py_buffer *bufs, int nbufs)
{
    TcRequest *r = PyObject_New(TcRequest, &TcRequest_Type);
    int i;

    if (r == NULL) {
        orphan_t *o = calloc(1, sizeof(*o));
        if (o != NULL) {
            o->req = req;
            memcpy(o->bufs, bufs, (size_t)nbufs * sizeof(*bufs));
            o->nbufs = nbufs;
            o->next = orphans;
            orphans = o;
        }
        return NULL;
    }
    r->req = req;
    r->nbufs = nbufs;
    r->exports = 0;
    r->device = -1; /* the submission sets it for device tensors */
    for (i = 0; i < nbufs; i++) {
        r->bufs[i] = bufs[i];
    }
    return (PyObject *)r;
}

static void request_dealloc(TcRequest *r)
{
    if (r->req != NULL && !is_done(r->req)) {
        orphan_t *o = calloc(1, sizeof(*o));
        if (o != NULL) {
            o->req = r->req;
            memcpy(o->bufs, r->bufs, (size_t)r->nbufs * sizeof(r->bufs[0]));
            o->nbufs = r->nbufs;
            o->next = orphans;
            orphans = o;
        } /* out of memory: leak the buffers rather than free them in use */
    } else if (r->req != NULL) {
        release_bufs(r->bufs, &r->nbufs);
        tc_request_free(r->req);
    }
    Py_TYPE(r)->tp_free((PyObject *)r);
}

static PyObject *checked(TcRequest *r)
{
    if (r->req == NULL) {
        return tcx_raise(TC_ERR_STATE, "the request was released");
    }
    return (PyObject *)r;
}

/* wait(): blocks without the GIL until the operation completes; raises its
 * error. The buffers are let go once it has completed. */
static PyObject *request_wait(TcRequest *r, PyObject *unused)
{
    tc_status_t st;

    (void)unused;
    if (checked(r) == NULL) {
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS st = tc_wait(r->req);
    Py_END_ALLOW_THREADS release_bufs(r->bufs, &r->nbufs);
    if (st != TC_OK) {
        return tcx_raise(st, tc_request_error(r->req));
    }
    Py_RETURN_NONE;
}

/* done(): whether the operation has completed (successfully or not); never
 * blocks, never raises for the operation's error. */
static PyObject *request_done(TcRequest *r, PyObject *unused)
{
    (void)unused;
    if (checked(r) == NULL) {
        return NULL;
    }
    return PyBool_FromLong(is_done(r->req));
}

static PyObject *request_status(TcRequest *r, void *closure)
{
    int done = 0;
    tc_status_t st;

    (void)closure;
    if (checked(r) == NULL) {
        return NULL;
    }
    st = tc_test(r->req, &done);
    if (!done) {
        Py_RETURN_NONE;
    }
    return PyLong_FromLong((long)st);
}

static PyObject *request_error(TcRequest *r, void *closure)
{
    (void)closure;
    if (checked(r) == NULL) {
        return NULL;
    }
    return PyUnicode_FromString(tc_request_error(r->req));
}

/* output_info(): (dtype code, shape tuple) of the completed output. */
static PyObject *request_output_info(TcRequest *r, PyObject *unused)
{
    tc_tensor_t out;
    tc_status_t st;
    PyObject *shape;
    int d;

    (void)unused;
    if (checked(r) == NULL) {
        return NULL;
    }
    if ((st = tc_request_output(r->req, &out)) != TC_OK) {
        return tcx_raise(st, tc_request_error(r->req));
    }
    if ((shape = PyTuple_New(out.ndim)) == NULL) {
        return NULL;
    }
    for (d = 0; d < out.ndim; d++) {
        PyTuple_SET_ITEM(shape, d, PyLong_FromLongLong((long long)out.shape[d]));
    }
    return Py_BuildValue("(iN)", (int)out.dtype, shape);
}

/* output_device_ptr(): (address, device) of the completed output of a
 * device tensor's request (memory tcoll allocated on that device, valid
 * while the Request lives); ValueError for host requests. */
static PyObject *request_output_device_ptr(TcRequest *r, PyObject *unused)
{
    tc_tensor_t out;
    tc_status_t st;

    (void)unused;
    if (checked(r) == NULL) {
        return NULL;
    }
    if (r->device < 0) {
        PyErr_SetString(PyExc_ValueError, "the request's tensors are in host memory (use the "
                                          "buffer protocol)");
        return NULL;
    }
    if ((st = tc_request_output(r->req, &out)) != TC_OK) {
        return tcx_raise(st, tc_request_error(r->req));
    }
    return Py_BuildValue("(Ki)", (unsigned long long)(uintptr_t)out.data, r->device);
}

/* splits(): the rows of dimension 0 that came from each rank (allgather,
 * alltoall). */
static PyObject *request_splits(TcRequest *r, PyObject *unused)
{
    const int64_t *splits;
    int n, i;
    tc_status_t st;
    PyObject *list;

    (void)unused;
    if (checked(r) == NULL) {
        return NULL;
    }
    if ((st = tc_request_splits(r->req, &splits, &n)) != TC_OK) {
        return tcx_raise(st, NULL);
    }
    if ((list = PyList_New(n)) == NULL) {
        return NULL;
    }
    for (i = 0; i < n; i++) {
        PyList_SET_ITEM(list, i, PyLong_FromLongLong((long long)splits[i]));
    }
    return list;
}

/* last_joined(): after a join, the rank that joined last. */
static PyObject *request_last_joined(TcRequest *r, PyObject *unused)
{
    int rank = -1;
    tc_status_t st;

    (void)unused;
    if (checked(r) == NULL) {
        return NULL;
    }
    if ((st = tc_request_last_joined(r->req, &rank)) != TC_OK) {
        return tcx_raise(st, NULL);
    }
    return PyLong_FromLong(rank);
}

/* The completed output's bytes, writable, without a copy. */
static int request_getbuffer(TcRequest *r, Py_buffer *view, int flags)
{
    tc_tensor_t out;
    size_t bytes = 0;
    tc_status_t st;
    int d;

    if (r->req == NULL || (st = tc_request_output(r->req, &out)) != TC_OK) {
        PyErr_SetString(PyExc_BufferError, "the request has no output (not completed, failed, "
                                           "or released)");
        return -1;
    }
    if (r->device >= 0) {
        PyErr_Format(PyExc_BufferError,
                     "the output is in memory of CUDA device %d, not host memory "
                     "(output_device_ptr())",
                     r->device);
        return -1;
    }
    if (out.data != NULL) {
        bytes = tc_dtype_size(out.dtype);
        for (d = 0; d < out.ndim; d++) {
            bytes *= (size_t)out.shape[d];
        }
    }
    if (PyBuffer_FillInfo(view, (PyObject *)r, out.data != NULL ? out.data : (void *)"",
                          (Py_ssize_t)bytes, 0, flags) < 0) {
        return -1;
    }
    r->exports++;
    return 0;
}

static void request_releasebuffer(TcRequest *r, Py_buffer *view)
{
    (void)view;
    r->exports--;
}

static PyBufferProcs request_as_buffer = {
    (getbufferproc)request_getbuffer,
    (releasebufferproc)request_releasebuffer,
};

static PyMethodDef request_methods[] = {
    {"wait", (PyCFunction)request_wait, METH_NOARGS,
     "wait()\n\nBlocks until the operation completes (without holding the GIL); raises its "
     "error."},
    {"done", (PyCFunction)request_done, METH_NOARGS,
     "done() -> bool\n\nWhether the operation has completed; never blocks."},
    {"output_info", (PyCFunction)request_output_info, METH_NOARGS,
     "output_info() -> (dtype, shape)\n\nThe completed output's dtype code and shape."},
    {"output_device_ptr", (PyCFunction)request_output_device_ptr, METH_NOARGS,
     "output_device_ptr() -> (address, device)\n\nA device tensor's completed output: its "
     "address in the device's memory (valid while the Request lives)."},
    {"splits", (PyCFunction)request_splits, METH_NOARGS,
     "splits() -> list\n\nAllgather, alltoall: the rows that came from each rank."},
    {"last_joined", (PyCFunction)request_last_joined, METH_NOARGS,
     "last_joined() -> int\n\nA join: the rank that joined last."},
    {NULL, NULL, 0, NULL},
};

static PyObject *request_device(TcRequest *r, void *closure)
{
    (void)closure;
    return PyLong_FromLong(r->device);
}

static PyGetSetDef request_getset[] = {
    {"device", (getter)request_device, NULL,
     "The CUDA device of the request's tensors, or -1 (host memory).", NULL},
    {"status", (getter)request_status, NULL, "The status code once completed, else None.", NULL},
    {"error", (getter)request_error, NULL, "Why it failed ('' while pending or on success).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject TcRequest_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tcoll._tcoll.Request",
    .tp_basicsize = sizeof(TcRequest),
    .tp_dealloc = (destructor)request_dealloc,
    .tp_as_buffer = &request_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One tcoll operation in flight (returned by the submission calls).",
    .tp_methods = request_methods,
    .tp_getset = request_getset,
};
