/*
 * shared.c - SharedBuffer: memory the node's ranks can map (tc_mem_alloc,
 * tcoll_channel.h) as a writable Python buffer, freed when the last
 * reference goes. tcoll.torch lays gradients out in one (the direct
 * allreduce then reads the peers' gradients with loads instead of
 * process_vm_readv). No tc_init needed; any thread holding the GIL.
 */
#include "ext.h"

#include "tcoll_channel.h"

typedef struct {
    PyObject_HEAD void *data;
    Py_ssize_t size;
} TcShared;

static int shared_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
    TcShared *s = (TcShared *)self;
    return PyBuffer_FillInfo(view, self, s->data, s->size, 0, flags);
}

static void shared_dealloc(PyObject *self)
{
    TcShared *s = (TcShared *)self;
    if (s->data != NULL) {
        (void)tc_mem_free(s->data);
    }
    Py_TYPE(self)->tp_free(self);
}

static PyObject *shared_len(PyObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromSsize_t(((TcShared *)self)->size);
}

static PyBufferProcs shared_as_buffer = {shared_getbuffer, NULL}; /* each view holds self */

static PyGetSetDef shared_getset[] = {
    {"nbytes", shared_len, NULL, "bytes of the buffer", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject TcShared_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "_tcoll.SharedBuffer",
    .tp_basicsize = sizeof(TcShared),
    .tp_dealloc = shared_dealloc,
    .tp_as_buffer = &shared_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Memory the node's ranks can map (tc_mem_alloc), as a writable buffer; "
              "made by mem_alloc(nbytes).",
    .tp_getset = shared_getset,
};

PyObject *tcx_mem_alloc(PyObject *self, PyObject *arg)
{
    Py_ssize_t size = PyLong_AsSsize_t(arg);
    TcShared *s;
    void *p = NULL;
    tc_status_t st;

    (void)self;
    if (size == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (size <= 0) {
        PyErr_SetString(PyExc_ValueError, "mem_alloc: nbytes must be > 0");
        return NULL;
    }
    st = tc_mem_alloc((size_t)size, &p);
    if (st != TC_OK) {
        return tcx_raise(st, NULL);
    }
    s = PyObject_New(TcShared, &TcShared_Type);
    if (s == NULL) {
        (void)tc_mem_free(p);
        return NULL;
    }
    s->data = p;
    s->size = size;
    return (PyObject *)s;
}
