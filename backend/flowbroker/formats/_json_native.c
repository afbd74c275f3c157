/*
 * The JSON domain's scan for integers orjson cannot keep exact, in C: whether a document holds a
 * run of 19 or more ASCII digits (formats/json.py `_has_long_number` does the same in Python,
 * mapping digits through bytes.translate and searching the copy).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define LONG_RUN 19
#define IS_DIGIT(c) ((c) >= '0' && (c) <= '9')

static PyObject *
has_long_number(PyObject *module, PyObject *arg)
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *p = view.buf;
    Py_ssize_t n = view.len, start = 0, found = 0;
    /* A run of LONG_RUN digits starting at or after `start` covers start + LONG_RUN - 1: a byte
     * there that is no digit moves the search past it, so most bytes of text are never read.
     * Otherwise the run through that byte is measured backwards to `start` and then forwards;
     * every byte is read at most once backwards and once forwards. */
    while (!found && start + LONG_RUN - 1 < n) {
        Py_ssize_t end = start + LONG_RUN - 1;
        if (!IS_DIGIT(p[end])) {
            start = end + 1;
            continue;
        }
        Py_ssize_t first = end;
        while (first > start && IS_DIGIT(p[first - 1]))
            first--;
        Py_ssize_t last = end;
        while (last - first + 1 < LONG_RUN && last + 1 < n && IS_DIGIT(p[last + 1]))
            last++;
        if (last - first + 1 >= LONG_RUN)
            found = 1;
        else
            start = last + 2; /* p[last + 1] is no digit (or the end) */
    }
    PyBuffer_Release(&view);
    return PyBool_FromLong(found);
}

static PyMethodDef methods[] = {
    {"has_long_number", has_long_number, METH_O,
     "has_long_number(data) -> whether data holds a run of 19 or more ASCII digits"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_json_native", "The JSON domain's long-number scan in C.", -1, methods, NULL, NULL,
    NULL, NULL,
};

PyMODINIT_FUNC
PyInit__json_native(void)
{
    return PyModule_Create(&module_def);
}
