/*
 * tensor.c - PyTorch CPU tensors as buffers, without going through NumPy.
 *
 * torch.Tensor has no buffer protocol, and tensor.numpy() costs about a
 * microsecond per call, more than a small allreduce's whole share of the
 * Python layer. So tcoll.torch registers torch.Tensor and torch.strided
 * once (_register_torch), and a tensor is then taken as a buffer over its
 * own memory (data_ptr()): the view holds a reference to the tensor, which
 * keeps its storage alive until the request lets the view go.
 *
 * Only what is safe to read and write as plain memory is taken: a dense
 * (strided) contiguous tensor without a lazy negation or conjugation bit,
 * on the CPU or on a CUDA device. Anything else is refused with
 * ValueError; tcoll.torch copies or refuses such tensors before they get
 * here, so this is a guard, not the user's error message. A CUDA tensor's
 * view is over device memory: the caller learns the device and must never
 * read the view as host memory (it only hands the address to tcoll, with
 * tc_opts_t.device). The extension itself never imports torch.
 */
#include "ext.h"

#include <limits.h>

static PyObject *tensor_type; /* torch.Tensor, once registered */
static PyObject *strided;     /* torch.strided */

/* The attribute names asked of a tensor, interned at registration. */
enum {
    IS_CPU,
    IS_CUDA,
    GET_DEVICE,
    LAYOUT,
    IS_CONTIGUOUS,
    IS_NEG,
    IS_CONJ,
    NUMEL,
    ELEMENT_SIZE,
    DATA_PTR,
    NATTRS
};
static const char *const attr_names[NATTRS] = {"is_cpu",        "is_cuda", "get_device", "layout",
                                               "is_contiguous", "is_neg",  "is_conj",    "numel",
                                               "element_size",  "data_ptr"};
static PyObject *attrs[NATTRS];

/* _register_torch(Tensor, strided): called by tcoll.torch at import. */
PyObject *tcx_register_torch(PyObject *self, PyObject *args)
{
    PyObject *type, *layout;
    int i;

    (void)self;
    if (!PyArg_ParseTuple(args, "O!O", &PyType_Type, &type, &layout)) {
        return NULL;
    }
    for (i = 0; i < NATTRS; i++) {
        if (attrs[i] == NULL && (attrs[i] = PyUnicode_InternFromString(attr_names[i])) == NULL) {
            return NULL;
        }
    }
    Py_INCREF(type);
    Py_INCREF(layout);
    Py_XSETREF(tensor_type, type);
    Py_XSETREF(strided, layout);
    Py_RETURN_NONE;
}

/* obj.attr() or obj.attr as a truth value: 1, 0, or -1 with an exception. */
static int truth(PyObject *obj, int attr, int call)
{
    PyObject *v =
        call ? PyObject_CallMethodNoArgs(obj, attrs[attr]) : PyObject_GetAttr(obj, attrs[attr]);
    int r;

    if (v == NULL) {
        return -1;
    }
    r = PyObject_IsTrue(v);
    Py_DECREF(v);
    return r;
}

/* obj.attr() as a non-negative integer; -1 with an exception. */
static long long count_of(PyObject *obj, int attr)
{
    PyObject *v = PyObject_CallMethodNoArgs(obj, attrs[attr]);
    long long n;

    if (v == NULL) {
        return -1;
    }
    n = PyLong_AsLongLong(v);
    Py_DECREF(v);
    if (n < 0 && !PyErr_Occurred()) {
        PyErr_Format(PyExc_ValueError, "tensor.%s() is negative", attr_names[attr]);
    }
    return n;
}

static int refuse(const char *what, const char *why)
{
    PyErr_Format(PyExc_ValueError, "%s: the tensor %s", what, why);
    return -1;
}

int tcx_tensor_buffer(const char *what, PyObject *obj, Py_buffer *view, int *device_p)
{
    static char dummy; /* the address of an empty tensor with no storage */
    PyObject *layout, *ptr_obj;
    long long numel, esize, device = -1;
    void *ptr;
    int r;

    if (tensor_type == NULL || !PyObject_TypeCheck(obj, (PyTypeObject *)tensor_type)) {
        return 0;
    }
    if ((r = truth(obj, IS_CPU, 0)) < 0) {
        return -1;
    }
    if (r == 0) {
        if ((r = truth(obj, IS_CUDA, 0)) <= 0) {
            return r < 0 ? -1 : refuse(what, "is on neither the CPU nor a CUDA device");
        }
        if ((device = count_of(obj, GET_DEVICE)) < 0) {
            return -1;
        }
        if (device > INT_MAX) {
            return refuse(what, "is on a CUDA device with a number above INT_MAX");
        }
    }
    layout = PyObject_GetAttr(obj, attrs[LAYOUT]);
    if (layout == NULL) {
        return -1;
    }
    Py_DECREF(layout); /* compared by identity only: torch.strided outlives it */
    if (layout != strided) {
        return refuse(what, "is not dense (strided)");
    }
    if ((r = truth(obj, IS_CONTIGUOUS, 1)) <= 0) {
        return r < 0 ? -1 : refuse(what, "is not contiguous");
    }
    if ((r = truth(obj, IS_NEG, 1)) != 0 || (r = truth(obj, IS_CONJ, 1)) != 0) {
        return r < 0 ? -1 : refuse(what, "has a lazy negation or conjugation bit (resolve it)");
    }
    if ((numel = count_of(obj, NUMEL)) < 0 || (esize = count_of(obj, ELEMENT_SIZE)) < 0) {
        return -1;
    }
    ptr_obj = PyObject_CallMethodNoArgs(obj, attrs[DATA_PTR]);
    if (ptr_obj == NULL) {
        return -1;
    }
    ptr = PyLong_AsVoidPtr(ptr_obj);
    Py_DECREF(ptr_obj);
    if (ptr == NULL && PyErr_Occurred()) {
        return -1;
    }
    if (numel > PY_SSIZE_T_MAX / (esize > 0 ? esize : 1)) {
        return refuse(what, "is too large");
    }
    if (ptr == NULL) {
        if (numel > 0) {
            return refuse(what, "has no memory");
        }
        ptr = &dummy;
    }
    /* The view holds a reference to the tensor (released by
     * PyBuffer_Release); torch.Tensor exports no buffer, so nothing else
     * is called on release. */
    if (PyBuffer_FillInfo(view, obj, ptr, (Py_ssize_t)(numel * esize), 0, PyBUF_WRITABLE) < 0) {
        return -1;
    }
    *device_p = (int)device;
    return 1;
}
