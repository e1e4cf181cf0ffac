/*
 * errors.c - the extension's exceptions: tcoll.Error and one subclass per
 * status, each carrying the library's message.
 *
 * TC_ERR_ARG and TC_ERR_DUPLICATE are the caller's mistakes: their classes
 * are also ValueError (Horovod raises ValueError for a name already in
 * flight), so `except ValueError` catches them. TC_ERR_TIMEOUT's class is
 * also the builtin TimeoutError.
 */
#include "ext.h"

PyObject *tcx_errors[TC_ERR_TIMEOUT + 1];

static const struct {
    tc_status_t st;
    const char *name; /* tcoll.<name> */
    const char *doc;
} classes[] = {
    {TC_ERR_ARG, "InvalidArgumentError", "A bad argument (also a ValueError); nothing changed."},
    {TC_ERR_STATE, "StateError", "A call at the wrong time (before init, while joined, ...)."},
    {TC_ERR_MISMATCH, "MismatchError",
     "The ranks submitted the name with different parameters; raised on every rank."},
    {TC_ERR_DUPLICATE, "DuplicateNameError",
     "The name is already in flight on this rank (also a ValueError)."},
    {TC_ERR_SHUTDOWN, "ShutdownError", "tcoll was shut down (by this rank or another)."},
    {TC_ERR_TRANSPORT, "TransportError",
     "MPI failed, a rank was lost or stopped; tcoll stops on this rank."},
    {TC_ERR_NOMEM, "OutOfMemoryError", "tcoll ran out of memory."},
    {TC_ERR_TIMEOUT, "TimeoutError", "A time limit passed (a stalled tensor, shutdown)."},
};

int tcx_errors_init(PyObject *module)
{
    size_t i;

    tcx_errors[0] = PyErr_NewExceptionWithDoc(
        "tcoll.Error", "Base class of every error tcoll raises.", PyExc_RuntimeError, NULL);
    if (tcx_errors[0] == NULL || PyModule_AddObjectRef(module, "Error", tcx_errors[0]) < 0) {
        return -1;
    }
    for (i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
        char qual[64];
        PyObject *bases;
        snprintf(qual, sizeof(qual), "tcoll.%s", classes[i].name);
        if (classes[i].st == TC_ERR_ARG || classes[i].st == TC_ERR_DUPLICATE) {
            bases = PyTuple_Pack(2, tcx_errors[0], PyExc_ValueError);
        } else if (classes[i].st == TC_ERR_TIMEOUT) {
            bases = PyTuple_Pack(2, tcx_errors[0], PyExc_TimeoutError);
        } else {
            bases = PyTuple_Pack(1, tcx_errors[0]);
        }
        if (bases == NULL) {
            return -1;
        }
        tcx_errors[classes[i].st] = PyErr_NewExceptionWithDoc(qual, classes[i].doc, bases, NULL);
        Py_DECREF(bases);
        if (tcx_errors[classes[i].st] == NULL ||
            PyModule_AddObjectRef(module, classes[i].name, tcx_errors[classes[i].st]) < 0) {
            return -1;
        }
    }
    return 0;
}

PyObject *tcx_raise(tc_status_t st, const char *msg)
{
    PyObject *cls = st > TC_OK && st <= TC_ERR_TIMEOUT && tcx_errors[st] != NULL ? tcx_errors[st]
                                                                                 : tcx_errors[0];

    if (msg == NULL || msg[0] == '\0') {
        msg = tc_last_error();
    }
    if (msg == NULL || msg[0] == '\0') {
        msg = tc_status_string(st);
    }
    PyErr_SetString(cls, msg);
    return NULL;
}
