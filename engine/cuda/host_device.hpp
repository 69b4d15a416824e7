// DTRAIN_HOST_DEVICE marks functions that nvcc compiles for both the host and
// the GPU; for the host compiler it is empty. Headers that use it hold math
// shared by the CUDA kernels and host tests that compare it with the CPU code.
#pragma once

#if defined(__CUDACC__)
#define DTRAIN_HOST_DEVICE __host__ __device__
#else
#define DTRAIN_HOST_DEVICE
#endif
