// Copyright (c) 2026 hipport contributors
// SPDX-License-Identifier: MIT
//
// Permission is hereby granted, free of charge, to any person obtaining a copy
// of this file, to deal in it without restriction, subject to the MIT License.
// THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND.
//
// reduction: sum of a large float array using warp shuffles.
//
// Usage: reduction [-n elements] [-g max_blocks]
//
// Pass 1 reduces the input to one partial sum per block and, in the same
// sweep, counts the positive elements with a warp vote. Pass 2 reduces the
// per-block partials with a single block.
//
// NOTE: this code is written the way a lot of CUDA code is: it assumes a
// warp is exactly 32 lanes (the shuffle offsets start at 16, lane/warp ids
// come from & 31 and / 32, and vote masks are 32-bit).

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <hip/hip_runtime.h>

#include "../common/cuda_check.h"

#define FULL_MASK 0xffffffff

// Sum `v` across the 32 lanes of a warp; lane 0 ends up with the total.
__device__ __forceinline__ float warp_reduce_sum(float v) {
    for (int offset = 16; offset > 0; offset /= 2) {
        v += __shfl_down(v, offset);
    }
    return v;
}

// Block-wide sum. BLOCK must be a multiple of 32 and at most 1024, so there
// are at most 32 warps and their partials fit in one warp for the final step.
template <int BLOCK>
__device__ float block_reduce_sum(float v) {
    static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "bad block size");
    __shared__ float partial[32];

    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x / 32;

    v = warp_reduce_sum(v);
    if (lane == 0) {
        partial[warp] = v;
    }
    __syncthreads();

    // The first warp reduces the per-warp partials.
    v = (threadIdx.x < BLOCK / 32) ? partial[lane] : 0.0f;
    if (warp == 0) {
        v = warp_reduce_sum(v);
    }
    return v;
}

// Pass 1: grid-stride accumulation, block reduction, one output per block.
// If `positive_count` is non-null, also count elements > 0 using
// __ballot_sync + __popc (one atomic per warp per iteration instead of one
// per element).
template <int BLOCK>
__global__ void block_sum_kernel(const float* __restrict__ in,
                                 float* __restrict__ block_sums,
                                 unsigned int* positive_count, int n) {
    const int lane = threadIdx.x & 31;
    float sum = 0.0f;
    unsigned int positives = 0;

    // `base` is uniform across the block so every lane of every warp runs the
    // same number of iterations - required for the full-mask vote below.
    for (int base = blockIdx.x * BLOCK; base < n; base += gridDim.x * BLOCK) {
        const int i = base + threadIdx.x;
        const float x = (i < n) ? in[i] : 0.0f;
        sum += x;
        if (positive_count != nullptr) {
            unsigned int ballot = __ballot(x > 0.0f);
            if (lane == 0) {
                positives += __popc(ballot);
            }
        }
    }

    if (positive_count != nullptr && lane == 0 && positives != 0) {
        atomicAdd(positive_count, positives);
    }

    sum = block_reduce_sum<BLOCK>(sum);
    if (threadIdx.x == 0) {
        block_sums[blockIdx.x] = sum;
    }
}

int main(int argc, char** argv) {
    int n = 1 << 25;
    int max_blocks = 1024;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "-n") && i + 1 < argc) {
            n = std::atoi(argv[++i]);
        } else if (!std::strcmp(argv[i], "-g") && i + 1 < argc) {
            max_blocks = std::atoi(argv[++i]);
        } else {
            std::fprintf(stderr, "usage: %s [-n elements] [-g max_blocks]\n",
                         argv[0]);
            return EXIT_FAILURE;
        }
    }
    if (n <= 0 || max_blocks <= 0 || max_blocks > 1024) {
        std::fprintf(stderr, "need n > 0 and 0 < max_blocks <= 1024\n");
        return EXIT_FAILURE;
    }

    constexpr int kBlock = 256;
    const int blocks = std::min((n + kBlock - 1) / kBlock, max_blocks);
    std::printf("reduction: n = %d, %d blocks x %d threads\n", n, blocks,
                kBlock);

    // Values in [-0.5, 0.5) with a known pattern so the CPU check is exact
    // enough in double precision.
    std::vector<float> h_in(n);
    for (int i = 0; i < n; ++i) {
        h_in[i] = static_cast<float>((i * 7919) % 1000) / 1000.0f - 0.5f;
    }

    float* d_in = nullptr;
    float* d_partials = nullptr;
    float* d_total = nullptr;
    unsigned int* d_count = nullptr;
    CUDA_CHECK(hipMalloc(&d_in, n * sizeof(float)));
    CUDA_CHECK(hipMalloc(&d_partials, blocks * sizeof(float)));
    CUDA_CHECK(hipMalloc(&d_total, sizeof(float)));
    CUDA_CHECK(hipMalloc(&d_count, sizeof(unsigned int)));
    CUDA_CHECK(hipMemcpy(d_in, h_in.data(), n * sizeof(float),
                          hipMemcpyHostToDevice));
    CUDA_CHECK(hipMemset(d_count, 0, sizeof(unsigned int)));

    GpuTimer timer;
    timer.start();
    // Pass 1: n elements -> `blocks` partial sums (+ positive count).
    block_sum_kernel<kBlock><<<blocks, kBlock>>>(d_in, d_partials, d_count, n);
    CUDA_CHECK_LAUNCH();
    // Pass 2: `blocks` partials -> 1 total. No counting this time.
    block_sum_kernel<kBlock><<<1, kBlock>>>(d_partials, d_total, nullptr,
                                            blocks);
    CUDA_CHECK_LAUNCH();
    timer.stop();
    const float ms = timer.elapsed_ms();

    float gpu_sum = 0.0f;
    unsigned int gpu_positive = 0;
    CUDA_CHECK(hipMemcpy(&gpu_sum, d_total, sizeof(float),
                          hipMemcpyDeviceToHost));
    CUDA_CHECK(hipMemcpy(&gpu_positive, d_count, sizeof(unsigned int),
                          hipMemcpyDeviceToHost));

    double cpu_sum = 0.0;
    unsigned int cpu_positive = 0;
    for (int i = 0; i < n; ++i) {
        cpu_sum += h_in[i];
        if (h_in[i] > 0.0f) ++cpu_positive;
    }

    const double abs_err = std::fabs(static_cast<double>(gpu_sum) - cpu_sum);
    const double tol = 1e-6 * n + 1e-3;
    std::printf("sum:       gpu %.6f  cpu %.6f  |err| %.3e\n", gpu_sum, cpu_sum,
                abs_err);
    std::printf("positives: gpu %u  cpu %u\n", gpu_positive, cpu_positive);
    std::printf("time:      %.3f ms (%.1f GB/s)\n", ms,
                n * sizeof(float) / (ms * 1e6));

    CUDA_CHECK(hipFree(d_in));
    CUDA_CHECK(hipFree(d_partials));
    CUDA_CHECK(hipFree(d_total));
    CUDA_CHECK(hipFree(d_count));

    const bool ok = abs_err <= tol && gpu_positive == cpu_positive;
    std::printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
