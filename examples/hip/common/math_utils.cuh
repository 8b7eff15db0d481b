// Copyright (c) 2026 hipport contributors
// SPDX-License-Identifier: MIT
//
// Permission is hereby granted, free of charge, to any person obtaining a copy
// of this file, to deal in it without restriction, subject to the MIT License.
// THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND.
//
// Tiny math and indexing helpers shared by several examples. Everything here
// is header-only: templates marked __host__ __device__ are usable from CPU
// reference code as well as from kernels.

#ifndef HIPPORT_EXAMPLES_MATH_UTILS_CUH
#define HIPPORT_EXAMPLES_MATH_UTILS_CUH

#include <hip/hip_runtime.h>

namespace exutil {

// Number of blocks of size `b` needed to cover `a` items.
template <typename T>
__host__ __device__ constexpr T ceil_div(T a, T b) {
    return (a + b - 1) / b;
}

template <typename T>
__host__ __device__ inline T clamp_value(T v, T lo, T hi) {
    return v < lo ? lo : (v > hi ? hi : v);
}

template <typename T>
__host__ __device__ inline T min_value(T a, T b) {
    return a < b ? a : b;
}

// Horner evaluation of c[0] + c[1] x + ... + c[DEGREE] x^DEGREE. Used by the
// stream pipeline with coefficients living in __constant__ memory on the GPU
// and in an ordinary array on the host.
template <int DEGREE, typename T>
__host__ __device__ inline T horner(const T* c, T x) {
    T acc = c[DEGREE];  // DEGREE is a constant, so this loop fully unrolls
    for (int k = DEGREE - 1; k >= 0; --k) {
        acc = acc * x + c[k];
    }
    return acc;
}

// Flat global index of the calling thread in a 1D launch.
__device__ __forceinline__ int global_thread_id() {
    return static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
}

// Stride of a grid-stride loop in a 1D launch.
__device__ __forceinline__ int grid_stride() {
    return static_cast<int>(gridDim.x * blockDim.x);
}

// Read-only load through the non-coherent texture path (__ldg).
template <typename T>
__device__ __forceinline__ T load_ro(const T* p) {
    return __ldg(p);
}

__device__ __forceinline__ float fast_sigmoid(float x) {
    return 1.0f / (1.0f + __expf(-x));
}

}  // namespace exutil

#endif  // HIPPORT_EXAMPLES_MATH_UTILS_CUH
