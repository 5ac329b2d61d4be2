// Running work on the tensor's device: CPU work split across threads with
// at::parallel_for, CUDA kernels launched on the current stream of the
// tensor's device under a device guard, their launch errors checked.
#pragma once

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#ifdef MY_OPS_WITH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include "checks.h"

namespace my_ops {

// Calls body(begin, end) over [0, count) in parallel chunks of at least
// `grain` items; exceptions propagate to the caller.
template <typename Body> void cpu_parallel(int64_t count, int64_t grain, const Body &body) {
    at::parallel_for(0, count, grain < 1 ? 1 : grain, body);
}

// Grain size that gives each CPU task about 32K elements of work.
inline int64_t grain_for(int64_t elements_per_item) {
    const int64_t per_item = elements_per_item > 0 ? elements_per_item : 1;
    return std::max<int64_t>(1, 32768 / per_item);
}

// Calls launch(void *stream) on `device`'s current stream; launch returns a CUDA error code.
template <typename Launch> void cuda_launch(const char *op, const at::Device &device, const Launch &launch) {
#ifdef MY_OPS_WITH_CUDA
    c10::cuda::CUDAGuard guard(device);
    void *stream = c10::cuda::getCurrentCUDAStream(device.index()).stream();
    const int error = launch(stream);
    if (error == MY_OPS_CUDA_NO_KERNEL_IMAGE) {
        char name[256] = "unknown GPU";
        int major = 0, minor = 0;
        my_ops_cuda_device_info(device.index(), name, sizeof name, &major, &minor);
        TORCH_CHECK(false, "my_ops.", op, ": my_ops ", MY_OPS_VERSION, " has no kernels for ", name,
                    " (sm_", major, minor, ", compute capability ", major, ".", minor,
                    "): it was built for TORCH_CUDA_ARCH_LIST=", MY_OPS_ARCH_LIST,
                    ". Build my_ops for this GPU with TORCH_CUDA_ARCH_LIST=\"", major, ".", minor,
                    "\" pip install --no-build-isolation my_ops (see the README), or use a GPU "
                    "the wheel covers.");
    }
    TORCH_CHECK(error == 0, "my_ops.", op, ": CUDA kernel failed: ", my_ops_cuda_error_string(error));
#else
    (void)launch;
    TORCH_CHECK(false, "my_ops.", op, ": got a tensor on ", device,
                " but this build of my_ops has no CUDA kernels");
#endif
}

}  // namespace my_ops
