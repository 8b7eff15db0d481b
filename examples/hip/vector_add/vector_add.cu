// Copyright (c) 2026 hipport contributors
// SPDX-License-Identifier: MIT
//
// Permission is hereby granted, free of charge, to any person obtaining a copy
// of this file, to deal in it without restriction, subject to the MIT License.
// THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND.
//
// vector_add: the "hello world" of GPU programming, c[i] = a[i] + b[i].
//
// Usage: vector_add [-n elements] [-b block_size] [-i iterations] [-d device]
//
// Two kernels are timed: a plain one-element-per-thread version and a
// grid-stride version with a fused scale (c = alpha * a + b).

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <hip/hip_runtime.h>

#include "../common/cuda_check.h"
#include "../common/math_utils.cuh"

// One thread per element. The bounds check matters because the grid is
// rounded up to a whole number of blocks.
template <typename T>
__global__ void vector_add_kernel(const T* __restrict__ a,
                                  const T* __restrict__ b,
                                  T* __restrict__ c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}

// Grid-stride loop: a fixed-size grid walks the whole array, so the same
// launch configuration works for any n.
template <typename T>
__global__ void axpy_grid_stride(T alpha, const T* __restrict__ a,
                                 const T* __restrict__ b,
                                 T* __restrict__ c, int n) {
    for (int i = exutil::global_thread_id(); i < n;
         i += exutil::grid_stride()) {
        c[i] = alpha * exutil::load_ro(a + i) + exutil::load_ro(b + i);
    }
}

static void usage(const char* prog) {
    std::printf("usage: %s [-n elements] [-b block_size] [-i iterations] "
                "[-d device]\n", prog);
}

int main(int argc, char** argv) {
    int n = 1 << 24;  // 16M floats, 64 MiB per vector
    int block = 256;
    int iterations = 20;
    int device = 0;

    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
            n = std::atoi(argv[++i]);
        } else if (std::strcmp(argv[i], "-b") == 0 && i + 1 < argc) {
            block = std::atoi(argv[++i]);
        } else if (std::strcmp(argv[i], "-i") == 0 && i + 1 < argc) {
            iterations = std::atoi(argv[++i]);
        } else if (std::strcmp(argv[i], "-d") == 0 && i + 1 < argc) {
            device = std::atoi(argv[++i]);
        } else if (std::strcmp(argv[i], "-h") == 0 ||
                   std::strcmp(argv[i], "--help") == 0) {
            usage(argv[0]);
            return EXIT_SUCCESS;
        } else {
            usage(argv[0]);
            return EXIT_FAILURE;
        }
    }
    if (n <= 0 || block <= 0 || block > 1024 || iterations <= 0) {
        std::fprintf(stderr, "invalid arguments\n");
        return EXIT_FAILURE;
    }

    select_device(device);
    std::printf("vector_add: n = %d, block = %d, iterations = %d\n", n, block,
                iterations);

    const size_t bytes = static_cast<size_t>(n) * sizeof(float);
    std::vector<float> h_a(n), h_b(n), h_c(n);
    for (int i = 0; i < n; ++i) {
        h_a[i] = static_cast<float>(i % 1000) * 0.001f;
        h_b[i] = 1.0f - static_cast<float>(i % 777) * 0.002f;
    }

    float* d_a = nullptr;
    float* d_b = nullptr;
    float* d_c = nullptr;
    CUDA_CHECK(hipMalloc(&d_a, bytes));
    CUDA_CHECK(hipMalloc(reinterpret_cast<void**>(&d_b), bytes));
    CUDA_CHECK(hipMalloc((void**)&d_c, bytes));

    // cudaMemcpy is synchronous with respect to the host here, so no explicit
    // cudaDeviceSynchronize() is needed before the first launch.
    CUDA_CHECK(hipMemcpy(d_a, h_a.data(), bytes, hipMemcpyHostToDevice));
    CUDA_CHECK(hipMemcpy(d_b, h_b.data(), bytes, hipMemcpyHostToDevice));
    CUDA_CHECK(hipMemset(d_c, 0, bytes));

    // --- kernel 1: one element per thread --------------------------------
    const int grid = (n + block - 1) / block;
    GpuTimer timer;

    vector_add_kernel<float><<<grid, block>>>(d_a, d_b, d_c, n);  // warm-up
    CUDA_CHECK_LAUNCH();

    timer.start();
    for (int it = 0; it < iterations; ++it) {
        vector_add_kernel<float>
            <<<grid, block>>>(d_a, d_b, d_c, n);
    }
    timer.stop();
    CUDA_CHECK_LAUNCH();
    const float ms_simple = timer.elapsed_ms() / iterations;

    CUDA_CHECK(hipMemcpy(h_c.data(), d_c, bytes, hipMemcpyDeviceToHost));
    int errors = 0;
    for (int i = 0; i < n; ++i) {
        float expect = h_a[i] + h_b[i];
        if (std::fabs(h_c[i] - expect) > 1e-5f) {
            if (errors < 5) {
                std::fprintf(stderr, "mismatch at %d: got %f, expected %f\n",
                             i, h_c[i], expect);
            }
            ++errors;
        }
    }

    // --- kernel 2: grid-stride with a fixed grid ---------------------------
    int num_sms = 0;
    CUDA_CHECK(hipDeviceGetAttribute(&num_sms, hipDeviceAttributeMultiprocessorCount,
                                      device));
    dim3 stride_block(block);
    dim3 stride_grid(exutil::min_value(num_sms * 8,
                                       exutil::ceil_div(n, block)));
    const float alpha = 2.5f;

    timer.start();
    for (int it = 0; it < iterations; ++it) {
        axpy_grid_stride<float><<<stride_grid, stride_block>>>(
            alpha, d_a, d_b, d_c, n);
    }
    timer.stop();
    CUDA_CHECK_LAUNCH();
    const float ms_stride = timer.elapsed_ms() / iterations;

    CUDA_CHECK(hipMemcpy(h_c.data(), d_c, bytes, hipMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i) {
        float expect = alpha * h_a[i] + h_b[i];
        if (std::fabs(h_c[i] - expect) > 1e-4f) {
            if (errors < 5) {
                std::fprintf(stderr, "axpy mismatch at %d: got %f, expected %f\n",
                             i, h_c[i], expect);
            }
            ++errors;
        }
    }

    // Three vectors of `bytes` move per launch (2 reads + 1 write).
    const double gb = 3.0 * static_cast<double>(bytes) / 1e9;
    std::printf("vector_add_kernel: %8.3f ms  %7.1f GB/s  (grid %d x %d)\n",
                ms_simple, gb / (ms_simple / 1e3), grid, block);
    std::printf("axpy_grid_stride:  %8.3f ms  %7.1f GB/s  (grid %u x %u)\n",
                ms_stride, gb / (ms_stride / 1e3), stride_grid.x,
                stride_block.x);

    CUDA_CHECK(hipFree(d_a));
    CUDA_CHECK(hipFree(d_b));
    CUDA_CHECK(hipFree(d_c));

    if (errors != 0) {
        std::printf("FAILED: %d mismatches\n", errors);
        return EXIT_FAILURE;
    }
    std::printf("PASSED\n");
    return EXIT_SUCCESS;
}
