/*
 * The Root of a message with no MQRFH2 under an input node's template, built in C: exactly the
 * tree formats/assembly.py's `_plain_root` builds (Root, Properties with its values unread, MQMD
 * with its descriptor unread, the body-domain element with its bytes unparsed, and the Relay of a
 * message that can be put again as it came), without its ten Python calls.
 *
 * It only takes what it takes whole: a descriptor whose encoding and CCSID are exact ints (or
 * absent), a body that is exactly bytes, a domain whose registered parser attaches with
 * `esql.domains.attach_unparsed` itself (the parsers that parse on first read and keep the options
 * as given mark themselves so), the format converters loaded. For anything else (another parser,
 * an attribute that raises, a value int() would convert) it answers None and the caller runs
 * `_plain_root`, so what happens then, errors and their messages included, is the Python code's.
 *
 * The parser is looked up in the domain registry's dict on every call, so a parser registered
 * again for a domain is the one used. What a template decides (its domain, the parser options,
 * the MQMD Format a relayed message is put with) comes from assembly.py's `_plan`, asked once per
 * template and kept here with the template.
 *
 * Elements, LazyContents and Relays are made as `object.__new__(cls)` makes them and all the slots
 * their `__init__` sets written through the offsets their member descriptors give; `configure`
 * refuses a class whose slots are not plain object slots, and the module is then not used.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

/* the Element slots written here: those Element.__init__ sets (not `_source`, which it leaves unset) */
enum { E_NAME, E_NAMESPACE, E_TYPE, E_VALUE, E_PARENT, E_PREV, E_NEXT, E_FIRST, E_LAST, E_LAZY, E_CURSOR, E_COUNT };
static const char *const element_slots[E_COUNT] = {
    "name", "namespace", "type", "value", "parent", "prev_sibling", "next_sibling", "_first", "_last", "_lazy",
    "_cursor",
};

/* LazyContent's slots, all set by its __init__ */
enum { L_PARSER, L_DATA, L_CCSID, L_ENCODING, L_OPTIONS, L_FILLED, L_PARSED, L_COUNT };
static const char *const lazy_slots[L_COUNT] = {
    "parser", "data", "ccsid", "encoding", "options", "filled", "parsed",
};

/* Relay's slots, all set by its __init__ */
enum { R_FORMAT, R_MESSAGE, R_PROPERTIES, R_BODY, R_DOMAIN, R_HEADER, R_TEMPLATE, R_COUNT };
static const char *const relay_slots[R_COUNT] = {
    "format", "message", "properties", "body", "domain", "header", "template",
};

static PyTypeObject *element_type, *lazy_type, *relay_type;
static Py_ssize_t element_offsets[E_COUNT], lazy_offsets[L_COUNT], relay_offsets[R_COUNT];

#define SLOT(obj, offsets, slot) (*(PyObject **)((char *)(obj) + (offsets)[slot]))

/* what configure is given: the FOLDER type, the Properties and MQMD fillers, the domain registry
   (name -> parser), the plain attach, `_plan`, and the dict of flowbroker.formats (for _LOADED) */
static PyObject *folder, *properties_filler, *mqmd_filler, *registry, *plain_attach, *plan_of, *formats_globals;

/* names and constants made once */
static PyObject *s_root, *s_properties, *s_mqmd, *s_empty, *b_empty;
static PyObject *s_encoding, *s_ccsid, *s_persistence, *s_priority, *s_correl_id, *s_set, *s_type, *s_format,
    *s_attach, *s_loaded;
static PyObject *k_values, *k_written, *k_descriptor, *k_relay;
static PyObject *k_set, *k_type, *k_format, *k_encoding, *k_ccsid, *k_transactional, *k_persistence, *k_priority,
    *k_reply;
static PyObject *int_546, *int_1208, *int_0, *int_1;

/* What `_plan` answered for a template, kept with the template (a strong reference, so the
   identity it is found by stays its own). Direct-mapped by the template's address. */
#define PLANS 64
static struct {
    PyObject *template, *domain, *options, *out_format;
} plans[PLANS];

static void
forget_plans(void)
{
    for (int i = 0; i < PLANS; i++) {
        Py_CLEAR(plans[i].template);
        Py_CLEAR(plans[i].domain);
        Py_CLEAR(plans[i].options);
        Py_CLEAR(plans[i].out_format);
    }
}

/* the plan slot of `template`, asking `_plan` when it is not kept; NULL: not taken (an error may be set) */
static int
plan_for(PyObject *template)
{
    size_t slot = ((size_t)template >> 4) % PLANS;
    if (plans[slot].template == template)
        return (int)slot;
    PyObject *found = PyObject_CallOneArg(plan_of, template);
    if (found == NULL)
        return -1;
    if (!PyTuple_CheckExact(found) || PyTuple_GET_SIZE(found) != 4 || PyTuple_GET_ITEM(found, 0) != template ||
        !PyUnicode_CheckExact(PyTuple_GET_ITEM(found, 1)) || !PyDict_CheckExact(PyTuple_GET_ITEM(found, 2))) {
        Py_DECREF(found);
        return -1;
    }
    Py_XSETREF(plans[slot].template, Py_NewRef(template));
    Py_XSETREF(plans[slot].domain, Py_NewRef(PyTuple_GET_ITEM(found, 1)));
    Py_XSETREF(plans[slot].options, Py_NewRef(PyTuple_GET_ITEM(found, 2)));
    Py_XSETREF(plans[slot].out_format, Py_NewRef(PyTuple_GET_ITEM(found, 3)));
    Py_DECREF(found);
    return (int)slot;
}

/* a new element as Element(name, type=FOLDER) makes it, with unparsed content `lazy` (borrowed) */
static PyObject *
new_folder(PyObject *name, PyObject *lazy)
{
    PyObject *el = element_type->tp_alloc(element_type, 0);
    if (el == NULL)
        return NULL;
    const Py_ssize_t *o = element_offsets;
    SLOT(el, o, E_NAME) = Py_NewRef(name);
    SLOT(el, o, E_NAMESPACE) = Py_NewRef(s_empty);
    SLOT(el, o, E_TYPE) = Py_NewRef(folder);
    SLOT(el, o, E_VALUE) = Py_NewRef(Py_None);
    SLOT(el, o, E_PARENT) = Py_NewRef(Py_None);
    SLOT(el, o, E_PREV) = Py_NewRef(Py_None);
    SLOT(el, o, E_NEXT) = Py_NewRef(Py_None);
    SLOT(el, o, E_FIRST) = Py_NewRef(Py_None);
    SLOT(el, o, E_LAST) = Py_NewRef(Py_None);
    SLOT(el, o, E_LAZY) = Py_NewRef(lazy);
    SLOT(el, o, E_CURSOR) = Py_NewRef(Py_None);
    return el;
}

/* a new LazyContent as LazyContent(parser, data, ccsid=, encoding=, options=) makes it (options non-empty) */
static PyObject *
new_lazy(PyObject *parser, PyObject *data, PyObject *ccsid, PyObject *encoding, PyObject *options)
{
    PyObject *lazy = lazy_type->tp_alloc(lazy_type, 0);
    if (lazy == NULL)
        return NULL;
    const Py_ssize_t *o = lazy_offsets;
    SLOT(lazy, o, L_PARSER) = Py_NewRef(parser);
    SLOT(lazy, o, L_DATA) = Py_NewRef(data);
    SLOT(lazy, o, L_CCSID) = Py_NewRef(ccsid);
    SLOT(lazy, o, L_ENCODING) = Py_NewRef(encoding);
    SLOT(lazy, o, L_OPTIONS) = Py_NewRef(options);
    SLOT(lazy, o, L_FILLED) = Py_NewRef(int_0);
    SLOT(lazy, o, L_PARSED) = Py_NewRef(Py_None);
    return lazy;
}

/* link `child` (a new element, its reference taken over by the tree) as the last child of `parent` */
static void
append_new(PyObject *parent, PyObject *child)
{
    const Py_ssize_t *o = element_offsets;
    PyObject *last = SLOT(parent, o, E_LAST);
    Py_SETREF(SLOT(child, o, E_PARENT), Py_NewRef(parent));
    Py_SETREF(SLOT(child, o, E_PREV), Py_NewRef(last));
    if (last == Py_None)
        Py_SETREF(SLOT(parent, o, E_FIRST), Py_NewRef(child));
    else
        Py_SETREF(SLOT(last, o, E_NEXT), Py_NewRef(child));
    Py_SETREF(SLOT(parent, o, E_LAST), child);
}

/* getattr(obj, name, default) as a new reference; NULL with an error set when it raised otherwise */
static PyObject *
attr_or(PyObject *obj, PyObject *name, PyObject *fallback)
{
    PyObject *value;
    int found = _PyObject_LookupAttr(obj, name, &value);
    if (found < 0)
        return NULL;
    return found ? value : Py_NewRef(fallback);
}

/* int(getattr(obj, name, default)) for an exact int (int() gives it back as it is); NULL: not taken */
static PyObject *
int_attr(PyObject *obj, PyObject *name, PyObject *fallback)
{
    PyObject *value = attr_or(obj, name, fallback);
    if (value != NULL && !PyLong_CheckExact(value))
        Py_CLEAR(value);
    return value;
}

static PyObject *
not_taken(void)
{
    /* whatever went wrong here happens again in _plain_root, which raises it as the Python code does */
    PyErr_Clear();
    Py_RETURN_NONE;
}

static PyObject *
plain_root(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "plain_root(descriptor, body, template, transactional, relay)");
        return NULL;
    }
    if (element_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_assembly_native.configure was not called");
        return NULL;
    }
    PyObject *descriptor = args[0], *body = args[1], *template = args[2], *transactional = args[3],
             *relay = args[4];
    /* ensure_loaded() has registered every parser; bytes(body) is body itself */
    if (PyDict_GetItemWithError(formats_globals, s_loaded) != Py_True || !PyBytes_CheckExact(body))
        return not_taken();
    int slot = plan_for(template);
    if (slot < 0)
        return not_taken();
    PyObject *domain = plans[slot].domain, *template_options = plans[slot].options,
             *out_format = plans[slot].out_format;
    /* the references below are all NULL until made, and dropped together at the end */
    PyObject *encoding = NULL, *ccsid = NULL, *parser = NULL, *attach = NULL, *set = NULL, *type = NULL,
             *format = NULL, *persistence = NULL, *persistent = NULL, *priority = NULL, *correl_id = NULL,
             *values = NULL, *written = NULL, *options = NULL, *properties_content = NULL, *md_options = NULL,
             *md_content = NULL, *body_content = NULL, *root = NULL, *result = NULL;
    encoding = int_attr(descriptor, s_encoding, int_546);
    if (encoding == NULL)
        goto done;
    ccsid = int_attr(descriptor, s_ccsid, int_1208);
    if (ccsid == NULL)
        goto done;
    /* esql.domains.get(domain): the domain is upper case already (ASCII: upper() again is itself) */
    if (!PyUnicode_IS_ASCII(domain))
        goto done;
    parser = Py_XNewRef(PyDict_GetItemWithError(registry, domain));
    if (parser == NULL)
        goto done;
    /* parser.attach is the plain one, as the call would find it (not shadowed on the instance) */
    if (_PyObject_GetMethod(parser, s_attach, &attach) != 1 || attach != plain_attach)
        goto done;
    set = PyObject_GetAttr(template, s_set);
    type = set ? PyObject_GetAttr(template, s_type) : NULL;
    format = type ? PyObject_GetAttr(template, s_format) : NULL;
    persistence = format ? attr_or(descriptor, s_persistence, int_0) : NULL;
    persistent = persistence ? PyObject_RichCompare(persistence, int_1, Py_EQ) : NULL;
    priority = persistent ? attr_or(descriptor, s_priority, int_0) : NULL;
    correl_id = priority ? attr_or(descriptor, s_correl_id, b_empty) : NULL;
    if (correl_id == NULL)
        goto done;
    values = _PyDict_NewPresized(9);
    if (values == NULL || PyDict_SetItem(values, k_set, set) < 0 || PyDict_SetItem(values, k_type, type) < 0 ||
        PyDict_SetItem(values, k_format, format) < 0 || PyDict_SetItem(values, k_encoding, encoding) < 0 ||
        PyDict_SetItem(values, k_ccsid, ccsid) < 0 || PyDict_SetItem(values, k_transactional, transactional) < 0 ||
        PyDict_SetItem(values, k_persistence, persistent) < 0 || PyDict_SetItem(values, k_priority, priority) < 0 ||
        PyDict_SetItem(values, k_reply, correl_id) < 0)
        goto done;
    written = PyTuple_Pack(3, encoding, ccsid, template_options);
    options = written ? _PyDict_NewPresized(2) : NULL;
    if (options == NULL || PyDict_SetItem(options, k_values, values) < 0 ||
        PyDict_SetItem(options, k_written, written) < 0)
        goto done;
    properties_content = new_lazy(properties_filler, b_empty, int_1208, int_546, options);
    md_options = properties_content ? PyDict_New() : NULL;
    if (md_options == NULL || PyDict_SetItem(md_options, k_descriptor, descriptor) < 0)
        goto done;
    md_content = new_lazy(mqmd_filler, b_empty, int_1208, int_546, md_options);
    body_content = md_content ? new_lazy(parser, body, ccsid, encoding, template_options) : NULL;
    if (body_content == NULL)
        goto done;
    if (relay != Py_None) {
        PyObject *kept = relay_type->tp_alloc(relay_type, 0);
        if (kept == NULL)
            goto done;
        const Py_ssize_t *o = relay_offsets;
        SLOT(kept, o, R_FORMAT) = Py_NewRef(out_format);
        SLOT(kept, o, R_MESSAGE) = Py_NewRef(relay);
        SLOT(kept, o, R_PROPERTIES) = Py_NewRef(properties_content);
        SLOT(kept, o, R_BODY) = Py_NewRef(body_content);
        SLOT(kept, o, R_DOMAIN) = Py_NewRef(domain);
        SLOT(kept, o, R_HEADER) = Py_NewRef(Py_None);
        SLOT(kept, o, R_TEMPLATE) = Py_NewRef(template);
        int failed = PyDict_SetItem(md_options, k_relay, kept);
        Py_DECREF(kept);
        if (failed < 0)
            goto done;
    }
    root = new_folder(s_root, Py_None);
    if (root == NULL)
        goto done;
    PyObject *kid = new_folder(s_properties, properties_content);
    if (kid == NULL)
        goto done;
    append_new(root, kid);
    kid = new_folder(s_mqmd, md_content);
    if (kid == NULL)
        goto done;
    append_new(root, kid);
    kid = new_folder(domain, body_content);
    if (kid == NULL)
        goto done;
    append_new(root, kid);
    result = Py_NewRef(root);
done:
    Py_XDECREF(encoding);
    Py_XDECREF(ccsid);
    Py_XDECREF(parser);
    Py_XDECREF(attach);
    Py_XDECREF(set);
    Py_XDECREF(type);
    Py_XDECREF(format);
    Py_XDECREF(persistence);
    Py_XDECREF(persistent);
    Py_XDECREF(priority);
    Py_XDECREF(correl_id);
    Py_XDECREF(values);
    Py_XDECREF(written);
    Py_XDECREF(options);
    Py_XDECREF(properties_content);
    Py_XDECREF(md_options);
    Py_XDECREF(md_content);
    Py_XDECREF(body_content);
    Py_XDECREF(root);
    if (result == NULL) {
        if (PyErr_Occurred() && PyErr_ExceptionMatches(PyExc_MemoryError))
            return NULL;
        return not_taken();
    }
    return result;
}

/* the offsets of `names` in `cls`: each must be a writable object slot of it */
static int
slot_offsets(PyObject *cls, const char *const *names, int count, Py_ssize_t *out)
{
    PyTypeObject *type = (PyTypeObject *)cls;
    for (int i = 0; i < count; i++) {
        PyObject *descr = PyDict_GetItemString(type->tp_dict, names[i]);
        if (descr == NULL || Py_TYPE(descr) != &PyMemberDescr_Type) {
            PyErr_Format(PyExc_TypeError, "%s.%s is not a slot", type->tp_name, names[i]);
            return -1;
        }
        PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
        if (member->type != T_OBJECT_EX || (member->flags & READONLY)) {
            PyErr_Format(PyExc_TypeError, "%s.%s is not a writable object slot", type->tp_name, names[i]);
            return -1;
        }
        out[i] = member->offset;
    }
    return 0;
}

static PyObject *
configure(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *element, *lazy, *relay_cls, *folder_type, *props, *md, *parsers, *attach, *plan, *globals;
    if (!PyArg_ParseTuple(args, "O!O!O!OOOO!OOO!", &PyType_Type, &element, &PyType_Type, &lazy, &PyType_Type,
                          &relay_cls, &folder_type, &props, &md, &PyDict_Type, &parsers, &attach, &plan,
                          &PyDict_Type, &globals))
        return NULL;
    Py_ssize_t e[E_COUNT], l[L_COUNT], r[R_COUNT];
    if (slot_offsets(element, element_slots, E_COUNT, e) < 0 || slot_offsets(lazy, lazy_slots, L_COUNT, l) < 0 ||
        slot_offsets(relay_cls, relay_slots, R_COUNT, r) < 0)
        return NULL;
    if (!PyCallable_Check(plan)) {
        PyErr_SetString(PyExc_TypeError, "the plan is not callable");
        return NULL;
    }
    forget_plans();
    Py_XSETREF(element_type, (PyTypeObject *)Py_NewRef(element));
    Py_XSETREF(lazy_type, (PyTypeObject *)Py_NewRef(lazy));
    Py_XSETREF(relay_type, (PyTypeObject *)Py_NewRef(relay_cls));
    memcpy(element_offsets, e, sizeof(e));
    memcpy(lazy_offsets, l, sizeof(l));
    memcpy(relay_offsets, r, sizeof(r));
    Py_XSETREF(folder, Py_NewRef(folder_type));
    Py_XSETREF(properties_filler, Py_NewRef(props));
    Py_XSETREF(mqmd_filler, Py_NewRef(md));
    Py_XSETREF(registry, Py_NewRef(parsers));
    Py_XSETREF(plain_attach, Py_NewRef(attach));
    Py_XSETREF(plan_of, Py_NewRef(plan));
    Py_XSETREF(formats_globals, Py_NewRef(globals));
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(Element, LazyContent, Relay, FOLDER, properties_filler, mqmd_filler, parsers, plain_attach, "
     "plan, formats_globals)"},
    {"plain_root", (PyCFunction)(void (*)(void))plain_root, METH_FASTCALL,
     "plain_root(descriptor, body, template, transactional, relay) -> Root, or None for a message not taken"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_assembly_native",
    "The Root of a message with no MQRFH2 under an input node's template, built in C.", -1, methods, NULL, NULL,
    NULL, NULL,
};

static int
intern(PyObject **out, const char *text)
{
    *out = PyUnicode_InternFromString(text);
    return *out == NULL ? -1 : 0;
}

PyMODINIT_FUNC
PyInit__assembly_native(void)
{
    if (intern(&s_root, "Root") < 0 || intern(&s_properties, "Properties") < 0 || intern(&s_mqmd, "MQMD") < 0 ||
        intern(&s_empty, "") < 0 || intern(&s_encoding, "encoding") < 0 ||
        intern(&s_ccsid, "coded_char_set_id") < 0 || intern(&s_persistence, "persistence") < 0 ||
        intern(&s_priority, "priority") < 0 || intern(&s_correl_id, "correl_id") < 0 || intern(&s_set, "set") < 0 ||
        intern(&s_type, "type") < 0 || intern(&s_format, "format") < 0 || intern(&s_attach, "attach") < 0 ||
        intern(&s_loaded, "_LOADED") < 0 || intern(&k_values, "values") < 0 || intern(&k_written, "written") < 0 ||
        intern(&k_descriptor, "descriptor") < 0 || intern(&k_relay, "relay") < 0 ||
        intern(&k_set, "MessageSet") < 0 || intern(&k_type, "MessageType") < 0 ||
        intern(&k_format, "MessageFormat") < 0 || intern(&k_encoding, "Encoding") < 0 ||
        intern(&k_ccsid, "CodedCharSetId") < 0 || intern(&k_transactional, "Transactional") < 0 ||
        intern(&k_persistence, "Persistence") < 0 || intern(&k_priority, "Priority") < 0 ||
        intern(&k_reply, "ReplyIdentifier") < 0)
        return NULL;
    b_empty = PyBytes_FromStringAndSize("", 0);
    int_546 = PyLong_FromLong(546);
    int_1208 = PyLong_FromLong(1208);
    int_0 = PyLong_FromLong(0);
    int_1 = PyLong_FromLong(1);
    if (b_empty == NULL || int_546 == NULL || int_1208 == NULL || int_0 == NULL || int_1 == NULL)
        return NULL;
    return PyModule_Create(&module_def);
}
