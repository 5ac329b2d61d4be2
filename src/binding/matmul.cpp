// matmul: argument checks and dispatch to the tiled kernels.
#include <torch/library.h>

#include "device.h"

namespace my_ops {
namespace {

at::Tensor matmul(const at::Tensor &a, const at::Tensor &b) {
    check_input("matmul", "a", a);
    check_like("matmul", "a", a, "b", b);
    TORCH_CHECK(a.dim() == 2, "my_ops.matmul: expected a to be a 2-D matrix [M, K], but got ",
                a.dim(), "-D shape ", a.sizes());
    TORCH_CHECK(b.dim() == 2, "my_ops.matmul: expected b to be a 2-D matrix [K, N], but got ",
                b.dim(), "-D shape ", b.sizes());
    TORCH_CHECK(a.size(1) == b.size(0), "my_ops.matmul: expected b to have ", a.size(1),
                " rows (the columns of a ", a.sizes(), "), but got b of shape ", b.sizes());
    const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
    const auto ac = a.contiguous(), bc = b.contiguous();
    auto out = at::empty({m, n}, a.options());
    if (m == 0 || n == 0) return out;
    const auto dt = kernel_dtype(a);
    if (a.is_cuda()) {
        cuda_launch("matmul", a.device(), [&](void *stream) {
            return my_ops_matmul_cuda(dt, ac.const_data_ptr(), bc.const_data_ptr(), out.data_ptr(),
                                      m, k, n, stream);
        });
    } else {
        cpu_parallel(m, grain_for(k * n), [&](int64_t begin, int64_t end) {
            check_status("matmul", my_ops_matmul_cpu(dt, element_ptr(ac, begin * k), bc.const_data_ptr(),
                                                     mutable_element_ptr(out, begin * n),
                                                     end - begin, k, n));
        });
    }
    return out;
}

}  // namespace
}  // namespace my_ops

TORCH_LIBRARY_IMPL(my_ops, CPU, m) { m.impl("matmul", &my_ops::matmul); }
TORCH_LIBRARY_IMPL(my_ops, CUDA, m) { m.impl("matmul", &my_ops::matmul); }
