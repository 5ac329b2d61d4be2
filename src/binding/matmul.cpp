// matmul: schema, argument rules and dispatch to the tiled kernels.
#include "../kernels/matmul.h"
#include "launch.h"

namespace my_ops {
namespace {

using api::Tensor;

const OpRules matmul_op("matmul(Tensor a, Tensor b) -> Tensor",
                        "a: dim=2; b: like=a dim=2 rows=cols(a)");

Tensor matmul(const Tensor &a, const Tensor &b) {
    matmul_op.check({a, b});
    const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
    const auto ac = api::contiguous(a), bc = api::contiguous(b);
    auto out = api::empty({m, n}, a.scalar_type(), a);
    if (m == 0 || n == 0) return out;
    const auto dt = kernel_dtype(a);
    run_kernel(
        matmul_op, a, m, grain_for(k * n),
        [&](int64_t begin, int64_t end) {
            return my_ops_matmul_cpu(dt, element_ptr(ac, begin * k), bc.const_data_ptr(),
                                     mutable_element_ptr(out, begin * n), end - begin, k, n);
        },
        [&](void *stream) {
            return my_ops_matmul_cuda(dt, ac.const_data_ptr(), bc.const_data_ptr(),
                                      out.mutable_data_ptr(), m, k, n, stream);
        });
    return out;
}

template <typename Library> void register_kernels(Library &m) {
    m.impl("matmul", MY_OPS_KERNEL(matmul));
}

}  // namespace
}  // namespace my_ops

MY_OPS_FRAGMENT(m) { m.def(my_ops::matmul_op.schema()); }
MY_OPS_CPU_AND_CUDA(my_ops::register_kernels)
