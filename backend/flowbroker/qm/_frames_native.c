/*
 * The queue manager's frame cutter, in C: qm/protocol.py `FrameDecoder.feed` cuts every complete
 * frame `<u32 length><u8 op><u32 rid><u32 n><n bytes of JSON><tail>` (all little-endian) out of
 * its buffer here, and runs its Python loop over the same buffer only when this finds anything
 * amiss: that loop raises the FrameError, with its message and offset, exactly as it always did.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* orjson.loads, handed over once by configure(): this module does not import orjson itself */
static PyObject *loads_fn = NULL;

static inline uint32_t
read_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static PyObject *
configure(PyObject *module, PyObject *loads)
{
    if (!PyCallable_Check(loads)) {
        PyErr_SetString(PyExc_TypeError, "configure() needs the JSON loads function");
        return NULL;
    }
    Py_INCREF(loads);
    Py_XSETREF(loads_fn, loads);
    Py_RETURN_NONE;
}

/* One frame as feed returns it: (op, rid, args, tail). Steals a reference to args. */
static PyObject *
make_frame(unsigned int op, uint32_t rid, PyObject *args, const unsigned char *tail, Py_ssize_t tail_len)
{
    PyObject *frame = PyTuple_New(4);
    if (frame == NULL) {
        Py_DECREF(args);
        return NULL;
    }
    PyTuple_SET_ITEM(frame, 2, args);
    PyObject *item = PyLong_FromLong((long)op);
    if (item == NULL)
        goto error;
    PyTuple_SET_ITEM(frame, 0, item);
    item = PyLong_FromUnsignedLong((unsigned long)rid);
    if (item == NULL)
        goto error;
    PyTuple_SET_ITEM(frame, 1, item);
    item = PyBytes_FromStringAndSize((const char *)tail, tail_len);
    if (item == NULL)
        goto error;
    PyTuple_SET_ITEM(frame, 3, item);
    return frame;
error:
    Py_DECREF(frame);
    return NULL;
}

/*
 * split(buf, max_frame) -> (frames, pos) | None
 *
 * Every complete well-formed frame at the head of buf, and the offset just past the last one;
 * None when anything is amiss (a length over max_frame or under 5, a payload too short for its
 * argument length, an argument length beyond the payload, arguments loads refuses), so that the
 * caller's Python loop finds the fault and reports it.
 */
static PyObject *
split(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "split() takes the buffer and the frame size limit");
        return NULL;
    }
    if (loads_fn == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "split() before configure()");
        return NULL;
    }
    if (!PyLong_Check(args[1]))
        Py_RETURN_NONE; /* a limit of another type: the Python loop compares it */
    int overflow;
    long long limit = PyLong_AsLongLongAndOverflow(args[1], &overflow);
    if (limit == -1 && PyErr_Occurred())
        return NULL;
    if (overflow < 0 || (overflow == 0 && limit < 0))
        Py_RETURN_NONE; /* a negative limit refuses every frame: let the Python loop say so */
    uint64_t max_frame = overflow > 0 ? UINT64_MAX : (uint64_t)limit;

    /* the buffer stays exported (so the bytearray cannot be resized) until we are done with it */
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *b = view.buf;
    const Py_ssize_t n = view.len;
    Py_ssize_t pos = 0;
    PyObject *loads = loads_fn;
    Py_INCREF(loads); /* kept alive should loads itself call configure() */
    PyObject *frames = PyList_New(0);
    if (frames == NULL)
        goto error;

    while (n - pos >= 4) {
        uint32_t length = read_u32(b + pos);
        if ((uint64_t)length > max_frame || length < 5)
            goto anomaly;
        if ((uint64_t)(n - pos - 4) < (uint64_t)length)
            break; /* the rest of this frame is still to come */
        /* length >= 5, so the op and request id lie within the frame */
        unsigned int op = b[pos + 4];
        uint32_t rid = read_u32(b + pos + 5);
        Py_ssize_t start = pos + 9;
        Py_ssize_t end = pos + 4 + (Py_ssize_t)length;
        PyObject *frame;
        if (start == end) {
            Py_INCREF(Py_None);
            frame = make_frame(op, rid, Py_None, b + end, 0);
        }
        else {
            if (end - start < 4)
                goto anomaly;
            uint32_t jlen = read_u32(b + start);
            if ((uint64_t)jlen > (uint64_t)(end - start - 4))
                goto anomaly;
            PyObject *parsed;
            if (jlen == 0) {
                Py_INCREF(Py_None);
                parsed = Py_None;
            }
            else {
                PyObject *doc = PyBytes_FromStringAndSize((const char *)b + start + 4, (Py_ssize_t)jlen);
                if (doc == NULL)
                    goto error;
                parsed = PyObject_CallOneArg(loads, doc);
                Py_DECREF(doc);
                if (parsed == NULL) {
                    if (!PyErr_ExceptionMatches(PyExc_Exception))
                        goto error; /* KeyboardInterrupt and the like go on up */
                    PyErr_Clear();
                    goto anomaly;
                }
            }
            Py_ssize_t tail_at = start + 4 + (Py_ssize_t)jlen;
            frame = make_frame(op, rid, parsed, b + tail_at, end - tail_at);
        }
        if (frame == NULL)
            goto error;
        int failed = PyList_Append(frames, frame);
        Py_DECREF(frame);
        if (failed)
            goto error;
        pos = end;
    }
    PyBuffer_Release(&view);
    Py_DECREF(loads);
    return Py_BuildValue("(Nn)", frames, pos);

anomaly:
    Py_DECREF(frames);
    PyBuffer_Release(&view);
    Py_DECREF(loads);
    Py_RETURN_NONE;
error:
    Py_XDECREF(frames);
    PyBuffer_Release(&view);
    Py_DECREF(loads);
    return NULL;
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_O, "configure(loads) -> None: the function that parses frame arguments"},
    {"split", (PyCFunction)(void (*)(void))split, METH_FASTCALL,
     "split(buf, max_frame) -> (frames, pos) for the complete frames at the head of buf, or None "
     "when one is malformed or too large"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_frames_native", "The queue manager's frame cutter in C.", -1, methods, NULL, NULL,
    NULL, NULL,
};

PyMODINIT_FUNC
PyInit__frames_native(void)
{
    return PyModule_Create(&module_def);
}
