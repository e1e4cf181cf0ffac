/*
 * module.c - the _tcoll extension module: lifetime (init, shutdown), the
 * ids, process sets, the timeline, the dtype and op codes, and the
 * registration of the Request type, the exceptions and the collective calls
 * (submit.c).
 *
 * The Python package tcoll (python/tcoll/__init__.py) is the interface
 * users call; this module is its engine room and keeps to the C API's
 * semantics. Calls that block (init, shutdown, process set creation and
 * removal) release the GIL, so other Python threads run meanwhile.
 */
#include "ext.h"

#include <stdlib.h>

static PyObject *tcx_init(PyObject *self, PyObject *unused)
{
    tc_status_t st;

    (void)self;
    (void)unused;
    Py_BEGIN_ALLOW_THREADS st = tc_init();
    Py_END_ALLOW_THREADS if (st != TC_OK)
    {
        return tcx_raise(st, NULL);
    }
    Py_RETURN_NONE;
}

static PyObject *tcx_shutdown(PyObject *self, PyObject *unused)
{
    tc_status_t st;

    (void)self;
    (void)unused;
    Py_BEGIN_ALLOW_THREADS st = tc_shutdown();
    Py_END_ALLOW_THREADS tcx_orphans_release_all(); /* every request has completed now */
    if (st != TC_OK) {
        return tcx_raise(st, NULL);
    }
    Py_RETURN_NONE;
}

static PyObject *tcx_rank(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyLong_FromLong(tc_rank());
}

static PyObject *tcx_size(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyLong_FromLong(tc_size());
}

static PyObject *tcx_local_rank(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyLong_FromLong(tc_local_rank());
}

static PyObject *tcx_local_size(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyLong_FromLong(tc_local_size());
}

/* process_set_add(ranks) -> id: collective over every rank; blocks. */
static PyObject *tcx_process_set_add(PyObject *self, PyObject *arg)
{
    PyObject *seq = PySequence_Fast(arg, "ranks must be a sequence of ints");
    Py_ssize_t n, i;
    int *ranks, id = -1;
    tc_status_t st;

    (void)self;
    if (seq == NULL) {
        return NULL;
    }
    n = PySequence_Fast_GET_SIZE(seq);
    ranks = PyMem_Calloc((size_t)n + 1, sizeof(*ranks));
    if (ranks == NULL) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    for (i = 0; i < n; i++) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
        if (v == -1 && PyErr_Occurred()) {
            PyMem_Free(ranks);
            Py_DECREF(seq);
            return NULL;
        }
        ranks[i] = (int)v;
    }
    Py_DECREF(seq);
    Py_BEGIN_ALLOW_THREADS st = tc_process_set_add(ranks, (int)n, &id);
    Py_END_ALLOW_THREADS PyMem_Free(ranks);
    if (st != TC_OK) {
        return tcx_raise(st, NULL);
    }
    return PyLong_FromLong(id);
}

static PyObject *tcx_process_set_remove(PyObject *self, PyObject *arg)
{
    long id = PyLong_AsLong(arg);
    tc_status_t st;

    (void)self;
    if (id == -1 && PyErr_Occurred()) {
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS st = tc_process_set_remove((int)id);
    Py_END_ALLOW_THREADS if (st != TC_OK)
    {
        return tcx_raise(st, NULL);
    }
    Py_RETURN_NONE;
}

static PyObject *tcx_process_set_rank(PyObject *self, PyObject *arg)
{
    long id = PyLong_AsLong(arg);

    (void)self;
    if (id == -1 && PyErr_Occurred()) {
        return NULL;
    }
    return PyLong_FromLong(tc_process_set_rank((int)id));
}

static PyObject *tcx_process_set_size(PyObject *self, PyObject *arg)
{
    long id = PyLong_AsLong(arg);

    (void)self;
    if (id == -1 && PyErr_Occurred()) {
        return NULL;
    }
    return PyLong_FromLong(tc_process_set_size((int)id));
}

static PyObject *tcx_process_set_ranks(PyObject *self, PyObject *arg)
{
    long id = PyLong_AsLong(arg);
    int n = 0, *ranks, i;
    tc_status_t st;
    PyObject *list;

    (void)self;
    if (id == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if ((st = tc_process_set_ranks((int)id, NULL, 0, &n)) != TC_OK) {
        return tcx_raise(st, NULL);
    }
    if ((ranks = PyMem_Calloc((size_t)n + 1, sizeof(*ranks))) == NULL) {
        return PyErr_NoMemory();
    }
    st = tc_process_set_ranks((int)id, ranks, n, &n);
    list = st == TC_OK ? PyList_New(n) : tcx_raise(st, NULL);
    for (i = 0; list != NULL && i < n; i++) {
        PyList_SET_ITEM(list, i, PyLong_FromLong(ranks[i]));
    }
    PyMem_Free(ranks);
    return list;
}

/* timeline_start(path): starts this rank's timeline (tc_timeline_start). */
static PyObject *tcx_timeline_start(PyObject *self, PyObject *arg)
{
    const char *path = PyUnicode_AsUTF8(arg);
    tc_status_t st;

    (void)self;
    if (path == NULL) {
        return NULL;
    }
    st = tc_timeline_start(path);
    if (st != TC_OK) {
        return tcx_raise(st, NULL);
    }
    Py_RETURN_NONE;
}

/* timeline_stop(): stops it (tc_timeline_stop); writing the file may block. */
static PyObject *tcx_timeline_stop(PyObject *self, PyObject *unused)
{
    tc_status_t st;

    (void)self;
    (void)unused;
    Py_BEGIN_ALLOW_THREADS st = tc_timeline_stop();
    Py_END_ALLOW_THREADS if (st != TC_OK)
    {
        return tcx_raise(st, NULL);
    }
    Py_RETURN_NONE;
}

static PyObject *tcx_version(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyUnicode_FromString(tc_version());
}

/* cuda_built(), cuda_available(), cuda_info(): tcoll.h's. cuda_available
 * may load the CUDA driver on its first call: without the GIL. */
static PyObject *tcx_cuda_built(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyBool_FromLong(tc_cuda_built());
}

static PyObject *tcx_cuda_available(PyObject *self, PyObject *unused)
{
    int ok;

    (void)self;
    (void)unused;
    Py_BEGIN_ALLOW_THREADS ok = tc_cuda_available();
    Py_END_ALLOW_THREADS return PyBool_FromLong(ok);
}

static PyObject *tcx_cuda_info(PyObject *self, PyObject *unused)
{
    const char *info;

    (void)self;
    (void)unused;
    Py_BEGIN_ALLOW_THREADS info = tc_cuda_info();
    Py_END_ALLOW_THREADS return PyUnicode_FromString(info);
}

static PyMethodDef module_methods[] = {
    {"cuda_built", tcx_cuda_built, METH_NOARGS,
     "cuda_built() -> bool: whether libtcoll was built with CUDA"},
    {"cuda_available", tcx_cuda_available, METH_NOARGS,
     "cuda_available() -> bool: whether device tensors can be used in this process"},
    {"cuda_info", tcx_cuda_info, METH_NOARGS,
     "cuda_info() -> str: the CUDA devices, driver and runtime found, or why not"},
    {"init", tcx_init, METH_NOARGS, "init()\n\nStarts tcoll (and MPI if needed); collective."},
    {"shutdown", tcx_shutdown, METH_NOARGS, "shutdown()\n\nStops tcoll; collective."},
    {"rank", tcx_rank, METH_NOARGS, "rank() -> int (-1 before init)"},
    {"size", tcx_size, METH_NOARGS, "size() -> int (-1 before init)"},
    {"local_rank", tcx_local_rank, METH_NOARGS, "local_rank() -> int"},
    {"local_size", tcx_local_size, METH_NOARGS, "local_size() -> int"},
    {"process_set_add", tcx_process_set_add, METH_O,
     "process_set_add(ranks) -> int\n\nCreates a process set; collective over every rank."},
    {"process_set_remove", tcx_process_set_remove, METH_O,
     "process_set_remove(id)\n\nRemoves a process set; collective over every rank."},
    {"process_set_rank", tcx_process_set_rank, METH_O,
     "process_set_rank(id) -> int (-1: not a member)"},
    {"process_set_size", tcx_process_set_size, METH_O,
     "process_set_size(id) -> int (-1: no such set)"},
    {"process_set_ranks", tcx_process_set_ranks, METH_O, "process_set_ranks(id) -> [int]"},
    {"version", tcx_version, METH_NOARGS, "version() -> str: libtcoll's version"},
    {"mem_alloc", tcx_mem_alloc, METH_O,
     "mem_alloc(nbytes) -> SharedBuffer: memory the node's ranks can map (tc_mem_alloc), "
     "as a writable buffer; freed with its last reference"},
    {"timeline_start", tcx_timeline_start, METH_O,
     "timeline_start(path)\n\nStarts recording this rank's timeline (a Chrome trace); local."},
    {"timeline_stop", tcx_timeline_stop, METH_NOARGS,
     "timeline_stop()\n\nStops recording the timeline; local."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "_tcoll",
    "tcoll's C extension: the engine room of the tcoll package (use tcoll, not this).",
    -1,
    NULL,
    NULL,
    NULL,
    NULL,
    NULL,
};

/* The codes the Python layer passes: dtypes and ops as in tcoll.h. */
static int add_constants(PyObject *m)
{
    static const struct {
        const char *name;
        int value;
    } k[] = {
        {"UINT8", TC_UINT8},     {"INT8", TC_INT8},
        {"INT16", TC_INT16},     {"UINT16", TC_UINT16},
        {"INT32", TC_INT32},     {"INT64", TC_INT64},
        {"FLOAT16", TC_FLOAT16}, {"BFLOAT16", TC_BFLOAT16},
        {"FLOAT32", TC_FLOAT32}, {"FLOAT64", TC_FLOAT64},
        {"SUM", TC_SUM},         {"AVG", TC_AVG},
        {"MIN", TC_MIN},         {"MAX", TC_MAX},
        {"PROD", TC_PROD},       {"MAX_NAME_LEN", TC_MAX_NAME_LEN},
    };
    size_t i;

    for (i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
        if (PyModule_AddIntConstant(m, k[i].name, k[i].value) < 0) {
            return -1;
        }
    }
    return 0;
}

PyMODINIT_FUNC PyInit__tcoll(void);

PyMODINIT_FUNC PyInit__tcoll(void)
{
    PyObject *m;

    if (PyType_Ready(&TcRequest_Type) < 0 || PyType_Ready(&TcShared_Type) < 0) {
        return NULL;
    }
    m = PyModule_Create(&module_def);
    if (m == NULL) {
        return NULL;
    }
    if (PyModule_AddFunctions(m, module_methods) < 0 ||
        PyModule_AddFunctions(m, tcx_submit_methods) < 0 || add_constants(m) < 0 ||
        tcx_errors_init(m) < 0 ||
        PyModule_AddObjectRef(m, "Request", (PyObject *)&TcRequest_Type) < 0 ||
        PyModule_AddObjectRef(m, "SharedBuffer", (PyObject *)&TcShared_Type) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
