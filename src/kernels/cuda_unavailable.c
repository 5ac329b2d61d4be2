/*
 * Stand-ins for the CUDA launchers in a CPU-only build, so the binding links
 * unchanged. The binding never calls them: in such a build it rejects CUDA
 * tensors before any launch (src/binding/device.h). Each returns an error.
 */
#include "my_ops_kernels.h"

enum { NO_CUDA = -1 };

const char *my_ops_cuda_error_string(int error) {
    (void)error;
    return "this build of my_ops has no CUDA kernels";
}

int my_ops_cuda_device_info(int device, char *name, int name_size, int *major, int *minor) {
    (void)device, (void)name, (void)name_size, (void)major, (void)minor;
    return NO_CUDA;
}
int my_ops_short_kernel_cuda(my_ops_dtype d, const void *x, void *o, int64_t n, void *s) {
    (void)d, (void)x, (void)o, (void)n, (void)s;
    return NO_CUDA;
}
int my_ops_mul_cuda(my_ops_dtype d, const void *a, const void *b, void *o, int64_t n, void *s) {
    (void)d, (void)a, (void)b, (void)o, (void)n, (void)s;
    return NO_CUDA;
}
int my_ops_muladd_cuda(my_ops_dtype d, const void *a, const void *b, double c, void *o, int64_t n,
                       void *s) {
    (void)d, (void)a, (void)b, (void)c, (void)o, (void)n, (void)s;
    return NO_CUDA;
}
int my_ops_add_cuda(my_ops_dtype d, const void *a, const void *b, void *o, int64_t n, void *s) {
    (void)d, (void)a, (void)b, (void)o, (void)n, (void)s;
    return NO_CUDA;
}
int my_ops_matmul_cuda(my_ops_dtype d, const void *a, const void *b, void *c, int64_t m, int64_t k,
                       int64_t n, void *s) {
    (void)d, (void)a, (void)b, (void)c, (void)m, (void)k, (void)n, (void)s;
    return NO_CUDA;
}
int my_ops_rms_norm_cuda(my_ops_dtype d, const void *x, const void *w, void *y, int64_t r,
                         int64_t h, double e, void *s) {
    (void)d, (void)x, (void)w, (void)y, (void)r, (void)h, (void)e, (void)s;
    return NO_CUDA;
}
int64_t my_ops_rms_norm_backward_cuda_partials(my_ops_dtype d, int64_t rows, int64_t hidden) {
    (void)d, (void)rows, (void)hidden;
    return 1;
}
int my_ops_rms_norm_backward_cuda(my_ops_dtype d, const void *g, const void *x, const void *w,
                                  void *gx, void *gw, void *ws, int64_t p, int64_t r, int64_t h,
                                  double e, void *s) {
    (void)d, (void)g, (void)x, (void)w, (void)gx, (void)gw, (void)ws, (void)p, (void)r, (void)h;
    (void)e, (void)s;
    return NO_CUDA;
}
int my_ops_fused_add_rms_norm_cuda(my_ops_dtype d, void *x, void *res, const void *w, int64_t r,
                                   int64_t h, double e, void *s) {
    (void)d, (void)x, (void)res, (void)w, (void)r, (void)h, (void)e, (void)s;
    return NO_CUDA;
}
int my_ops_silu_and_mul_cuda(my_ops_dtype d, const void *x, void *o, int64_t r, int64_t n,
                             void *s) {
    (void)d, (void)x, (void)o, (void)r, (void)n, (void)s;
    return NO_CUDA;
}
int my_ops_silu_and_mul_backward_cuda(my_ops_dtype d, const void *g, const void *x, void *gx,
                                      int64_t r, int64_t n, void *s) {
    (void)d, (void)g, (void)x, (void)gx, (void)r, (void)n, (void)s;
    return NO_CUDA;
}
