/*
 * The `my_ops._C` extension module: plain C on the limited API, so one abi3
 * wheel serves every CPython >= 3.9. Importing it loads libmy_ops (linked
 * here), the shared library of kernels, binding and op registrations, which
 * needs no Python: a LibTorch program can load that library by itself.
 *
 * It exposes the two things Python's fake kernels share with the binding:
 * the op rule texts and the exact overlap test; and, for tests, the C++
 * rule reader on a rule text of no op.
 */
#define Py_LIMITED_API 0x03090000
#include <Python.h>

#include "overlap.h"

MY_OPS_API const char *my_ops_op_rules(void);
MY_OPS_API const char *my_ops_check_rules(const char *schema, const char *rules,
                                          const char *values);

static PyObject *op_rules(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    return PyUnicode_FromString(my_ops_op_rules());
}

/* check_rules(schema, rules, values) -> "" or the refusal (tests: see op_rules.cpp). */
static PyObject *check_rules(PyObject *self, PyObject *args) {
    (void)self;
    const char *schema, *rules, *values;
    if (!PyArg_ParseTuple(args, "sss", &schema, &rules, &values)) return NULL;
    return PyUnicode_FromString(my_ops_check_rules(schema, rules, values));
}

enum { MAX_DIMS = 64 };

/* (sizes, strides, element_size, start) -> view; 0 with an exception set on error. */
static int parse_view(PyObject *tuple, my_ops_view *view, int64_t *sizes, int64_t *strides) {
    PyObject *size_seq, *stride_seq;
    long long element_size, start;
    if (!PyArg_ParseTuple(tuple, "O!O!LL", &PyTuple_Type, &size_seq, &PyTuple_Type, &stride_seq,
                          &element_size, &start))
        return 0;
    const Py_ssize_t dim = PyTuple_Size(size_seq);
    if (dim != PyTuple_Size(stride_seq) || dim > MAX_DIMS) {
        PyErr_SetString(PyExc_ValueError, "sizes and strides must have the same length (<= 64)");
        return 0;
    }
    for (Py_ssize_t k = 0; k < dim; ++k) {
        sizes[k] = PyLong_AsLongLong(PyTuple_GetItem(size_seq, k));
        strides[k] = PyLong_AsLongLong(PyTuple_GetItem(stride_seq, k));
    }
    if (PyErr_Occurred()) return 0;
    view->dim = dim;
    view->sizes = sizes;
    view->strides = strides;
    view->element_size = element_size;
    view->start = start;
    return 1;
}

/* overlap(a) -> internal overlap of a; overlap(a, b) -> overlap of a and b.
 * Returns 0 (no), 1 (yes) or 2 (undecided: treat as yes). */
static PyObject *overlap(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *a_tuple, *b_tuple = NULL;
    int64_t a_sizes[MAX_DIMS], a_strides[MAX_DIMS], b_sizes[MAX_DIMS], b_strides[MAX_DIMS];
    my_ops_view a, b;
    if (!PyArg_ParseTuple(args, "O!|O!", &PyTuple_Type, &a_tuple, &PyTuple_Type, &b_tuple))
        return NULL;
    if (!parse_view(a_tuple, &a, a_sizes, a_strides)) return NULL;
    if (b_tuple == NULL) return PyLong_FromLong(my_ops_internal_overlap(&a));
    if (!parse_view(b_tuple, &b, b_sizes, b_strides)) return NULL;
    return PyLong_FromLong(my_ops_views_overlap(&a, &b));
}

static PyMethodDef methods[] = {
    {"op_rules", op_rules, METH_NOARGS,
     "The argument rules of every op, one 'op<TAB>rules' line each."},
    {"check_rules", check_rules, METH_VARARGS,
     "For tests: a rule text checked on scalar values, one line each -> '' or the refusal."},
    {"overlap", overlap, METH_VARARGS,
     "overlap((sizes, strides, element_size, start)[, other]) -> 0, 1 or 2"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef my_ops_module = {
    PyModuleDef_HEAD_INIT,
    "_C",
    "my_ops operator library; the ops live in torch.ops.my_ops.",
    -1,      /* no per-module state */
    methods, /* m_methods */
    NULL,    /* m_slots */
    NULL,    /* m_traverse */
    NULL,    /* m_clear */
    NULL,    /* m_free */
};

PyMODINIT_FUNC PyInit__C(void) { return PyModule_Create(&my_ops_module); }
