/*
 * The message-tree steps compiled ESQL takes most often, in C: find a plain-named child, read its
 * value, find or make it, set a scalar into it, append a new field. Each is the function of the
 * same name in esql/runtime.py, and does exactly what that does for an element whose children are
 * built (`_lazy` is None) and of the Element class itself; for anything else (unparsed content, a
 * value that is no plain scalar, an element of another class, a slot left unset) it calls that
 * Python function with the same arguments, so results and errors stay the Python code's.
 *
 * Elements are made as `object.__new__(Element)` makes them, and their slots are read and written
 * through the offsets their member descriptors give; `configure` refuses a class whose slots are
 * not plain object slots, and runtime.py then keeps its Python functions.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

enum {
    S_NAME, S_NAMESPACE, S_TYPE, S_VALUE, S_PARENT, S_PREV, S_NEXT, S_FIRST, S_LAST, S_LAZY,
    S_CURSOR, S_COUNT
};
static const char *const slot_names[S_COUNT] = {
    "name", "namespace", "type", "value", "parent", "prev_sibling", "next_sibling", "_first",
    "_last", "_lazy", "_cursor",
};

static PyTypeObject *element_type;
static Py_ssize_t offsets[S_COUNT];
static PyObject *type_name, *type_name_value; /* NAME and NAME_VALUE */
static long name_type;                         /* NAME, for comparing a field's type */
static PyObject *decimal_type;
static PyObject *root_text, *empty;
/* the Python functions, for every case this module does not take itself */
static PyObject *py_child, *py_child_value, *py_ensure_child, *py_assign_member, *py_new_last_child,
    *py_new_child, *py_peek_child, *py_assign_member_tree;

#define SLOT(obj, slot) (*(PyObject **)((char *)(obj) + offsets[slot]))

/* whether `e` is an Element whose children are built and whose slots read here are set */
static inline int
built(PyObject *e)
{
    return Py_TYPE(e) == element_type && SLOT(e, S_LAZY) == Py_None && SLOT(e, S_FIRST) != NULL &&
           SLOT(e, S_LAST) != NULL && SLOT(e, S_PARENT) != NULL && SLOT(e, S_NAME) != NULL;
}

/* node.name == name and not node.namespace; -1 on error */
static inline int
plain_named(PyObject *node, PyObject *name)
{
    PyObject *own = SLOT(node, S_NAME), *ns = SLOT(node, S_NAMESPACE);
    if (own == NULL || ns == NULL)
        return -2; /* unset slot: let the Python code raise what it raises */
    int same = own == name ? 1 : PyObject_RichCompareBool(own, name, Py_EQ);
    if (same <= 0)
        return same;
    if (PyUnicode_CheckExact(ns))
        return PyUnicode_GET_LENGTH(ns) == 0;
    int truth = PyObject_IsTrue(ns);
    return truth < 0 ? -1 : !truth;
}

/* the first child of built `e` named `name` in no namespace: a borrowed reference, NULL when there
   is none; *status -1 on a Python error, -2 when the Python code must decide */
static PyObject *
scan(PyObject *e, PyObject *name, int *status)
{
    PyObject *node = SLOT(e, S_FIRST);
    *status = 0;
    while (node != Py_None) {
        if (Py_TYPE(node) != element_type) {
            *status = -2;
            return NULL;
        }
        int found = plain_named(node, name);
        if (found) {
            if (found < 0)
                *status = found;
            return found < 0 ? NULL : node;
        }
        node = SLOT(node, S_NEXT);
        if (node == NULL) {
            *status = -2;
            return NULL;
        }
    }
    return NULL;
}

static void
set_slot(PyObject *obj, int slot, PyObject *value)
{
    Py_XSETREF(SLOT(obj, slot), Py_NewRef(value));
}

/* runtime.new_child: a new field appended to built `e` (a new reference) */
static PyObject *
make_child(PyObject *e, PyObject *name, PyObject *ns, PyObject *ftype)
{
    PyObject *last = SLOT(e, S_LAST);
    if (last == NULL) {
        PyErr_SetString(PyExc_AttributeError, "_last");
        return NULL;
    }
    PyObject *node = element_type->tp_alloc(element_type, 0);
    if (node == NULL)
        return NULL;
    SLOT(node, S_NAME) = Py_NewRef(name);
    SLOT(node, S_NAMESPACE) = Py_NewRef(ns);
    SLOT(node, S_TYPE) = Py_NewRef(ftype);
    SLOT(node, S_VALUE) = Py_NewRef(Py_None);
    SLOT(node, S_FIRST) = Py_NewRef(Py_None);
    SLOT(node, S_LAST) = Py_NewRef(Py_None);
    SLOT(node, S_LAZY) = Py_NewRef(Py_None);
    SLOT(node, S_CURSOR) = Py_NewRef(Py_None);
    SLOT(node, S_NEXT) = Py_NewRef(Py_None);
    SLOT(node, S_PARENT) = Py_NewRef(e);
    SLOT(node, S_PREV) = Py_NewRef(last);
    if (last == Py_None)
        set_slot(e, S_FIRST, node);
    else
        set_slot(last, S_NEXT, node);
    set_slot(e, S_LAST, node);
    return node;
}

/* the type SET gives a field it creates below `e`: NAME below a message Root, else NAME_VALUE */
static PyObject *
created_type(PyObject *e)
{
    PyObject *parent = SLOT(e, S_PARENT), *name = SLOT(e, S_NAME);
    if (parent == Py_None && name != NULL) {
        int root = PyObject_RichCompareBool(name, root_text, Py_EQ);
        if (root < 0)
            return NULL;
        if (root)
            return type_name;
    }
    return type_name_value;
}

static PyObject *
fallback(PyObject *function, PyObject *const *args, Py_ssize_t nargs)
{
    return PyObject_Vectorcall(function, args, nargs, NULL);
}

static PyObject *
child(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || args[0] == Py_None || !built(args[0]))
        return nargs == 2 && args[0] == Py_None ? Py_NewRef(Py_None) : fallback(py_child, args, nargs);
    int status;
    PyObject *node = scan(args[0], args[1], &status);
    if (status == -1)
        return NULL;
    if (status == -2)
        return fallback(py_child, args, nargs);
    return Py_NewRef(node ? node : Py_None);
}

static PyObject *
child_value(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || args[0] == Py_None || !built(args[0]))
        return nargs == 2 && args[0] == Py_None ? Py_NewRef(Py_None)
                                                 : fallback(py_child_value, args, nargs);
    int status;
    PyObject *node = scan(args[0], args[1], &status);
    if (status == -1)
        return NULL;
    if (status == -2)
        return fallback(py_child_value, args, nargs);
    if (node == NULL)
        Py_RETURN_NONE;
    PyObject *value = SLOT(node, S_VALUE), *kind = SLOT(node, S_TYPE);
    if (value == NULL || kind == NULL)
        return fallback(py_child_value, args, nargs);
    if (value == Py_None) {
        /* a name element holding its text in value children: the Python code reads that */
        long t = PyLong_CheckExact(kind) ? PyLong_AsLong(kind) : -1;
        if (t == -1 && PyErr_Occurred())
            PyErr_Clear();
        if (!PyLong_CheckExact(kind) || t == name_type)
            return fallback(py_child_value, args, nargs);
    }
    return Py_NewRef(value);
}

static PyObject *
ensure_child(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !built(args[0]))
        return fallback(py_ensure_child, args, nargs);
    int status;
    PyObject *node = scan(args[0], args[1], &status);
    if (status == -1)
        return NULL;
    if (status == -2)
        return fallback(py_ensure_child, args, nargs);
    if (node != NULL)
        return Py_NewRef(node);
    PyObject *ftype = created_type(args[0]);
    return ftype ? make_child(args[0], args[1], empty, ftype) : NULL;
}

static PyObject *
new_child(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4 || Py_TYPE(args[0]) != element_type || SLOT(args[0], S_LAST) == NULL)
        return fallback(py_new_child, args, nargs);
    return make_child(args[0], args[1], args[2], args[3]);
}

static PyObject *
new_last_child(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !built(args[0]))
        return fallback(py_new_last_child, args, nargs);
    return make_child(args[0], args[1], empty, type_name_value);
}

static PyObject *
assign_member(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4 || !built(args[0]))
        return fallback(py_assign_member, args, nargs);
    PyObject *value = args[2];
    PyTypeObject *kind = Py_TYPE(value);
    if (!(kind == &PyUnicode_Type || kind == &PyLong_Type || kind == (PyTypeObject *)decimal_type ||
          kind == &PyFloat_Type || kind == &PyBool_Type))
        return fallback(py_assign_member, args, nargs);
    int status;
    PyObject *node = scan(args[0], args[1], &status);
    if (status == -1)
        return NULL;
    if (status == -2)
        return fallback(py_assign_member, args, nargs);
    if (node != NULL) {
        if (SLOT(node, S_VALUE) == NULL)
            return fallback(py_assign_member, args, nargs);
        set_slot(node, S_VALUE, value);
        Py_RETURN_NONE;
    }
    PyObject *ftype = created_type(args[0]);
    node = ftype ? make_child(args[0], args[1], empty, ftype) : NULL;
    if (node == NULL)
        return NULL;
    set_slot(node, S_VALUE, value);
    Py_DECREF(node);
    Py_RETURN_NONE;
}

static PyObject *
peek_child(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || args[0] == Py_None || Py_TYPE(args[0]) != element_type)
        return nargs == 2 && args[0] == Py_None ? Py_NewRef(Py_None) : fallback(py_peek_child, args, nargs);
    PyObject *lazy = SLOT(args[0], S_LAZY);
    if (lazy != NULL && lazy != Py_None)
        Py_RETURN_NONE; /* unparsed: the statement's own walk parses */
    if (!built(args[0]))
        return fallback(py_peek_child, args, nargs);
    int status;
    PyObject *node = scan(args[0], args[1], &status);
    if (status == -1)
        return NULL;
    if (status == -2)
        return fallback(py_peek_child, args, nargs);
    return Py_NewRef(node ? node : Py_None);
}

static PyObject *
assign_member_tree(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    /* the one case taken here: no such field yet, a named leaf source (its value and type taken) */
    if (nargs != 3 || !built(args[0]) || Py_TYPE(args[2]) != element_type)
        return fallback(py_assign_member_tree, args, nargs);
    PyObject *source = args[2];
    PyObject *first = SLOT(source, S_FIRST), *lazy = SLOT(source, S_LAZY);
    PyObject *kind = SLOT(source, S_TYPE), *value = SLOT(source, S_VALUE);
    if (first != Py_None || lazy != Py_None || kind == NULL || value == NULL || !PyUnicode_CheckExact(args[1]) ||
        PyUnicode_GET_LENGTH(args[1]) == 0)
        return fallback(py_assign_member_tree, args, nargs);
    int status;
    PyObject *node = scan(args[0], args[1], &status);
    if (status == -1)
        return NULL;
    if (status == -2 || node != NULL)
        return fallback(py_assign_member_tree, args, nargs);
    node = make_child(args[0], args[1], empty, kind);
    if (node == NULL)
        return NULL;
    set_slot(node, S_VALUE, value);
    Py_DECREF(node);
    Py_RETURN_NONE;
}

static PyObject *
configure(PyObject *module, PyObject *args)
{
    PyObject *cls, *name, *name_value, *decimal, *f_child, *f_child_value, *f_ensure, *f_assign,
        *f_new_last, *f_new_child, *f_peek_child, *f_assign_tree;
    if (!PyArg_ParseTuple(args, "O!O!O!OOOOOOOOO", &PyType_Type, &cls, &PyLong_Type, &name, &PyLong_Type,
                          &name_value, &decimal, &f_child, &f_child_value, &f_ensure, &f_assign,
                          &f_new_last, &f_new_child, &f_peek_child, &f_assign_tree))
        return NULL;
    PyTypeObject *type = (PyTypeObject *)cls;
    Py_ssize_t found[S_COUNT];
    for (int i = 0; i < S_COUNT; i++) {
        PyObject *descr = PyDict_GetItemString(type->tp_dict, slot_names[i]);
        if (descr == NULL || Py_TYPE(descr) != &PyMemberDescr_Type) {
            PyErr_Format(PyExc_TypeError, "%s.%s is not a slot", type->tp_name, slot_names[i]);
            return NULL;
        }
        PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
        if (member->type != T_OBJECT_EX || (member->flags & READONLY)) {
            PyErr_Format(PyExc_TypeError, "%s.%s is not a writable object slot", type->tp_name,
                         slot_names[i]);
            return NULL;
        }
        found[i] = member->offset;
    }
    long t = PyLong_AsLong(name);
    if (t == -1 && PyErr_Occurred())
        return NULL;
    if (!PyType_Check(decimal)) {
        PyErr_SetString(PyExc_TypeError, "the Decimal class is expected");
        return NULL;
    }
    memcpy(offsets, found, sizeof(offsets));
    name_type = t;
    Py_XSETREF(element_type, (PyTypeObject *)Py_NewRef(cls));
    Py_XSETREF(type_name, Py_NewRef(name));
    Py_XSETREF(type_name_value, Py_NewRef(name_value));
    Py_XSETREF(decimal_type, Py_NewRef(decimal));
    Py_XSETREF(py_child, Py_NewRef(f_child));
    Py_XSETREF(py_child_value, Py_NewRef(f_child_value));
    Py_XSETREF(py_ensure_child, Py_NewRef(f_ensure));
    Py_XSETREF(py_assign_member, Py_NewRef(f_assign));
    Py_XSETREF(py_new_last_child, Py_NewRef(f_new_last));
    Py_XSETREF(py_new_child, Py_NewRef(f_new_child));
    Py_XSETREF(py_peek_child, Py_NewRef(f_peek_child));
    Py_XSETREF(py_assign_member_tree, Py_NewRef(f_assign_tree));
    Py_RETURN_NONE;
}

static PyObject *
not_configured(void)
{
    PyErr_SetString(PyExc_RuntimeError, "esql._tree_native.configure was not called");
    return NULL;
}

#define GUARDED(fn)                                                                                \
    static PyObject *fn##_guarded(PyObject *m, PyObject *const *a, Py_ssize_t n)                  \
    {                                                                                              \
        return element_type ? fn(m, a, n) : not_configured();                                      \
    }
GUARDED(child)
GUARDED(child_value)
GUARDED(ensure_child)
GUARDED(new_child)
GUARDED(new_last_child)
GUARDED(assign_member)
GUARDED(peek_child)
GUARDED(assign_member_tree)

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(Element, NAME, NAME_VALUE, Decimal, child, child_value, ensure_child, assign_member, "
     "new_last_child, new_child, peek_child, assign_member_tree): the class and the Python functions "
     "to fall back on"},
    {"child", (PyCFunction)(void (*)(void))child_guarded, METH_FASTCALL, "runtime.child"},
    {"child_value", (PyCFunction)(void (*)(void))child_value_guarded, METH_FASTCALL, "runtime.child_value"},
    {"ensure_child", (PyCFunction)(void (*)(void))ensure_child_guarded, METH_FASTCALL, "runtime.ensure_child"},
    {"new_child", (PyCFunction)(void (*)(void))new_child_guarded, METH_FASTCALL, "runtime.new_child"},
    {"new_last_child", (PyCFunction)(void (*)(void))new_last_child_guarded, METH_FASTCALL,
     "runtime.new_last_child"},
    {"assign_member", (PyCFunction)(void (*)(void))assign_member_guarded, METH_FASTCALL,
     "runtime.assign_member"},
    {"peek_child", (PyCFunction)(void (*)(void))peek_child_guarded, METH_FASTCALL, "runtime.peek_child"},
    {"assign_member_tree", (PyCFunction)(void (*)(void))assign_member_tree_guarded, METH_FASTCALL,
     "runtime.assign_member_tree"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_tree_native", "Compiled ESQL's commonest message-tree steps in C.", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__tree_native(void)
{
    root_text = PyUnicode_InternFromString("Root");
    empty = PyUnicode_InternFromString("");
    if (root_text == NULL || empty == NULL)
        return NULL;
    return PyModule_Create(&module_def);
}
