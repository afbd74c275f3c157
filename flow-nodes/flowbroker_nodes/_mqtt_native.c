/*
 * The MQTT reader's packet cutter, in C: mqtt_wire.py `MqttConnection._handle` cuts the PUBLISH
 * packets at QoS 0 and 1 out of the bytes read here, and runs its Python loop on a packet only
 * where this stops: any other packet (acknowledgements, SUBACK, PINGRESP, QoS 2), a Remaining
 * Length still incomplete or malformed, a packet not all read yet, a PUBLISH too short for its
 * topic and packet id. That loop then handles it, raises its errors and writes its replies,
 * exactly as it always did.
 *
 * Nothing here runs Python code or changes the connection's state: the publications are handed
 * back for the caller to deliver, and the PUBACKs of those at QoS 1 for it to write.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/*
 * cut(data, index) -> (publications, acks, index) | None
 *
 * The PUBLISH packets at QoS 0 and 1 from offset `index` of `data` (bytes or bytearray) up to the
 * first packet of any other kind or not all there: `publications` is a list of
 * (topic, payload, qos, retain) in their order, `acks` the PUBACKs of the QoS 1 ones (None when
 * there are none), `index` the offset just past the last packet taken. None when the first packet
 * is not one taken. The topic is decoded as `bytes.decode("utf-8", "replace")` decodes it.
 */
static PyObject *
cut(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "cut() takes the data and the offset to start at");
        return NULL;
    }
    Py_ssize_t index = PyLong_AsSsize_t(args[1]);
    if (index == -1 && PyErr_Occurred())
        return NULL;
    if (index < 0) {
        PyErr_SetString(PyExc_ValueError, "cut() needs an offset of 0 or more");
        return NULL;
    }
    /* exported until we are done: a bytearray cannot be resized meanwhile (no Python code runs) */
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *b = view.buf;
    const Py_ssize_t end = view.len;
    PyObject *publications = NULL;
    PyObject *acks = NULL; /* a bytearray, made at the first QoS 1 publication */
    /* the topic of the previous publication: consecutive publications mostly share one */
    const unsigned char *last_topic = NULL;
    Py_ssize_t last_topic_len = 0;
    PyObject *topic_text = NULL; /* borrowed from the last tuple made */

    while (end - index >= 2) {
        unsigned int first = b[index];
        if ((first & 0xF0) != 0x30)
            break; /* not a PUBLISH */
        unsigned int qos = (first >> 1) & 3;
        if (qos > 1)
            break;
        Py_ssize_t length, pos;
        unsigned int byte = b[index + 1];
        if (byte < 0x80) {
            length = byte;
            pos = index + 2;
        }
        else {
            /* at most four bytes, as the Python loop reads them; more is malformed: it says so */
            length = 0;
            pos = index + 1;
            int shift = 0;
            for (;;) {
                if (pos >= end)
                    goto done; /* the length is still to come */
                byte = b[pos++];
                length |= (Py_ssize_t)(byte & 0x7F) << shift;
                if (!(byte & 0x80))
                    break;
                shift += 7;
                if (shift > 21)
                    goto done;
            }
        }
        if (length > end - pos)
            break; /* the rest of this packet is still to come */
        Py_ssize_t stop = pos + length;
        if (length < 2)
            break; /* no room for the topic's length */
        Py_ssize_t topic_len = ((Py_ssize_t)b[pos] << 8) | b[pos + 1];
        Py_ssize_t start = pos + 2 + topic_len;
        if (start + (qos ? 2 : 0) > stop)
            break; /* a topic or packet id past the packet's end */
        const unsigned char *topic = b + pos + 2;
        PyObject *text;
        if (topic_text != NULL && topic_len == last_topic_len && memcmp(topic, last_topic, topic_len) == 0) {
            Py_INCREF(topic_text);
            text = topic_text;
        }
        else {
            text = PyUnicode_DecodeUTF8((const char *)topic, topic_len, "replace");
            if (text == NULL)
                goto error;
        }
        if (qos)
            start += 2;
        PyObject *payload = PyBytes_FromStringAndSize((const char *)b + start, stop - start);
        if (payload == NULL) {
            Py_DECREF(text);
            goto error;
        }
        PyObject *item = PyTuple_New(4);
        if (item == NULL) {
            Py_DECREF(text);
            Py_DECREF(payload);
            goto error;
        }
        PyTuple_SET_ITEM(item, 0, text);
        PyTuple_SET_ITEM(item, 1, payload);
        PyTuple_SET_ITEM(item, 2, PyLong_FromLong((long)qos)); /* 0 and 1: cached, never fails */
        PyTuple_SET_ITEM(item, 3, Py_NewRef(first & 1 ? Py_True : Py_False));
        if (publications == NULL) {
            publications = PyList_New(0);
            if (publications == NULL) {
                Py_DECREF(item);
                goto error;
            }
        }
        int failed = PyList_Append(publications, item);
        Py_DECREF(item);
        if (failed)
            goto error;
        topic_text = text;
        last_topic = topic;
        last_topic_len = topic_len;
        if (qos) {
            const char ack[4] = {0x40, 0x02, (char)b[start - 2], (char)b[start - 1]};
            if (acks == NULL) {
                acks = PyByteArray_FromStringAndSize(ack, 4);
                if (acks == NULL)
                    goto error;
            }
            else {
                Py_ssize_t size = PyByteArray_GET_SIZE(acks);
                if (PyByteArray_Resize(acks, size + 4) < 0)
                    goto error;
                memcpy(PyByteArray_AS_STRING(acks) + size, ack, 4);
            }
        }
        index = stop;
    }
done:
    PyBuffer_Release(&view);
    if (publications == NULL)
        Py_RETURN_NONE;
    PyObject *acks_bytes = Py_None;
    if (acks != NULL) {
        acks_bytes = PyBytes_FromStringAndSize(PyByteArray_AS_STRING(acks), PyByteArray_GET_SIZE(acks));
        Py_DECREF(acks);
        if (acks_bytes == NULL) {
            Py_DECREF(publications);
            return NULL;
        }
    }
    else
        Py_INCREF(Py_None);
    return Py_BuildValue("(NNn)", publications, acks_bytes, index);

error:
    Py_XDECREF(publications);
    Py_XDECREF(acks);
    PyBuffer_Release(&view);
    return NULL;
}

static PyMethodDef methods[] = {
    {"cut", (PyCFunction)(void (*)(void))cut, METH_FASTCALL,
     "cut(data, index) -> (publications, acks, index) for the PUBLISH packets at QoS 0 and 1 from "
     "index on, or None when the packet at index is not one of them"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_mqtt_native", "The MQTT reader's packet cutter in C.", -1, methods, NULL, NULL,
    NULL, NULL,
};

PyMODINIT_FUNC
PyInit__mqtt_native(void)
{
    return PyModule_Create(&module_def);
}
