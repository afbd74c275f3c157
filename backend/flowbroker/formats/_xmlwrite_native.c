/*
 * The XML writer's plain subtrees, written in C: `element(el)` gives exactly the text
 * formats/xmlcore.py's `Writer._element` writes for `el`, when every element of its subtree is
 * plain, and None otherwise (the caller then writes it in Python, which also gives every error).
 *
 * Plain, for every element of the subtree: no namespace (""), no unparsed content (`_lazy` None),
 * a name (an exact str) already in the writer's set of checked names; children that are elements
 * (any type the writer writes as an element but CDATA), attributes (ATTRIBUTE, SINGLE_ATTRIBUTE)
 * or unnamed text (VALUE); values that are exact str, int or decimal.Decimal, or None (an
 * attribute's value not None). Anything else (CDATA, comments, processing instructions, namespace
 * declarations, an XML declaration or DOCTYPE inside, other value types or subclasses, a subtree
 * deeper than MAX_DEPTH) is not plain. A Python error met on the way (an int too long for str())
 * is cleared and answered with None: the Python writer meets it again and raises it as before.
 *
 * The tree is read through the offsets the Element class's member descriptors give (`configure`
 * refuses a class whose slots are not plain object slots). Only C code runs during a walk (str,
 * int and Decimal of their exact types; set membership of exact str), and each element is held
 * while it is read.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <string.h>

/* the element types (formats/xmlcore.py) */
#define T_FOLDER_ 0x01000000L
#define T_DOCTYPE 0x01000300L
#define T_XML_DECL 0x01000400L
#define T_VALUE 0x02000000L
#define T_CDATA_VALUE 0x02000001L
#define T_VALUE2 0x02000002L
#define T_COMMENT 0x02000400L
#define T_PI_VALUE 0x02000401L
#define T_CDATA_FIELD 0x03000001L
#define T_ATTRIBUTE 0x03000100L
#define T_SINGLE_ATTRIBUTE 0x03000101L
#define T_NS_DECL 0x03000102L
#define T_SINGLE_NS_DECL 0x03000103L
#define T_PI_FIELD 0x03000401L

/* deeper subtrees are left to Python (which has its own recursion limit) */
#define MAX_DEPTH 256

enum { S_NAME, S_NAMESPACE, S_TYPE, S_VALUE, S_NEXT, S_FIRST, S_LAZY, S_COUNT };
static const char *const slot_names[S_COUNT] = {
    "name", "namespace", "type", "value", "next_sibling", "_first", "_lazy",
};

static PyTypeObject *element_type;
static PyObject *good_names; /* the writer's set of checked names (shared, not copied) */
static PyTypeObject *decimal_type;
static Py_ssize_t offsets[S_COUNT];

#define SLOT(obj, slot) (*(PyObject **)((char *)(obj) + offsets[slot]))

/* -- the output: a growing buffer of 1, 2 or 4 bytes a character, widened as wider text comes -- */

typedef struct {
    char *data;
    int kind;          /* PyUnicode_1BYTE_KIND, 2BYTE or 4BYTE */
    Py_ssize_t len;    /* characters written */
    Py_ssize_t cap;    /* characters room */
    Py_UCS4 maxchar;   /* the widest of the texts written (127: all ASCII) */
    char small[4096];
} Buf;

static void
buf_init(Buf *b)
{
    b->data = b->small;
    b->kind = PyUnicode_1BYTE_KIND;
    b->len = 0;
    b->cap = sizeof(b->small);
    b->maxchar = 127;
}

static void
buf_free(Buf *b)
{
    if (b->data != b->small)
        PyMem_Free(b->data);
}

/* room for `more` characters of the buffer's kind; 0 when memory ran out */
static int
buf_grow(Buf *b, Py_ssize_t more)
{
    if (more > PY_SSIZE_T_MAX / 8 - b->len)
        return 0;
    Py_ssize_t cap = b->cap * 2;
    if (cap < b->len + more)
        cap = b->len + more;
    char *data = PyMem_Malloc((size_t)cap * (size_t)b->kind);
    if (data == NULL)
        return 0;
    memcpy(data, b->data, (size_t)b->len * (size_t)b->kind);
    if (b->data != b->small)
        PyMem_Free(b->data);
    b->data = data;
    b->cap = cap;
    return 1;
}

static inline int
buf_reserve(Buf *b, Py_ssize_t more)
{
    return b->len + more <= b->cap || buf_grow(b, more);
}

/* make the buffer hold `kind` characters (wider than its own) */
static int
buf_widen(Buf *b, int kind)
{
    Py_ssize_t cap = b->cap;
    void *data = PyMem_Malloc((size_t)cap * (size_t)kind);
    if (data == NULL)
        return 0;
    for (Py_ssize_t i = 0; i < b->len; i++)
        PyUnicode_WRITE(kind, data, i, PyUnicode_READ(b->kind, b->data, i));
    if (b->data != b->small)
        PyMem_Free(b->data);
    b->data = data;
    b->kind = kind;
    return 1;
}

/* `n` ASCII characters */
static inline int
buf_ascii(Buf *b, const char *text, Py_ssize_t n)
{
    if (!buf_reserve(b, n))
        return 0;
    if (b->kind == PyUnicode_1BYTE_KIND) {
        char *to = b->data + b->len;
        for (Py_ssize_t i = 0; i < n; i++)
            to[i] = text[i];
    }
    else {
        for (Py_ssize_t i = 0; i < n; i++)
            PyUnicode_WRITE(b->kind, b->data, b->len + i, (unsigned char)text[i]);
    }
    b->len += n;
    return 1;
}

#define BUF_LITERAL(b, text) buf_ascii((b), (text), (Py_ssize_t)(sizeof(text) - 1))

static inline int
buf_char(Buf *b, char c)
{
    if (b->kind != PyUnicode_1BYTE_KIND || b->len >= b->cap)
        return buf_ascii(b, &c, 1);
    b->data[b->len++] = c;
    return 1;
}

/* characters [start, end) of a text of `kind` (no wider than the buffer's) */
static inline int
buf_sub(Buf *b, int kind, const void *data, Py_ssize_t start, Py_ssize_t end)
{
    Py_ssize_t n = end - start;
    if (n <= 0)
        return 1;
    if (!buf_reserve(b, n))
        return 0;
    if (kind == b->kind) {
        if (kind == PyUnicode_1BYTE_KIND && n <= 32) {
            const char *from = (const char *)data + start;
            char *to = b->data + b->len;
            for (Py_ssize_t i = 0; i < n; i++)
                to[i] = from[i];
        }
        else {
            memcpy(b->data + b->len * kind, (const char *)data + start * kind, (size_t)n * (size_t)kind);
        }
    }
    else {
        for (Py_ssize_t i = 0; i < n; i++)
            PyUnicode_WRITE(b->kind, b->data, b->len + i, PyUnicode_READ(kind, data, start + i));
    }
    b->len += n;
    return 1;
}

/* take `s`'s width into the buffer */
static inline int
buf_admit(Buf *b, PyObject *s)
{
    if (PyUnicode_IS_ASCII(s))
        return 1;
    Py_UCS4 top = PyUnicode_MAX_CHAR_VALUE(s);
    if (top > b->maxchar)
        b->maxchar = top;
    int kind = PyUnicode_KIND(s);
    return kind <= b->kind || buf_widen(b, kind);
}

static inline int
buf_str(Buf *b, PyObject *s)
{
    if (!buf_admit(b, s))
        return 0;
    return buf_sub(b, PyUnicode_KIND(s), PyUnicode_DATA(s), 0, PyUnicode_GET_LENGTH(s));
}

/* characters escape_text (1) and escape_attr (1 and 2) replace, by their code below 128 */
static unsigned char special[128];

static void
init_special(void)
{
    special['&'] = special['<'] = special['>'] = 1;
    special['"'] = special['\n'] = special['\r'] = special['\t'] = 2;
}

/* `s` as xmlcore.escape_text (attr 0) or escape_attr (attr 1) writes it */
static int
buf_escaped(Buf *b, PyObject *s, int attr)
{
    if (!buf_admit(b, s))
        return 0;
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    Py_ssize_t n = PyUnicode_GET_LENGTH(s), start = 0;
    int limit = attr ? 2 : 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c >= 128 || !special[c] || special[c] > limit)
            continue;
        const char *entity;
        Py_ssize_t size;
        switch (c) {
        case '&': entity = "&amp;"; size = 5; break;
        case '<': entity = "&lt;"; size = 4; break;
        case '>': entity = "&gt;"; size = 4; break;
        case '"': entity = "&quot;"; size = 6; break;
        case '\n': entity = "&#10;"; size = 5; break;
        case '\r': entity = "&#13;"; size = 5; break;
        default: entity = "&#9;"; size = 4; break;
        }
        if (!buf_sub(b, kind, data, start, i) || !buf_ascii(b, entity, size))
            return 0;
        start = i + 1;
    }
    return buf_sub(b, kind, data, start, n);
}

static PyObject *
buf_finish(Buf *b)
{
    PyObject *text = PyUnicode_New(b->len, b->maxchar);
    if (text == NULL)
        return NULL;
    /* the buffer's kind is the widest text's, which is the kind `maxchar` gives */
    memcpy(PyUnicode_DATA(text), b->data, (size_t)b->len * (size_t)b->kind);
    return text;
}

/* -- Decimal: str() of a finite Decimal in plain notation written from its digits ----------------
 *
 * str(Decimal) makes a string through libmpdec's to_sci_string: about half of what writing a
 * message of numbers costs. A Decimal of the C implementation (_decimal) holds an mpd_t after its
 * hash; its coefficient is `len` words of 19 decimal digits, least significant first. This module
 * reads that layout only after `configure` has checked it on sample values (their inline data
 * where that layout puts it, and every sample written as str() writes it); otherwise, and for
 * every value that str() would write with an exponent (where the context's `capitals` matters),
 * an infinity or a NaN, it calls str().
 */
#if SIZEOF_SIZE_T == 8
#define DEC_FAST 1
typedef struct {
    uint8_t flags;
    Py_ssize_t exp;
    Py_ssize_t digits;
    Py_ssize_t len;
    Py_ssize_t alloc;
    uint64_t *data;
} Mpd;
typedef struct {
    PyObject_HEAD
    Py_hash_t hash;
    Mpd dec;
    uint64_t data[4];
} DecObject;
#define MPD_NEG 1
#define MPD_SPECIAL 14
#define DEC_WORD_DIGITS 19
#define DEC_MAX_DIGITS 76
static int dec_fast;

/* 1: written; 0: str() must write it */
static int
write_decimal(Buf *b, PyObject *value)
{
    const Mpd *d = &((DecObject *)value)->dec;
    if (d->flags & MPD_SPECIAL || d->len < 1 || d->len > DEC_MAX_DIGITS / DEC_WORD_DIGITS || d->digits < 1
        || d->digits > DEC_MAX_DIGITS)
        return 0;
    Py_ssize_t exp = d->exp, digits = d->digits;
    if (exp > 0 || exp + digits - 1 < -6)
        return 0; /* written with an exponent */
    char coef[DEC_MAX_DIGITS + DEC_WORD_DIGITS], *end = coef + sizeof(coef), *at = end;
    for (Py_ssize_t w = 0; w < d->len; w++) {
        uint64_t word = d->data[w];
        int last = w == d->len - 1;
        for (int k = 0; k < DEC_WORD_DIGITS && (!last || word || k == 0); k++) {
            *--at = (char)('0' + word % 10);
            word /= 10;
        }
    }
    if (end - at != digits)
        return 0;
    char text[2 * DEC_MAX_DIGITS + 16];
    Py_ssize_t n = 0;
    if (d->flags & MPD_NEG)
        text[n++] = '-';
    Py_ssize_t point = digits + exp; /* digits before the point */
    if (exp == 0) {
        memcpy(text + n, at, (size_t)digits);
        n += digits;
    }
    else if (point > 0) {
        memcpy(text + n, at, (size_t)point);
        n += point;
        text[n++] = '.';
        memcpy(text + n, at + point, (size_t)(digits - point));
        n += digits - point;
    }
    else {
        text[n++] = '0';
        text[n++] = '.';
        for (Py_ssize_t i = 0; i < -point; i++)
            text[n++] = '0';
        memcpy(text + n, at, (size_t)digits);
        n += digits;
    }
    return buf_ascii(b, text, n) ? 1 : -1;
}

/* whether Decimal values of `type` have the layout above: checked on samples */
static int
check_decimal_layout(PyTypeObject *type)
{
    static const char *const samples[] = {
        "0", "-0", "1.00", "-123.4500", "0.000001", "-0.00", "100", "9999999999999999999",
        "10000000000000000000.000", "1234567890123456789012345.5", "0.1234567890123456789012",
        "-98765432109876543210987654321098765432.1", "7E+2", "1E-9", "NaN", "-Infinity",
    };
    if (type->tp_basicsize < (Py_ssize_t)sizeof(DecObject))
        return 0;
    for (size_t i = 0; i < sizeof(samples) / sizeof(samples[0]); i++) {
        PyObject *value = PyObject_CallFunction((PyObject *)type, "s", samples[i]);
        if (value == NULL) {
            PyErr_Clear();
            return 0;
        }
        int ok = Py_TYPE(value) == type;
        if (ok && i == 2) /* a small value keeps its words inside the object */
            ok = ((DecObject *)value)->dec.data == ((DecObject *)value)->data && ((DecObject *)value)->dec.len == 1
                 && ((DecObject *)value)->dec.data[0] == 100 && ((DecObject *)value)->dec.exp == -2;
        if (ok) {
            Buf b;
            buf_init(&b);
            int got = write_decimal(&b, value);
            PyObject *expected = PyObject_Str(value);
            if (expected == NULL) {
                PyErr_Clear();
                ok = 0;
            }
            else if (got == 1) {
                PyObject *written = buf_finish(&b);
                ok = written != NULL && PyUnicode_Compare(written, expected) == 0;
                Py_XDECREF(written);
                PyErr_Clear();
            }
            else {
                /* exponents and specials are left to str() */
                ok = got == 0 && (strchr(samples[i], 'E') != NULL || strchr(samples[i], 'N') != NULL
                                  || strchr(samples[i], 'n') != NULL);
            }
            Py_XDECREF(expected);
            buf_free(&b);
        }
        Py_DECREF(value);
        if (!ok)
            return 0;
    }
    return 1;
}
#endif

/* -- the walk -------------------------------------------------------------------------------- */

/* 1: written; 0: not plain; -1: a Python error is set */
typedef int Result;

/* the element's type as a C long, or -1 when it is not an exact int in range */
static long
kind_of(PyObject *el)
{
    PyObject *kind = SLOT(el, S_TYPE);
    if (kind == NULL || !PyLong_CheckExact(kind))
        return -1;
    int overflow;
    long value = PyLong_AsLongAndOverflow(kind, &overflow);
    if (overflow || value < 0)
        return -1;
    return value;
}

static int
is_text_type(long kind)
{
    return kind == T_VALUE || kind == T_VALUE2;
}

/* whether an element of this type is written as an element of its own (and not as CDATA) */
static int
is_element_type(long kind, PyObject *name)
{
    switch (kind) {
    case T_ATTRIBUTE: case T_SINGLE_ATTRIBUTE: case T_NS_DECL: case T_SINGLE_NS_DECL:
    case T_CDATA_VALUE: case T_CDATA_FIELD: case T_COMMENT: case T_PI_VALUE: case T_PI_FIELD:
    case T_XML_DECL: case T_DOCTYPE:
        return 0;
    default:
        return !(is_text_type(kind) && PyUnicode_GET_LENGTH(name) == 0);
    }
}

static int
no_namespace(PyObject *el)
{
    PyObject *ns = SLOT(el, S_NAMESPACE);
    return ns != NULL && PyUnicode_CheckExact(ns) && PyUnicode_GET_LENGTH(ns) == 0;
}

/* a value as text: 1 with `*text` a new reference to an exact str; 0 not a plain value; -1 error.
   None is not plain here: each caller handles None first. */
static Result
text_of(PyObject *value, PyObject **text)
{
    PyTypeObject *vtype = Py_TYPE(value);
    if (vtype == &PyUnicode_Type) {
        *text = Py_NewRef(value);
        return 1;
    }
    if (vtype != &PyLong_Type && vtype != decimal_type)
        return 0;
    PyObject *made = PyObject_Str(value);
    if (made == NULL)
        return -1;
    if (!PyUnicode_CheckExact(made)) {
        Py_DECREF(made);
        return 0;
    }
    *text = made;
    return 1;
}

/* a plain value's text, escaped (escape_text, or escape_attr when `attr`) unless it is a number */
static Result
write_value(Buf *b, PyObject *value, int attr)
{
    PyTypeObject *vtype = Py_TYPE(value);
    if (vtype == &PyUnicode_Type)
        return buf_escaped(b, value, attr) ? 1 : -1;
#ifdef DEC_FAST
    if (vtype == decimal_type && dec_fast) {
        Result got = write_decimal(b, value);
        if (got != 0)
            return got;
    }
#endif
    PyObject *text;
    Result got = text_of(value, &text);
    if (got != 1)
        return got;
    /* str() of an int or a Decimal has nothing to escape */
    int ok = buf_str(b, text);
    Py_DECREF(text);
    return ok ? 1 : -1;
}

static Result write_element(Buf *b, PyObject *el, int depth);

/* an attribute child: ` name="value"` */
static Result
write_attribute(Buf *b, PyObject *kid)
{
    PyObject *name = SLOT(kid, S_NAME), *value = SLOT(kid, S_VALUE);
    if (name == NULL || !PyUnicode_CheckExact(name) || !no_namespace(kid) || value == NULL || value == Py_None)
        return 0;
    if (!(buf_char(b, ' ') && buf_str(b, name) && BUF_LITERAL(b, "=\"")))
        return -1;
    Result got = write_value(b, value, 1);
    if (got != 1)
        return got;
    return buf_char(b, '"') ? 1 : -1;
}

/* the children of `el` (a folder) that are not attributes; `*content` says whether any was written */
static Result
write_content(Buf *b, PyObject *el, PyObject *first, int depth, int *content)
{
    PyObject *kid = Py_NewRef(first);
    Result result = 1;
    while (kid != Py_None) {
        long kind = kind_of(kid);
        PyObject *name = SLOT(kid, S_NAME);
        PyObject *lazy = SLOT(kid, S_LAZY);
        if (kind < 0 || name == NULL || !PyUnicode_CheckExact(name) || lazy != Py_None) {
            result = 0;
            break;
        }
        if (kind == T_ATTRIBUTE || kind == T_SINGLE_ATTRIBUTE) {
            /* written in the start tag */
        }
        else if (is_text_type(kind) && PyUnicode_GET_LENGTH(name) == 0) {
            PyObject *value = SLOT(kid, S_VALUE);
            if (value == NULL || SLOT(kid, S_FIRST) != Py_None) {
                result = 0;
                break;
            }
            if (value != Py_None) {
                /* written even when empty: the folder then has content, `<a></a>` */
                result = write_value(b, value, 0);
                if (result != 1)
                    break;
                *content = 1;
            }
        }
        else if (is_element_type(kind, name)) {
            result = write_element(b, kid, depth + 1);
            if (result != 1)
                break;
            *content = 1;
        }
        else {
            result = 0;
            break;
        }
        PyObject *next = SLOT(kid, S_NEXT);
        if (next == NULL || (next != Py_None && Py_TYPE(next) != element_type)) {
            result = 0;
            break;
        }
        Py_SETREF(kid, Py_NewRef(next));
    }
    Py_DECREF(kid);
    return result;
}

static Result
write_folder(Buf *b, PyObject *el, PyObject *name, PyObject *first, int depth)
{
    /* the start tag and the attributes, in the children's order */
    if (!(buf_char(b, '<') && buf_str(b, name)))
        return -1;
    PyObject *kid = first;
    while (kid != Py_None) {
        long kind = kind_of(kid);
        if (kind == T_NS_DECL || kind == T_SINGLE_NS_DECL)
            return 0;
        if (kind == T_ATTRIBUTE || kind == T_SINGLE_ATTRIBUTE) {
            PyObject *lazy = SLOT(kid, S_LAZY), *kfirst = SLOT(kid, S_FIRST);
            if (lazy != Py_None || kfirst != Py_None)
                return 0;
            Result got = write_attribute(b, kid);
            if (got != 1)
                return got;
        }
        kid = SLOT(kid, S_NEXT);
        if (kid == NULL || (kid != Py_None && Py_TYPE(kid) != element_type))
            return 0;
    }
    if (!buf_char(b, '>'))
        return -1;
    Py_ssize_t mark = b->len;
    int content = 0;
    /* the folder's own value first */
    PyObject *value = SLOT(el, S_VALUE);
    if (value != Py_None) {
        Result got = write_value(b, value, 0);
        if (got != 1)
            return got;
        content = b->len > mark; /* an empty string is no content */
    }
    Result got = write_content(b, el, first, depth, &content);
    if (got != 1)
        return got;
    if (!content) {
        b->len = mark - 1; /* back over the '>' */
        return BUF_LITERAL(b, "/>") ? 1 : -1;
    }
    return BUF_LITERAL(b, "</") && buf_str(b, name) && buf_char(b, '>') ? 1 : -1;
}

/* `el`, whose type the caller found to be an element's */
static Result
write_element(Buf *b, PyObject *el, int depth)
{
    if (depth > MAX_DEPTH)
        return 0;
    PyObject *name = SLOT(el, S_NAME), *value = SLOT(el, S_VALUE);
    PyObject *first = SLOT(el, S_FIRST), *lazy = SLOT(el, S_LAZY);
    if (name == NULL || value == NULL || first == NULL || lazy != Py_None || !no_namespace(el)
        || !PyUnicode_CheckExact(name))
        return 0;
    if (first != Py_None && Py_TYPE(first) != element_type)
        return 0;
    int known = PySet_Contains(good_names, name);
    if (known != 1)
        return known;
    Py_INCREF(el);
    Result result;
    if (first != Py_None) {
        result = write_folder(b, el, name, first, depth);
    }
    else if (value == Py_None || (Py_TYPE(value) == &PyUnicode_Type && PyUnicode_GET_LENGTH(value) == 0)) {
        result = buf_char(b, '<') && buf_str(b, name) && BUF_LITERAL(b, "/>") ? 1 : -1;
    }
    else if (!(buf_char(b, '<') && buf_str(b, name) && buf_char(b, '>'))) {
        result = -1;
    }
    else {
        result = write_value(b, value, 0);
        if (result == 1)
            result = BUF_LITERAL(b, "</") && buf_str(b, name) && buf_char(b, '>') ? 1 : -1;
    }
    Py_DECREF(el);
    return result;
}

static PyObject *
element(PyObject *module, PyObject *el)
{
    (void)module;
    if (element_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_xmlwrite_native.configure was not called");
        return NULL;
    }
    if (Py_TYPE(el) != element_type)
        Py_RETURN_NONE;
    long kind = kind_of(el);
    PyObject *name = SLOT(el, S_NAME);
    if (kind < 0 || name == NULL || !PyUnicode_CheckExact(name) || !is_element_type(kind, name))
        Py_RETURN_NONE;
    Buf b;
    buf_init(&b);
    Result got = write_element(&b, el, 0);
    PyObject *text = NULL;
    if (got == 1) {
        text = buf_finish(&b);
        if (text == NULL)
            got = -1;
    }
    buf_free(&b);
    if (got == 1)
        return text;
    if (got < 0) {
        /* an error on the way (memory, an int too long for str()): the Python writer meets it again */
        PyErr_Clear();
    }
    Py_RETURN_NONE;
}

static PyObject *
configure(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *cls, *names, *decimal;
    int digits = 1;
    if (!PyArg_ParseTuple(args, "O!O!O!|p", &PyType_Type, &cls, &PySet_Type, &names, &PyType_Type, &decimal,
                          &digits))
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
        if (member->type != T_OBJECT_EX) {
            PyErr_Format(PyExc_TypeError, "%s.%s is not an object slot", type->tp_name, slot_names[i]);
            return NULL;
        }
        found[i] = member->offset;
    }
    Py_INCREF(type);
    Py_XSETREF(element_type, type);
    Py_XSETREF(good_names, Py_NewRef(names));
    Py_XSETREF(decimal_type, (PyTypeObject *)Py_NewRef(decimal));
    memcpy(offsets, found, sizeof(offsets));
#ifdef DEC_FAST
    dec_fast = digits && check_decimal_layout((PyTypeObject *)decimal);
    return PyBool_FromLong(dec_fast);
#else
    Py_RETURN_FALSE;
#endif
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(Element, good_names, Decimal, digits=True) -> whether a Decimal's digits are read directly"},
    {"element", element, METH_O,
     "element(el) -> the XML text Writer._element writes for el's subtree, or None when it is not plain"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_xmlwrite_native", "The XML writer's plain subtrees written in C.", -1, methods,
};

PyMODINIT_FUNC
PyInit__xmlwrite_native(void)
{
    init_special();
    return PyModule_Create(&module_def);
}
