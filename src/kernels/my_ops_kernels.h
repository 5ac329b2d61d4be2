/*
 * my_ops kernels: the C interface between the kernels and the binding layer.
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
 *     weight of the RMSNorm family (see my_ops_rms_norm_weight_ok below).
 *     float16 and bfloat16 values are stored as their 16-bit patterns.
 *   - Sizes and indices are int64_t: tensors of more than 2^31 elements work.
 *   - Arithmetic happens in float32 (float64 for float64 tensors); results are
 *     rounded to the tensor's type once, at the end.
 *   - CPU kernels process exactly the rows/elements they are given; the binding
 *     splits work across threads by offsetting pointers.
 *   - CUDA launchers take the stream as `void *` (a cudaStream_t) and return the
 *     cudaError_t of the launch as an int (0 on success).
 */
#ifndef MY_OPS_KERNELS_H
#define MY_OPS_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

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

/*
 * The RMSNorm kernels take their weight (and the CUDA backward writes
 * grad_weight) as `weight_dtype`: `dtype` itself, or float32 with float16 or
 * bfloat16 tensors, as mixed-precision training keeps its parameters in
 * float32 while activations are 16-bit. The weight is read as that type and
 * used in the accumulator type, so a float32 weight is not rounded to 16 bits.
 * Any other pair is refused (MY_OPS_BAD_DTYPE on the CPU, cudaErrorInvalidValue
 * on CUDA); a weight wider still (float64 with float32 or 16-bit tensors) is
 * the caller's to convert to float32 first: the arithmetic is float32 anyway.
 */
static inline int my_ops_rms_norm_weight_ok(my_ops_dtype dtype, my_ops_dtype weight_dtype) {
    return weight_dtype == dtype ||
           (weight_dtype == MY_OPS_FLOAT32 && (dtype == MY_OPS_FLOAT16 || dtype == MY_OPS_BFLOAT16));
}

/* Scale used by short_kernel: out = x * MY_OPS_SHORT_KERNEL_SCALE. */
#define MY_OPS_SHORT_KERNEL_SCALE 1.23

/* ---------------------------------------------------------------- CPU -- */

/* out[i] = x[i] * 1.23 */
int my_ops_short_kernel_cpu(my_ops_dtype dtype, const void *x, void *out, int64_t n);
/* out[i] = a[i] * b[i] */
int my_ops_mul_cpu(my_ops_dtype dtype, const void *a, const void *b, void *out, int64_t n);
/* out[i] = a[i] * b[i] + c */
int my_ops_muladd_cpu(my_ops_dtype dtype, const void *a, const void *b, double c, void *out,
                      int64_t n);
/* out[i] = a[i] + b[i] */
int my_ops_add_cpu(my_ops_dtype dtype, const void *a, const void *b, void *out, int64_t n);

/* c[rows, n] = a[rows, k] @ b[k, n]. Cache-blocked; accumulates in float32 (float64). */
int my_ops_matmul_cpu(my_ops_dtype dtype, const void *a, const void *b, void *c, int64_t rows,
                      int64_t k, int64_t n);

/* y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * weight; y is dense */
int my_ops_rms_norm_cpu(my_ops_dtype dtype, my_ops_dtype weight_dtype, const void *x,
                        int64_t x_stride, const void *weight, void *y, int64_t rows,
                        int64_t hidden, double eps);

/*
 * Backward of rms_norm over `rows` rows: writes grad_x (dense) and ADDS this
 * block of rows' contribution to grad_weight_acc[hidden], a float64
 * accumulator for every dtype (the caller sums the blocks and converts to the
 * weight's dtype): summed in float32 over many rows, the weight gradient drifted.
 */
int my_ops_rms_norm_backward_cpu(my_ops_dtype dtype, my_ops_dtype weight_dtype,
                                 const void *grad_out, int64_t grad_out_stride, const void *x,
                                 int64_t x_stride, const void *weight, void *grad_x,
                                 void *grad_weight_acc, int64_t rows, int64_t hidden, double eps);

/* residual += x (rounded to dtype); x = rms_norm(residual, weight, eps). In place. */
int my_ops_fused_add_rms_norm_cpu(my_ops_dtype dtype, my_ops_dtype weight_dtype, void *x,
                                  int64_t x_stride, void *residual, int64_t residual_stride,
                                  const void *weight, int64_t rows, int64_t hidden, double eps);

/* The activation of a gated unit (act_and_mul). GELU as in torch.nn.functional.gelu:
 * MY_OPS_GELU is approximate="none" (erf), MY_OPS_GELU_TANH is approximate="tanh". */
typedef enum my_ops_activation {
    MY_OPS_SILU = 0,
    MY_OPS_GELU = 1,
    MY_OPS_GELU_TANH = 2
} my_ops_activation;

/* out[r, j] = act(x[r, j]) * x[r, d + j] for x of shape [rows, 2d]; out is dense [rows, d] */
int my_ops_act_and_mul_cpu(my_ops_dtype dtype, my_ops_activation act, const void *x,
                           int64_t x_stride, void *out, int64_t rows, int64_t d);
/* grad_x (dense [rows, 2d]) from grad_out[rows, d] and x[rows, 2d] */
int my_ops_act_and_mul_backward_cpu(my_ops_dtype dtype, my_ops_activation act,
                                    const void *grad_out, int64_t grad_out_stride, const void *x,
                                    int64_t x_stride, void *grad_x, int64_t rows, int64_t d);

/* --------------------------------------------------------------- CUDA -- */

/* Human-readable text of a CUDA error code returned by a launcher. */
const char *my_ops_cuda_error_string(int error);

/* cudaErrorNoKernelImageForDevice: the build has no SASS/PTX usable on the GPU. */
#define MY_OPS_CUDA_NO_KERNEL_IMAGE 209

/* Name and compute capability of a CUDA device; returns a CUDA error code. */
int my_ops_cuda_device_info(int device, char *name, int name_size, int *major, int *minor);

int my_ops_short_kernel_cuda(my_ops_dtype dtype, const void *x, void *out, int64_t n,
                             void *stream);
int my_ops_mul_cuda(my_ops_dtype dtype, const void *a, const void *b, void *out, int64_t n,
                    void *stream);
int my_ops_muladd_cuda(my_ops_dtype dtype, const void *a, const void *b, double c, void *out,
                       int64_t n, void *stream);
int my_ops_add_cuda(my_ops_dtype dtype, const void *a, const void *b, void *out, int64_t n,
                    void *stream);

int my_ops_matmul_cuda(my_ops_dtype dtype, const void *a, const void *b, void *c, int64_t m,
                       int64_t k, int64_t n, void *stream);

int my_ops_rms_norm_cuda(my_ops_dtype dtype, my_ops_dtype weight_dtype, const void *x,
                         int64_t x_stride, const void *weight, void *y, int64_t rows,
                         int64_t hidden, double eps, void *stream);

/*
 * rms_norm backward on CUDA needs a workspace of `partials` x hidden elements
 * (float64 for float64, float32 otherwise) for per-block sums of grad_weight,
 * with partials = my_ops_rms_norm_backward_cuda_partials(dtype, weight_dtype,
 * rows, hidden) on the current device. grad_weight is written as weight_dtype.
 */
int64_t my_ops_rms_norm_backward_cuda_partials(my_ops_dtype dtype, my_ops_dtype weight_dtype,
                                               int64_t rows, int64_t hidden);
int my_ops_rms_norm_backward_cuda(my_ops_dtype dtype, my_ops_dtype weight_dtype,
                                  const void *grad_out, int64_t grad_out_stride, const void *x,
                                  int64_t x_stride, const void *weight, void *grad_x,
                                  void *grad_weight, void *workspace, int64_t partials,
                                  int64_t rows, int64_t hidden, double eps, void *stream);

int my_ops_fused_add_rms_norm_cuda(my_ops_dtype dtype, my_ops_dtype weight_dtype, void *x,
                                   int64_t x_stride, void *residual, int64_t residual_stride,
                                   const void *weight, int64_t rows, int64_t hidden, double eps,
                                   void *stream);

int my_ops_act_and_mul_cuda(my_ops_dtype dtype, my_ops_activation act, const void *x,
                            int64_t x_stride, void *out, int64_t rows, int64_t d, void *stream);
int my_ops_act_and_mul_backward_cuda(my_ops_dtype dtype, my_ops_activation act,
                                     const void *grad_out, int64_t grad_out_stride,
                                     const void *x, int64_t x_stride, void *grad_x, int64_t rows,
                                     int64_t d, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* MY_OPS_KERNELS_H */
