/* Symbols of libmy_ops that other binaries call (my_ops._C, LibTorch programs). */
#ifndef MY_OPS_EXPORT_H
#define MY_OPS_EXPORT_H

#if defined(_WIN32)
#ifdef MY_OPS_BUILDING_LIBRARY
#define MY_OPS_API __declspec(dllexport)
#else
#define MY_OPS_API __declspec(dllimport)
#endif
#else
#define MY_OPS_API __attribute__((visibility("default")))
#endif

#endif /* MY_OPS_EXPORT_H */
