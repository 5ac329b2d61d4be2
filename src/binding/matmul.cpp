// matmul: schema, argument rules, and its CPU and CUDA kernels (registered
// per dispatch key at the end), which share the checks and preparation.
#include "../kernels/matmul.h"
#include "launch.h"

namespace my_ops {
namespace {

using api::Tensor;

const OpRules matmul_op("matmul(Tensor a, Tensor b) -> Tensor",
                        "a: dim=2; b: like=a dim=2 rows=cols(a)");

// matmul's operands, checked and contiguous, and its output.
struct Matmul {
    int64_t m, k, n;
    Tensor ac, bc, out;
    my_ops_dtype dt;
};

Matmul prepare_matmul(const Tensor &a, const Tensor &b) {
    matmul_op.check({a, b});
    const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
    return {m,
            k,
            n,
            api::contiguous(a),
            api::contiguous(b),
            api::empty({m, n}, a.scalar_type(), a),
            kernel_dtype(a)};
}

Tensor matmul_cpu(const Tensor &a, const Tensor &b) {
    Matmul p = prepare_matmul(a, b);
    if (p.m == 0 || p.n == 0) return p.out;
    run_cpu(matmul_op, p.m, grain_for(p.k * p.n), [&](int64_t begin, int64_t end) {
        return my_ops_matmul_cpu(p.dt, element_ptr(p.ac, begin * p.k), p.bc.const_data_ptr(),
                                 mutable_element_ptr(p.out, begin * p.n), end - begin, p.k, p.n);
    });
    return p.out;
}

#ifdef MY_OPS_WITH_CUDA
Tensor matmul_cuda(const Tensor &a, const Tensor &b) {
    Matmul p = prepare_matmul(a, b);
    if (p.m == 0 || p.n == 0) return p.out;
    run_cuda(matmul_op, a, [&](void *stream) {
        return my_ops_matmul_cuda(p.dt, p.ac.const_data_ptr(), p.bc.const_data_ptr(),
                                  p.out.mutable_data_ptr(), p.m, p.k, p.n, stream);
    });
    return p.out;
}
#endif

}  // namespace
}  // namespace my_ops

MY_OPS_FRAGMENT(m) { m.def(my_ops::matmul_op.schema()); }

MY_OPS_IMPL(CPU, m) { m.impl("matmul", MY_OPS_KERNEL(my_ops::matmul_cpu)); }

#ifdef MY_OPS_WITH_CUDA
MY_OPS_IMPL(CUDA, m) { m.impl("matmul", MY_OPS_KERNEL(my_ops::matmul_cuda)); }
#else
MY_OPS_IMPL(CUDA, m) {
    m.impl("matmul", MY_OPS_NO_CUDA_KERNEL(my_ops::matmul_op, my_ops::matmul_cpu));
}
#endif
