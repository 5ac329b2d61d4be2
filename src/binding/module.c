/*
 * The `my_ops._C` extension module. It holds no Python functions: importing
 * it loads this shared library, whose static initialisers register the ops
 * with the PyTorch dispatcher (TORCH_LIBRARY in registration.cpp).
 * Plain C on the limited API, so one abi3 wheel serves every CPython >= 3.9.
 */
#define Py_LIMITED_API 0x03090000
#include <Python.h>

static struct PyModuleDef my_ops_module = {
    PyModuleDef_HEAD_INIT,
    "_C",
    "my_ops operator library; the ops live in torch.ops.my_ops.",
    -1,   /* no per-module state */
    NULL, /* m_methods */
    NULL, /* m_slots */
    NULL, /* m_traverse */
    NULL, /* m_clear */
    NULL, /* m_free */
};

PyMODINIT_FUNC PyInit__C(void) { return PyModule_Create(&my_ops_module); }
