/*
 * submit.c - the extension's collective calls: each takes buffers (any
 * object with the buffer protocol, C-contiguous), a dtype code and a shape,
 * checks that the buffers hold exactly that tensor, submits it through the
 * C API and returns a Request that holds the buffers until the operation
 * completes. Nothing is copied; a non-contiguous buffer is refused (the
 * Python layer decides whether to copy first).
 *
 * CUDA tensors (torch, tensor.c) go as device tensors: every buffer of a
 * call must be on the same device, and stream (the cudaStream_t's value,
 * 0 for the legacy default stream) is the stream that produced them
 * (tc_opts_t.device, cuda_stream).
 */
#include "ext.h"

#include <stdint.h>
#include <string.h>

/* The tensor of dtype and shape (a sequence of ints) over buf; -1 with a
 * ValueError or TypeError set when they do not fit together. */
static int make_tensor(const char *what, const Py_buffer *buf, int dtype, PyObject *shape,
                       tc_tensor_t *t)
{
    Py_ssize_t n, i;
    size_t count = 1, es = tc_dtype_size((tc_dtype_t)dtype);
    PyObject *seq;

    if (es == 0) {
        PyErr_Format(PyExc_ValueError, "%s: unknown dtype code %d", what, dtype);
        return -1;
    }
    seq = PySequence_Fast(shape, "shape must be a sequence of ints");
    if (seq == NULL) {
        return -1;
    }
    n = PySequence_Fast_GET_SIZE(seq);
    if (n > TC_MAX_DIMS) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "%s: %zd dimensions, at most %d", what, n, TC_MAX_DIMS);
        return -1;
    }
    memset(t, 0, sizeof(*t));
    for (i = 0; i < n; i++) {
        long long d = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
        if (d == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
        if (d < 0) {
            Py_DECREF(seq);
            PyErr_Format(PyExc_ValueError, "%s: dimension %zd is negative (%lld)", what, i, d);
            return -1;
        }
        t->shape[i] = (int64_t)d;
        count *= (size_t)d;
    }
    Py_DECREF(seq);
    t->ndim = (int)n;
    t->dtype = (tc_dtype_t)dtype;
    t->data = buf->buf;
    if ((size_t)buf->len != count * es) {
        PyErr_Format(PyExc_ValueError,
                     "%s: the buffer holds %zd bytes, a %s tensor of that shape "
                     "needs %zu",
                     what, buf->len, tc_dtype_name((tc_dtype_t)dtype), count * es);
        return -1;
    }
    return 0;
}

/* A C-contiguous view of obj (writable if asked): a buffer-protocol
 * object's own, or a torch tensor's memory (tensor.c); -1 with an
 * exception. *device_p: -1 for host memory, or the CUDA device. When
 * *device_p is already set (>= -1: an earlier buffer of the call), obj must
 * be in the same memory. */
static int get_buffer(const char *what, PyObject *obj, int writable, Py_buffer *view, int *device_p)
{
    int flags = PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
    int device = -1;
    int r = tcx_tensor_buffer(what, obj, view, &device);

    if (r < 0) {
        return -1;
    }
    if (r > 0) {
        if (*device_p >= -1 && *device_p != device) {
            PyBuffer_Release(view);
            PyErr_Format(PyExc_ValueError,
                         "%s: the tensors of one call must be in the same memory (%s%d and "
                         "%s%d)",
                         what, *device_p < 0 ? "host " : "cuda:", *device_p,
                         device < 0 ? "host " : "cuda:", device);
            return -1;
        }
        *device_p = device;
        return 0;
    }
    if (*device_p >= 0) {
        PyErr_Format(PyExc_ValueError,
                     "%s: the tensors of one call must be in the same memory (cuda:%d and a "
                     "host buffer)",
                     what, *device_p);
        return -1;
    }
    *device_p = -1;
    if (PyObject_GetBuffer(obj, view, flags) < 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError,
                     "%s: needs a C-contiguous%s buffer (a NumPy array or a "
                     "CPU tensor's .numpy()), not %.100s",
                     what, writable ? ", writable" : "", Py_TYPE(obj)->tp_name);
        return -1;
    }
    return 0;
}

static tc_opts_t make_opts(double prescale, double postscale, int process_set, int device,
                           unsigned long long stream)
{
    tc_opts_t o = TC_OPTS_INIT;

    o.prescale = prescale;
    o.postscale = postscale;
    o.process_set = process_set;
    if (device >= 0) {
        o.device = device;
        o.cuda_stream = (void *)(uintptr_t)stream;
    }
    return o;
}

/* Reads a list of row counts into splits[0..n-1] (n at most cap). */
static int read_splits(PyObject *obj, int64_t *splits, int cap, int *n_p)
{
    PyObject *seq = PySequence_Fast(obj, "splits must be a sequence of ints");
    Py_ssize_t n, i;

    if (seq == NULL) {
        return -1;
    }
    n = PySequence_Fast_GET_SIZE(seq);
    if (n > cap) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "alltoall: %zd splits for a process set of %d ranks", n,
                     cap);
        return -1;
    }
    for (i = 0; i < n; i++) {
        long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
        splits[i] = (int64_t)v;
    }
    Py_DECREF(seq);
    *n_p = (int)n;
    return 0;
}

/* submit(kind, name, send, recv, dtype, shape, op=0, root=0, splits=None,
 *        prescale=1.0, postscale=1.0, process_set=0, stream=0) -> Request
 * kind: "allreduce" (recv: where the result goes, may be send itself),
 * "allgather", "broadcast" (send is the buffer, in place), "reducescatter",
 * "alltoall" (splits: rows to each member, or None). */
static PyObject *tcx_submit(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"kind",      "name",        "send",   "recv",   "dtype",
                             "shape",     "op",          "root",   "splits", "prescale",
                             "postscale", "process_set", "stream", NULL};
    const char *kind, *name;
    PyObject *send, *recv, *shape, *splits_obj = Py_None;
    int dtype, op = TC_SUM, root = 0, pset = 0, nbufs = 0, nsplits = 0, size, device = -2;
    double prescale = 1.0, postscale = 1.0;
    unsigned long long stream = 0;
    Py_buffer bufs[TCX_MAX_BUFS];
    tc_tensor_t t;
    tc_opts_t o;
    tc_request_t *req = NULL;
    tc_status_t st;
    int64_t *splits = NULL;
    int in_place_recv;

    (void)self;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "ssOOiO|iiOddiK", kwlist, &kind, &name, &send, &recv,
                                     &dtype, &shape, &op, &root, &splits_obj, &prescale, &postscale,
                                     &pset, &stream)) {
        return NULL;
    }
    tcx_orphans_sweep();
    if (get_buffer(name, send, strcmp(kind, "broadcast") == 0, &bufs[0], &device) < 0) {
        return NULL;
    }
    nbufs = 1;
    if (make_tensor(name, &bufs[0], dtype, shape, &t) < 0) {
        goto fail;
    }
    in_place_recv = recv == send;
    if (strcmp(kind, "allreduce") == 0 && recv != Py_None && !in_place_recv) {
        tc_tensor_t r;
        if (get_buffer(name, recv, 1, &bufs[1], &device) < 0) {
            goto fail;
        }
        nbufs = 2;
        if (make_tensor(name, &bufs[1], dtype, shape, &r) < 0) {
            goto fail;
        }
    }
    o = make_opts(prescale, postscale, pset, device, stream);
    if (strcmp(kind, "allreduce") == 0) {
        void *out = nbufs == 2 ? bufs[1].buf : t.data;
        if (recv == Py_None || (!in_place_recv && nbufs != 2)) {
            PyErr_SetString(PyExc_ValueError, "allreduce: recv is required (send itself for in "
                                              "place)");
            goto fail;
        }
        if (in_place_recv && bufs[0].readonly) {
            PyErr_SetString(PyExc_ValueError, "allreduce: an in-place buffer must be writable");
            goto fail;
        }
        st = tc_allreduce_ex(name, &t, out, (tc_op_t)op, &o, &req);
    } else if (strcmp(kind, "allgather") == 0) {
        st = tc_allgather_ex(name, &t, &o, &req);
    } else if (strcmp(kind, "broadcast") == 0) {
        st = tc_broadcast_ex(name, &t, root, &o, &req);
    } else if (strcmp(kind, "reducescatter") == 0) {
        st = tc_reducescatter_ex(name, &t, (tc_op_t)op, &o, &req);
    } else if (strcmp(kind, "alltoall") == 0) {
        size = pset == 0 ? tc_size() : tc_process_set_size(pset);
        if (splits_obj != Py_None) {
            splits = PyMem_Calloc(size > 0 ? (size_t)size : 1, sizeof(*splits));
            if (splits == NULL) {
                PyErr_NoMemory();
                goto fail;
            }
            if (read_splits(splits_obj, splits, size > 0 ? size : 0, &nsplits) < 0) {
                goto fail;
            }
            if (nsplits != size) {
                PyErr_Format(PyExc_ValueError,
                             "alltoall '%s': %d splits, the process set has "
                             "%d ranks",
                             name, nsplits, size);
                goto fail;
            }
        }
        st = tc_alltoall_ex(name, &t, splits, &o, &req);
        PyMem_Free(splits);
        splits = NULL;
    } else {
        PyErr_Format(PyExc_ValueError, "unknown collective '%s'", kind);
        goto fail;
    }
    if (st != TC_OK) {
        tcx_raise(st, NULL);
        goto fail;
    }
    {
        PyObject *r = tcx_request_new(req, bufs, nbufs);
        if (r != NULL) {
            ((TcRequest *)r)->device = device;
        }
        return r;
    }

fail:
    PyMem_Free(splits);
    while (nbufs > 0) {
        PyBuffer_Release(&bufs[--nbufs]);
    }
    return NULL;
}

/* barrier(process_set=0) -> Request; join(process_set=0) -> Request */
static PyObject *no_tensor_call(PyObject *args, PyObject *kw, int join)
{
    static char *kwlist[] = {"process_set", NULL};
    int pset = 0;
    tc_opts_t o;
    tc_request_t *req = NULL;
    tc_status_t st;

    if (!PyArg_ParseTupleAndKeywords(args, kw, "|i", kwlist, &pset)) {
        return NULL;
    }
    tcx_orphans_sweep();
    o = make_opts(1.0, 1.0, pset, -1, 0);
    st = join ? tc_join_ex(&o, &req) : tc_barrier_ex(&o, &req);
    if (st != TC_OK) {
        return tcx_raise(st, NULL);
    }
    return tcx_request_new(req, NULL, 0);
}

static PyObject *tcx_barrier(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    return no_tensor_call(args, kw, 0);
}

static PyObject *tcx_join(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    return no_tensor_call(args, kw, 1);
}

/* grouped(kind, names, sends, recvs, dtypes, shapes, op=0, prescale=1.0,
 *         postscale=1.0, process_set=0, stream=0) -> [Request]
 * kind "allreduce" (recvs: one per member, or the sends themselves),
 * "allgather" or "reducescatter" (recvs None). */
static PyObject *tcx_grouped(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"kind", "names",    "sends",     "recvs",       "dtypes", "shapes",
                             "op",   "prescale", "postscale", "process_set", "stream", NULL};
    const char *kind;
    PyObject *names_o, *sends_o, *recvs_o, *dtypes_o, *shapes_o, *out = NULL;
    PyObject *names = NULL, *sends = NULL, *recvs = NULL, *dtypes = NULL, *shapes = NULL;
    int op = TC_SUM, pset = 0, allreduce, device = -2;
    double prescale = 1.0, postscale = 1.0;
    unsigned long long stream = 0;
    Py_ssize_t n = 0, i;
    const char **cnames = NULL;
    tc_tensor_t *ts = NULL;
    void **outs = NULL;
    tc_request_t **reqs = NULL;
    Py_buffer *bufs = NULL; /* [2n]: member i's send at 2i, recv at 2i+1 */
    int *nb = NULL;
    tc_opts_t o;
    tc_status_t st;

    (void)self;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "sOOOOO|iddiK", kwlist, &kind, &names_o, &sends_o,
                                     &recvs_o, &dtypes_o, &shapes_o, &op, &prescale, &postscale,
                                     &pset, &stream)) {
        return NULL;
    }
    tcx_orphans_sweep();
    allreduce = strcmp(kind, "allreduce") == 0;
    if (!allreduce && strcmp(kind, "allgather") != 0 && strcmp(kind, "reducescatter") != 0) {
        PyErr_Format(PyExc_ValueError, "grouped: unknown collective '%s'", kind);
        return NULL;
    }
    if ((names = PySequence_Fast(names_o, "names must be a sequence")) == NULL ||
        (sends = PySequence_Fast(sends_o, "sends must be a sequence")) == NULL ||
        (dtypes = PySequence_Fast(dtypes_o, "dtypes must be a sequence")) == NULL ||
        (shapes = PySequence_Fast(shapes_o, "shapes must be a sequence")) == NULL ||
        (allreduce && (recvs = PySequence_Fast(recvs_o, "recvs must be a sequence")) == NULL)) {
        goto done;
    }
    n = PySequence_Fast_GET_SIZE(names);
    if (PySequence_Fast_GET_SIZE(sends) != n || PySequence_Fast_GET_SIZE(dtypes) != n ||
        PySequence_Fast_GET_SIZE(shapes) != n ||
        (allreduce && PySequence_Fast_GET_SIZE(recvs) != n)) {
        PyErr_SetString(PyExc_ValueError, "grouped: names, sends, recvs, dtypes and shapes must "
                                          "have one entry per member");
        goto done;
    }
    cnames = PyMem_Calloc((size_t)n + 1, sizeof(*cnames));
    ts = PyMem_Calloc((size_t)n + 1, sizeof(*ts));
    outs = PyMem_Calloc((size_t)n + 1, sizeof(*outs));
    reqs = PyMem_Calloc((size_t)n + 1, sizeof(*reqs));
    bufs = PyMem_Calloc(2 * (size_t)n + 1, sizeof(*bufs));
    nb = PyMem_Calloc((size_t)n + 1, sizeof(*nb));
    if (cnames == NULL || ts == NULL || outs == NULL || reqs == NULL || bufs == NULL ||
        nb == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (i = 0; i < n; i++) {
        PyObject *s = PySequence_Fast_GET_ITEM(sends, i);
        long dt = PyLong_AsLong(PySequence_Fast_GET_ITEM(dtypes, i));
        if ((cnames[i] = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(names, i))) == NULL ||
            (dt == -1 && PyErr_Occurred()) ||
            get_buffer(cnames[i], s, allreduce && PySequence_Fast_GET_ITEM(recvs, i) == s,
                       &bufs[2 * i], &device) < 0) {
            goto done;
        }
        nb[i] = 1;
        if (make_tensor(cnames[i], &bufs[2 * i], (int)dt, PySequence_Fast_GET_ITEM(shapes, i),
                        &ts[i]) < 0) {
            goto done;
        }
        if (allreduce) {
            PyObject *r = PySequence_Fast_GET_ITEM(recvs, i);
            tc_tensor_t rt;
            if (r == s) {
                outs[i] = ts[i].data;
                continue;
            }
            if (get_buffer(cnames[i], r, 1, &bufs[2 * i + 1], &device) < 0) {
                goto done;
            }
            nb[i] = 2;
            if (make_tensor(cnames[i], &bufs[2 * i + 1], (int)dt,
                            PySequence_Fast_GET_ITEM(shapes, i), &rt) < 0) {
                goto done;
            }
            outs[i] = rt.data;
        }
    }
    o = make_opts(prescale, postscale, pset, device, stream);
    st = allreduce ? tc_grouped_allreduce((int)n, cnames, ts, outs, (tc_op_t)op, &o, reqs)
         : strcmp(kind, "allgather") == 0
             ? tc_grouped_allgather((int)n, cnames, ts, &o, reqs)
             : tc_grouped_reducescatter((int)n, cnames, ts, (tc_op_t)op, &o, reqs);
    if (st != TC_OK) {
        tcx_raise(st, NULL);
        goto done;
    }
    /* submitted: each request takes its buffers (a Request that cannot be
     * made, or is dropped, keeps them as an orphan until it completes) */
    out = PyList_New(n);
    for (i = 0; i < n; i++) {
        PyObject *r = tcx_request_new(reqs[i], &bufs[2 * i], nb[i]);
        nb[i] = 0;
        if (r != NULL) {
            ((TcRequest *)r)->device = device;
        }
        if (out != NULL && r != NULL) {
            PyList_SET_ITEM(out, i, r);
        } else {
            Py_XDECREF(r);
        }
    }
    if (PyErr_Occurred()) {
        Py_CLEAR(out);
    }

done:
    for (i = 0; nb != NULL && i < n; i++) {
        if (nb[i] > 0) {
            PyBuffer_Release(&bufs[2 * i]);
        }
        if (nb[i] > 1) {
            PyBuffer_Release(&bufs[2 * i + 1]);
        }
    }
    PyMem_Free(cnames);
    PyMem_Free(ts);
    PyMem_Free(outs);
    PyMem_Free(reqs);
    PyMem_Free(bufs);
    PyMem_Free(nb);
    Py_XDECREF(names);
    Py_XDECREF(sends);
    Py_XDECREF(recvs);
    Py_XDECREF(dtypes);
    Py_XDECREF(shapes);
    return out;
}

PyMethodDef tcx_submit_methods[] = {
    {"submit", (PyCFunction)(void (*)(void))tcx_submit, METH_VARARGS | METH_KEYWORDS,
     "submit(kind, name, send, recv, dtype, shape, op=0, root=0, splits=None, prescale=1.0, "
     "postscale=1.0, process_set=0, stream=0) -> Request"},
    {"grouped", (PyCFunction)(void (*)(void))tcx_grouped, METH_VARARGS | METH_KEYWORDS,
     "grouped(kind, names, sends, recvs, dtypes, shapes, op=0, prescale=1.0, postscale=1.0, "
     "process_set=0, stream=0) -> [Request]"},
    {"barrier", (PyCFunction)(void (*)(void))tcx_barrier, METH_VARARGS | METH_KEYWORDS,
     "barrier(process_set=0) -> Request"},
    {"join", (PyCFunction)(void (*)(void))tcx_join, METH_VARARGS | METH_KEYWORDS,
     "join(process_set=0) -> Request"},
    {"_register_torch", tcx_register_torch, METH_VARARGS,
     "_register_torch(Tensor, strided)\n\nLets the calls take CPU and CUDA torch tensors as "
     "buffers (tcoll.torch calls it)."},
    {NULL, NULL, 0, NULL},
};
