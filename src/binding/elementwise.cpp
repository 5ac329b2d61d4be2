// short_kernel, mul, muladd, add_out and its functional form: schemas, argument rules, and each
// op's CPU and CUDA kernel (registered per dispatch key at the end), which
// share the checks and the preparation of the arguments.
#include "../kernels/elementwise.h"
#include "launch.h"

namespace my_ops {
namespace {

using api::Tensor;

const OpRules short_kernel_op("short_kernel(Tensor x) -> Tensor", "");
const OpRules mul_op("mul(Tensor a, Tensor b) -> Tensor", "b: like=a shape=a");
const OpRules muladd_op("muladd(Tensor a, Tensor b, float c) -> Tensor", "b: like=a shape=a");
// out may be a or b itself (element i is read before it is written), but not
// another view of their memory.
const OpRules add_out_op("add_out(Tensor a, Tensor b, Tensor(a!) out) -> ()",
                         "b: like=a shape=a; out: like=a shape=a written apart_or_same=a "
                         "apart_or_same=b");
// The same, as a new tensor: a + b. What an exported program calls in place of add_out, then
// copies into out (python/my_ops/families/elementwise.py): inside an AOTInductor package a
// refusal then leaves an undefined output, which stops the call, where the in-place op's refusal
// is only logged (docs/deploying.md). It reads only a and b, but it takes out, the caller's
// tensor in a package, to hold it to add_out's rules for the copy into it, checked when the
// package runs: its dtype, shape and device, its elements apart from each other (an expanded
// out would have the copy write past its memory) and apart from a and b unless it is one of
// them. (Under vmap an unbatched out is given as a tensor of its own: python/my_ops/_vmap.py.)
const OpRules add_out_functional_op("add_out_functional(Tensor a, Tensor b, Tensor out) -> Tensor",
                                    "b: like=a shape=a; out: like=a shape=a written "
                                    "apart_or_same=a apart_or_same=b");

// Runs an element-wise CPU kernel, cpu(first element, count), over the
// contiguous elements of `like` in parallel chunks.
template <typename Cpu>
void run_elementwise_cpu(const OpRules &op, const Tensor &like, const Cpu &cpu) {
    if (like.numel() == 0) return;
    run_cpu(op, like.numel(), grain_for(1),
            [&](int64_t begin, int64_t end) { return cpu(begin, end - begin); });
}

#ifdef MY_OPS_WITH_CUDA
// Runs an element-wise CUDA launcher over `like`'s elements: one launch.
template <typename Cuda>
void run_elementwise_cuda(const OpRules &op, const Tensor &like, const Cuda &cuda) {
    if (like.numel() == 0) return;
    run_cuda(op, like, cuda);
}
#endif

// The checked operands of an op, contiguous, its output and the kernels' dtype.
struct Unary {
    Tensor xc, out;
    my_ops_dtype dt;
};
struct Binary {
    Tensor ac, bc, out;
    my_ops_dtype dt;
};

// a and b contiguous and a new output like a (the op's rules already checked).
Binary binary_operands(const Tensor &a, const Tensor &b) {
    return {api::contiguous(a), api::contiguous(b),
            api::empty(api::sizes_of(a), a.scalar_type(), a), kernel_dtype(a)};
}

// -------------------------------------------------------- short_kernel --

Unary prepare_short_kernel(const Tensor &x) {
    short_kernel_op.check({x});
    return {api::contiguous(x), api::empty(api::sizes_of(x), x.scalar_type(), x), kernel_dtype(x)};
}

Tensor short_kernel_cpu(const Tensor &x) {
    Unary u = prepare_short_kernel(x);
    run_elementwise_cpu(short_kernel_op, x, [&](int64_t i, int64_t n) {
        return my_ops_short_kernel_cpu(u.dt, element_ptr(u.xc, i), mutable_element_ptr(u.out, i),
                                       n);
    });
    return u.out;
}

#ifdef MY_OPS_WITH_CUDA
Tensor short_kernel_cuda(const Tensor &x) {
    Unary u = prepare_short_kernel(x);
    run_elementwise_cuda(short_kernel_op, x, [&](void *stream) {
        return my_ops_short_kernel_cuda(u.dt, u.xc.const_data_ptr(), u.out.mutable_data_ptr(),
                                        x.numel(), stream);
    });
    return u.out;
}
#endif

// ----------------------------------------------------------------- mul --

Binary prepare_mul(const Tensor &a, const Tensor &b) {
    mul_op.check({a, b});
    return binary_operands(a, b);
}

Tensor mul_cpu(const Tensor &a, const Tensor &b) {
    Binary o = prepare_mul(a, b);
    run_elementwise_cpu(mul_op, a, [&](int64_t i, int64_t n) {
        return my_ops_mul_cpu(o.dt, element_ptr(o.ac, i), element_ptr(o.bc, i),
                              mutable_element_ptr(o.out, i), n);
    });
    return o.out;
}

#ifdef MY_OPS_WITH_CUDA
Tensor mul_cuda(const Tensor &a, const Tensor &b) {
    Binary o = prepare_mul(a, b);
    run_elementwise_cuda(mul_op, a, [&](void *stream) {
        return my_ops_mul_cuda(o.dt, o.ac.const_data_ptr(), o.bc.const_data_ptr(),
                               o.out.mutable_data_ptr(), a.numel(), stream);
    });
    return o.out;
}
#endif

// -------------------------------------------------------------- muladd --

Binary prepare_muladd(const Tensor &a, const Tensor &b, double c) {
    muladd_op.check({a, b, c});
    return binary_operands(a, b);
}

Tensor muladd_cpu(const Tensor &a, const Tensor &b, double c) {
    Binary o = prepare_muladd(a, b, c);
    run_elementwise_cpu(muladd_op, a, [&](int64_t i, int64_t n) {
        return my_ops_muladd_cpu(o.dt, element_ptr(o.ac, i), element_ptr(o.bc, i), c,
                                 mutable_element_ptr(o.out, i), n);
    });
    return o.out;
}

#ifdef MY_OPS_WITH_CUDA
Tensor muladd_cuda(const Tensor &a, const Tensor &b, double c) {
    Binary o = prepare_muladd(a, b, c);
    run_elementwise_cuda(muladd_op, a, [&](void *stream) {
        return my_ops_muladd_cuda(o.dt, o.ac.const_data_ptr(), o.bc.const_data_ptr(), c,
                                  o.out.mutable_data_ptr(), a.numel(), stream);
    });
    return o.out;
}
#endif

// ------------------------------------------------------------- add_out --

// out = a + b; a non-contiguous out is filled through a contiguous buffer, dest.
struct AddOut {
    Tensor ac, bc;
    bool direct;  // dest is out itself
    Tensor dest;
    my_ops_dtype dt;
};

AddOut prepare_add_out(const Tensor &a, const Tensor &b, const Tensor &out) {
    add_out_op.check({a, b, out});
    const auto ac = api::contiguous(a), bc = api::contiguous(b);
    const bool direct = out.is_contiguous();
    auto dest = direct ? out : api::empty(api::sizes_of(out), out.scalar_type(), out);
    return {ac, bc, direct, dest, kernel_dtype(a)};
}

void add_out_cpu(const Tensor &a, const Tensor &b, Tensor out) {
    AddOut o = prepare_add_out(a, b, out);
    run_elementwise_cpu(add_out_op, a, [&](int64_t i, int64_t n) {
        return my_ops_add_cpu(o.dt, element_ptr(o.ac, i), element_ptr(o.bc, i),
                              mutable_element_ptr(o.dest, i), n);
    });
    if (!o.direct) api::copy_(out, o.dest);
}

#ifdef MY_OPS_WITH_CUDA
void add_out_cuda(const Tensor &a, const Tensor &b, Tensor out) {
    AddOut o = prepare_add_out(a, b, out);
    run_elementwise_cuda(add_out_op, a, [&](void *stream) {
        return my_ops_add_cuda(o.dt, o.ac.const_data_ptr(), o.bc.const_data_ptr(),
                               o.dest.mutable_data_ptr(), a.numel(), stream);
    });
    if (!o.direct) api::copy_(out, o.dest);
}
#endif

// ---------------------------------------------------- add_out_functional --

Binary prepare_add_out_functional(const Tensor &a, const Tensor &b, const Tensor &out) {
    add_out_functional_op.check({a, b, out});
    return binary_operands(a, b);
}

Tensor add_out_functional_cpu(const Tensor &a, const Tensor &b, const Tensor &out) {
    Binary o = prepare_add_out_functional(a, b, out);
    run_elementwise_cpu(add_out_functional_op, a, [&](int64_t i, int64_t n) {
        return my_ops_add_cpu(o.dt, element_ptr(o.ac, i), element_ptr(o.bc, i),
                              mutable_element_ptr(o.out, i), n);
    });
    return o.out;
}

#ifdef MY_OPS_WITH_CUDA
Tensor add_out_functional_cuda(const Tensor &a, const Tensor &b, const Tensor &out) {
    Binary o = prepare_add_out_functional(a, b, out);
    run_elementwise_cuda(add_out_functional_op, a, [&](void *stream) {
        return my_ops_add_cuda(o.dt, o.ac.const_data_ptr(), o.bc.const_data_ptr(),
                               o.out.mutable_data_ptr(), a.numel(), stream);
    });
    return o.out;
}
#endif

}  // namespace
}  // namespace my_ops

MY_OPS_FRAGMENT(m) {
    for (const auto *op : {&my_ops::short_kernel_op, &my_ops::mul_op, &my_ops::muladd_op,
                           &my_ops::add_out_op, &my_ops::add_out_functional_op})
        m.def(op->schema());
}

MY_OPS_IMPL(CPU, m) {
    m.impl("short_kernel", MY_OPS_KERNEL(my_ops::short_kernel_cpu));
    m.impl("mul", MY_OPS_KERNEL(my_ops::mul_cpu));
    m.impl("muladd", MY_OPS_KERNEL(my_ops::muladd_cpu));
    m.impl("add_out", MY_OPS_KERNEL(my_ops::add_out_cpu));
    m.impl("add_out_functional", MY_OPS_KERNEL(my_ops::add_out_functional_cpu));
}

#ifdef MY_OPS_WITH_CUDA
MY_OPS_IMPL(CUDA, m) {
    m.impl("short_kernel", MY_OPS_KERNEL(my_ops::short_kernel_cuda));
    m.impl("mul", MY_OPS_KERNEL(my_ops::mul_cuda));
    m.impl("muladd", MY_OPS_KERNEL(my_ops::muladd_cuda));
    m.impl("add_out", MY_OPS_KERNEL(my_ops::add_out_cuda));
    m.impl("add_out_functional", MY_OPS_KERNEL(my_ops::add_out_functional_cuda));
}
#else
MY_OPS_IMPL(CUDA, m) {
    m.impl("short_kernel",
           MY_OPS_NO_CUDA_KERNEL(my_ops::short_kernel_op, my_ops::short_kernel_cpu));
    m.impl("mul", MY_OPS_NO_CUDA_KERNEL(my_ops::mul_op, my_ops::mul_cpu));
    m.impl("muladd", MY_OPS_NO_CUDA_KERNEL(my_ops::muladd_op, my_ops::muladd_cpu));
    m.impl("add_out", MY_OPS_NO_CUDA_KERNEL(my_ops::add_out_op, my_ops::add_out_cpu));
    m.impl("add_out_functional",
           MY_OPS_NO_CUDA_KERNEL(my_ops::add_out_functional_op, my_ops::add_out_functional_cpu));
}
#endif
