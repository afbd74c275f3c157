/*
 * The JSON domain's scan for integers orjson cannot keep exact, in C: whether a document holds a
 * run of 19 or more ASCII digits (formats/json.py `_has_long_number` does the same in Python,
 * mapping digits through bytes.translate and searching the copy).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define LONG_RUN 19

static PyObject *
has_long_number(PyObject *module, PyObject *arg)
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *p = view.buf;
    Py_ssize_t run = 0, found = 0;
    for (Py_ssize_t i = 0; i < view.len; i++) {
        if (p[i] >= '0' && p[i] <= '9') {
            if (++run >= LONG_RUN) {
                found = 1;
                break;
            }
        }
        else
            run = 0;
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
