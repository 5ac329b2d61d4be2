#include <stdio.h>

#include "common.cuh"

namespace my_ops {

int sm_count() {
    static int cached[256] = {0};
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= 256) return 132;
    if (cached[device] == 0) {
        int count = 0;
        if (cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
            count <= 0)
            count = 132;
        cached[device] = count;
    }
    return cached[device];
}

}  // namespace my_ops

extern "C" const char *my_ops_cuda_error_string(int error) {
    return cudaGetErrorString(static_cast<cudaError_t>(error));
}

extern "C" int my_ops_cuda_device_info(int device, char *name, int name_size, int *major,
                                       int *minor) {
    cudaDeviceProp prop;
    const cudaError_t error = cudaGetDeviceProperties(&prop, device);
    if (error != cudaSuccess) return int(error);
    snprintf(name, size_t(name_size), "%s", prop.name);
    *major = prop.major;
    *minor = prop.minor;
    return 0;
}
