/*
 * The XMLNSC fast path's tree, built in C: expat (the copy Python's own pyexpat module carries,
 * reached through the C API capsule it exports for _elementtree) calls back into this module,
 * which makes and links message-tree elements as it goes. No intermediate tree of any kind is
 * made: formats/xmlnsc.py's pure-Python `_fill_plain` builds an ElementTree first and then walks
 * it; this builds exactly the tree that walk builds, from the same parser, in one pass.
 *
 * It only ever sees documents `_plain_document` accepted (ASCII UTF-8, no namespace declaration,
 * entity or character reference, CDATA, comment, DOCTYPE or PI but the declaration). It answers
 * None for a document it does not take whole (malformed, deeper or attribute-heavier than the
 * configured limits) and the caller then reads it as before.
 *
 * Elements are made as `object.__new__(Element)` makes them and their slots written through the
 * offsets their member descriptors give; `configure` refuses an Element class whose slots are
 * not plain object slots, and the module is then not used.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <string.h>

/* The expat declarations pyexpat.h needs (expat.h's, for the parts this module touches). */
typedef char XML_Char;
typedef char XML_LChar;
typedef struct XML_ParserStruct *XML_Parser;
typedef unsigned long XML_Size;
enum XML_Status { XML_STATUS_ERROR = 0, XML_STATUS_OK = 1, XML_STATUS_SUSPENDED = 2 };
enum XML_Error { XML_ERROR_NONE = 0 };
typedef struct {
    void *(*malloc_fcn)(size_t size);
    void *(*realloc_fcn)(void *ptr, size_t size);
    void (*free_fcn)(void *ptr);
} XML_Memory_Handling_Suite;
typedef struct XML_Encoding XML_Encoding;
typedef void (*XML_StartElementHandler)(void *, const XML_Char *, const XML_Char **);
typedef void (*XML_EndElementHandler)(void *, const XML_Char *);
typedef void (*XML_CharacterDataHandler)(void *, const XML_Char *, int);
typedef void (*XML_CommentHandler)(void *, const XML_Char *);
typedef void (*XML_DefaultHandler)(void *, const XML_Char *, int);
typedef void (*XML_StartNamespaceDeclHandler)(void *, const XML_Char *, const XML_Char *);
typedef void (*XML_EndNamespaceDeclHandler)(void *, const XML_Char *);
typedef void (*XML_ProcessingInstructionHandler)(void *, const XML_Char *, const XML_Char *);
typedef int (*XML_UnknownEncodingHandler)(void *, const XML_Char *, XML_Encoding *);
typedef void (*XML_StartDoctypeDeclHandler)(void *, const XML_Char *, const XML_Char *,
                                            const XML_Char *, int);
#include <pyexpat.h>

/* the Element slots this module writes */
enum {
    S_NAME, S_NAMESPACE, S_TYPE, S_VALUE, S_PARENT, S_PREV, S_NEXT, S_FIRST, S_LAST, S_LAZY,
    S_CURSOR, S_COUNT
};
static const char *const slot_names[S_COUNT] = {
    "name", "namespace", "type", "value", "parent", "prev_sibling", "next_sibling", "_first",
    "_last", "_lazy", "_cursor",
};

/* the deepest a fast-path document may nest (xmlnsc._FAST_MAX_DEPTH may not exceed it) */
#define STACK_LIMIT 128

static struct PyExpat_CAPI *expat;
static PyTypeObject *element_type;
static Py_ssize_t offsets[S_COUNT];
static PyObject *type_folder, *type_field, *type_attribute, *type_value;
static PyObject *empty;
static int max_depth = -1;
static Py_ssize_t max_attributes;

/* Names seen before, by their text: a name read again is the same interned string, found without
   making a new one (most documents repeat a few names many times). Direct-mapped by a hash of the
   text; a name longer than NAME_MAX or a collision just interns anew. */
#define NAME_CACHE 512
#define NAME_MAX_LEN 64
static struct {
    char text[NAME_MAX_LEN];
    PyObject *name;
} names[NAME_CACHE];

static PyObject *
name_of(const char *text)
{
    size_t len = strlen(text);
    if (len >= NAME_MAX_LEN)
        return PyUnicode_InternFromString(text);
    unsigned long hash = 5381;
    for (size_t i = 0; i < len; i++)
        hash = hash * 33 + (unsigned char)text[i];
    hash ^= len * 2654435761UL;
    size_t slot = hash % NAME_CACHE;
    if (names[slot].name != NULL && memcmp(names[slot].text, text, len + 1) == 0)
        return Py_NewRef(names[slot].name);
    PyObject *name = PyUnicode_InternFromString(text);
    if (name == NULL)
        return NULL;
    memcpy(names[slot].text, text, len + 1);
    Py_XSETREF(names[slot].name, Py_NewRef(name));
    return name;
}

#define SLOT(obj, slot) (*(PyObject **)((char *)(obj) + offsets[slot]))

typedef struct {
    PyObject *root;                  /* owned; the tree holds everything below it */
    PyObject *stack[STACK_LIMIT + 2]; /* open elements, borrowed from the tree */
    char folder[STACK_LIMIT + 2];    /* whether each open element has had a child element */
    int level;                       /* number of open elements */
    char *text;                      /* character data not yet given to an element */
    Py_ssize_t text_len, text_cap;
    int failed;                      /* 1: not taken whole; 2: a Python error is set */
} Build;

/* a new, unlinked element: object.__new__(Element) with the slots the fast path sets */
static PyObject *
new_element(PyObject *name, PyObject *kind, PyObject *value)
{
    PyObject *el = element_type->tp_alloc(element_type, 0);
    if (el == NULL)
        return NULL;
    SLOT(el, S_NAME) = Py_NewRef(name);
    SLOT(el, S_NAMESPACE) = Py_NewRef(empty);
    SLOT(el, S_TYPE) = Py_NewRef(kind);
    SLOT(el, S_VALUE) = Py_NewRef(value);
    SLOT(el, S_PARENT) = Py_NewRef(Py_None);
    SLOT(el, S_PREV) = Py_NewRef(Py_None);
    SLOT(el, S_NEXT) = Py_NewRef(Py_None);
    SLOT(el, S_FIRST) = Py_NewRef(Py_None);
    SLOT(el, S_LAST) = Py_NewRef(Py_None);
    SLOT(el, S_LAZY) = Py_NewRef(Py_None);
    SLOT(el, S_CURSOR) = Py_NewRef(Py_None);
    return el;
}

static void
set_slot(PyObject *obj, int slot, PyObject *value)
{
    Py_XSETREF(SLOT(obj, slot), Py_NewRef(value));
}

/* link `child` (a new reference, taken over) as the last child of `parent` */
static void
append(PyObject *parent, PyObject *child)
{
    PyObject *last = SLOT(parent, S_LAST);
    set_slot(child, S_PARENT, parent);
    set_slot(child, S_PREV, last);
    if (last == Py_None)
        set_slot(parent, S_FIRST, child);
    else
        set_slot(last, S_NEXT, child);
    Py_XSETREF(SLOT(parent, S_LAST), child);
}

static void
fail(Build *b, int how)
{
    if (!b->failed)
        b->failed = how;
}

static int
blank(const char *s, Py_ssize_t n)
{
    /* str.isspace() over ASCII text */
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!((c >= 9 && c <= 13) || (c >= 28 && c <= 32)))
            return 0;
    }
    return 1;
}

/* the text gathered so far, if any and not blank, as a value child of the open element */
static void
flush_text_as_value(Build *b)
{
    if (b->text_len && !blank(b->text, b->text_len)) {
        PyObject *text = PyUnicode_DecodeUTF8(b->text, b->text_len, NULL);
        PyObject *el = text ? new_element(empty, type_value, text) : NULL;
        Py_XDECREF(text);
        if (el == NULL) {
            fail(b, 2);
            return;
        }
        append(b->stack[b->level - 1], el);
    }
    b->text_len = 0;
}

static void
on_start(void *data, const XML_Char *tag, const XML_Char **atts)
{
    Build *b = (Build *)data;
    if (b->failed)
        return;
    if (b->level > 0) {
        int parent = b->level - 1;
        /* the parent becomes a folder at this depth: the walk refuses one deeper than the limit */
        if (b->level > max_depth || b->level >= STACK_LIMIT) {
            fail(b, 1);
            return;
        }
        flush_text_as_value(b);
        if (b->failed)
            return;
        if (!b->folder[parent]) {
            b->folder[parent] = 1;
            set_slot(b->stack[parent], S_TYPE, type_folder);
            set_slot(b->stack[parent], S_VALUE, Py_None);
        }
    }
    else if (b->root != NULL) {
        fail(b, 1); /* expat allows one document element; kept as a guard */
        return;
    }
    PyObject *name = name_of(tag);
    PyObject *el = name ? new_element(name, type_field, Py_None) : NULL;
    Py_XDECREF(name);
    if (el == NULL) {
        fail(b, 2);
        return;
    }
    if (b->level == 0)
        b->root = el;
    else
        append(b->stack[b->level - 1], el);
    b->stack[b->level] = el;
    b->folder[b->level] = 0;
    b->level++;
    if (atts[0] != NULL) {
        Py_ssize_t count = 0;
        while (atts[2 * count] != NULL)
            count++;
        if (count > max_attributes) {
            fail(b, 1);
            return;
        }
        for (Py_ssize_t i = 0; i < count; i++) {
            PyObject *key = name_of(atts[2 * i]);
            PyObject *val = key ? PyUnicode_FromString(atts[2 * i + 1]) : NULL;
            PyObject *attr = val ? new_element(key, type_attribute, val) : NULL;
            Py_XDECREF(key);
            Py_XDECREF(val);
            if (attr == NULL) {
                fail(b, 2);
                return;
            }
            append(el, attr);
        }
    }
}

static void
on_end(void *data, const XML_Char *tag)
{
    Build *b = (Build *)data;
    (void)tag;
    if (b->failed)
        return;
    int top = b->level - 1;
    if (b->folder[top]) {
        flush_text_as_value(b); /* the last child's tail */
    }
    else {
        /* a leaf: its text is its value ("" for none), blank or not */
        PyObject *text = b->text_len ? PyUnicode_DecodeUTF8(b->text, b->text_len, NULL) : Py_NewRef(empty);
        if (text == NULL) {
            fail(b, 2);
            return;
        }
        Py_XSETREF(SLOT(b->stack[top], S_VALUE), text);
        b->text_len = 0;
    }
    b->level--;
}

static void
on_text(void *data, const XML_Char *s, int len)
{
    Build *b = (Build *)data;
    if (b->failed || b->level == 0)
        return;
    if (b->text_len + len > b->text_cap) {
        Py_ssize_t cap = b->text_cap ? b->text_cap : 256;
        while (cap < b->text_len + len)
            cap *= 2;
        char *grown = PyMem_Realloc(b->text, cap);
        if (grown == NULL) {
            PyErr_NoMemory();
            fail(b, 2);
            return;
        }
        b->text = grown;
        b->text_cap = cap;
    }
    memcpy(b->text + b->text_len, s, len);
    b->text_len += len;
}

static PyObject *
plain_tree(PyObject *module, PyObject *arg)
{
    (void)module;
    if (element_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_xmlnsc_native.configure was not called");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    if (view.len > INT_MAX) {
        PyBuffer_Release(&view);
        Py_RETURN_NONE;
    }
    /* namespace processing on ("}" separates), as ElementTree's parser has it: a prefix bound
       nowhere is an error there too, and the caller's parser reports it */
    XML_Parser parser = expat->ParserCreate_MM("utf-8", NULL, "}");
    if (parser == NULL) {
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    Build b;
    memset(&b, 0, sizeof(b));
    expat->SetUserData(parser, &b);
    expat->SetElementHandler(parser, on_start, on_end);
    expat->SetCharacterDataHandler(parser, on_text);
    enum XML_Status status = expat->Parse(parser, view.buf, (int)view.len, 1);
    expat->ParserFree(parser);
    PyBuffer_Release(&view);
    PyMem_Free(b.text);
    if (b.failed == 2) {
        Py_XDECREF(b.root);
        return NULL;
    }
    if (status != XML_STATUS_OK || b.failed || b.root == NULL || b.level != 0) {
        Py_XDECREF(b.root);
        Py_RETURN_NONE;
    }
    return b.root;
}

static PyObject *
configure(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *cls, *folder, *field, *attribute, *value;
    int depth;
    Py_ssize_t attributes;
    if (!PyArg_ParseTuple(args, "O!OOOOin", &PyType_Type, &cls, &folder, &field, &attribute, &value,
                          &depth, &attributes))
        return NULL;
    if (depth < 1 || depth >= STACK_LIMIT) {
        PyErr_Format(PyExc_ValueError, "depth limit %d outside 1..%d", depth, STACK_LIMIT - 1);
        return NULL;
    }
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
    Py_INCREF(type);
    Py_XSETREF(element_type, type);
    memcpy(offsets, found, sizeof(offsets));
    Py_XSETREF(type_folder, Py_NewRef(folder));
    Py_XSETREF(type_field, Py_NewRef(field));
    Py_XSETREF(type_attribute, Py_NewRef(attribute));
    Py_XSETREF(type_value, Py_NewRef(value));
    max_depth = depth;
    max_attributes = attributes;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(Element, FOLDER, FIELD, ATTRIBUTE, VALUE, max_depth, max_attributes)"},
    {"plain_tree", plain_tree, METH_O,
     "plain_tree(data) -> the document element's tree, or None for a document not taken whole"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_xmlnsc_native",
    "The XMLNSC fast path's tree built in C from expat's callbacks.", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__xmlnsc_native(void)
{
    expat = (struct PyExpat_CAPI *)PyCapsule_Import(PyExpat_CAPSULE_NAME, 0);
    if (expat == NULL)
        return NULL;
    if (strcmp(expat->magic, PyExpat_CAPI_MAGIC) != 0 || (size_t)expat->size < sizeof(struct PyExpat_CAPI)) {
        PyErr_SetString(PyExc_ImportError, "pyexpat's C API is not the one this module was built for");
        return NULL;
    }
    empty = PyUnicode_InternFromString("");
    if (empty == NULL)
        return NULL;
    return PyModule_Create(&module_def);
}
