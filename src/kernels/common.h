/*
 * my_ops kernels: what every op family's C interface shares (status codes,
 * the dtype enum, C linkage, CUDA errors and device info). Each family
 * declares its CPU and CUDA launchers in its own header beside this one
 * (elementwise.h, matmul.h, rms_norm.h, act_and_mul.h).
 *
 * Everything here is plain C over raw pointers and sizes. No torch or Python
 * header is included anywhere under src/kernels/, so the kernels can be built
 * and tested by a C compiler alone (tests/ops/c/).
 *
 * Conventions shared by every kernel:
 *   - Arrays are row-major. The row-wise kernels (rms_norm, fused_add_rms_norm,
 *     act_and_mul) take the row stride of each input they read: the number of
 *     elements between the starts of consecutive rows, at least the row's
 *     width. A slice such as q = qkv[..., :4096] is read in place that way.
 *     Outputs the kernels fill are dense. Other kernels take dense arrays.
 *   - Pointers need not be 16-byte aligned (views with a storage offset are
 *     valid input); the CUDA kernels pick a vectorised path only when they
 *     and the row strides allow it.
 *   - `dtype` names the element type of every tensor argument, but for the
 *     weight of the RMSNorm family (see my_ops_rms_norm_weight_ok in rms_norm.h).
 *     float16 and bfloat16 values are stored as their 16-bit patterns.
 *   - Sizes and indices are int64_t: tensors of more than 2^31 elements work.
 *   - Arithmetic happens in float32 (float64 for float64 tensors); results are
 *     rounded to the tensor's type once, at the end.
 *   - CPU kernels process exactly the rows/elements they are given; the binding
 *     splits work across threads by offsetting pointers.
 *   - CUDA launchers take the stream as `void *` (a cudaStream_t) and return the
 *     cudaError_t of the launch as an int (0 on success).
 *
 * The launchers are internal to libmy_ops (hidden visibility, like the rest
 * of the library but for what src/binding/export.h marks): these headers give
 * them C linkage, so C, C++ and CUDA translation units agree on their names.
 */
#ifndef MY_OPS_KERNELS_COMMON_H
#define MY_OPS_KERNELS_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* Brackets a family header's declarations: C linkage from C++ and CUDA too. */
#ifdef __cplusplus
#define MY_OPS_EXTERN_C_BEGIN extern "C" {
#define MY_OPS_EXTERN_C_END }
#else
#define MY_OPS_EXTERN_C_BEGIN
#define MY_OPS_EXTERN_C_END
#endif

MY_OPS_EXTERN_C_BEGIN

typedef enum my_ops_dtype {
    MY_OPS_FLOAT32 = 0,
    MY_OPS_FLOAT64 = 1,
    MY_OPS_FLOAT16 = 2,
    MY_OPS_BFLOAT16 = 3
} my_ops_dtype;

/* Status returned by the CPU kernels. */
typedef enum my_ops_status {
    MY_OPS_OK = 0,
    MY_OPS_BAD_DTYPE = 1,
    MY_OPS_OUT_OF_MEMORY = 2,
    MY_OPS_BAD_ARGUMENT = 3 /* e.g. an unknown activation */
} my_ops_status;

/* Size in bytes of one element of `dtype` (0 for an unknown dtype). */
size_t my_ops_dtype_size(my_ops_dtype dtype);

/* --------------------------------------------------------------- CUDA -- */

/* Human-readable text of a CUDA error code returned by a launcher. */
const char *my_ops_cuda_error_string(int error);

/* cudaErrorNoKernelImageForDevice: the build has no SASS/PTX usable on the GPU. */
#define MY_OPS_CUDA_NO_KERNEL_IMAGE 209

/* Name and compute capability of a CUDA device; returns a CUDA error code. */
int my_ops_cuda_device_info(int device, char *name, int name_size, int *major, int *minor);

MY_OPS_EXTERN_C_END

#endif /* MY_OPS_KERNELS_COMMON_H */
