// Copyright (c) 2026 hipport contributors
// SPDX-License-Identifier: MIT
//
// Permission is hereby granted, free of charge, to any person obtaining a copy
// of this file, to deal in it without restriction, subject to the MIT License.
// THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND.
//
// histogram: 256-bin byte histogram with per-block privatised bins.
//
// Usage: histogram [-n bytes] [-b block] [--global-only]
//
// Each block accumulates into its own copy of the bins in __shared__ memory
// (cheap, low-contention atomics) and merges them into the global histogram
// once at the end. A weighted sum sum(w[i] * data[i]) is accumulated with a
// float atomicAdd per block on the side. The input lives in managed memory
// (cudaMallocManaged) so the host can fill it in place.

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <hip/hip_runtime.h>

#include "../common/cuda_check.h"
#include "../common/math_utils.cuh"

constexpr int NUM_BINS = 256;

// Shared-memory privatised histogram. Reads the input four bytes at a time
// through uchar4 and handles the ragged tail separately.
template <int BLOCK>
__global__ void histogram_shared_kernel(const unsigned char* __restrict__ data,
                                        const float* __restrict__ weights,
                                        int n,
                                        unsigned int* __restrict__ bins,
                                        float* weighted_sum) {
    __shared__ unsigned int s_bins[NUM_BINS];

    for (int b = threadIdx.x; b < NUM_BINS; b += BLOCK) {
        s_bins[b] = 0u;
    }
    __syncthreads();

    const int n4 = n / 4;
    const uchar4* data4 = reinterpret_cast<const uchar4*>(data);
    float local = 0.0f;

    for (int i = exutil::global_thread_id(); i < n4; i += exutil::grid_stride()) {
        uchar4 v = data4[i];
        atomicAdd(&s_bins[v.x], 1u);
        atomicAdd(&s_bins[v.y], 1u);
        atomicAdd(&s_bins[v.z], 1u);
        atomicAdd(&s_bins[v.w], 1u);
        local += weights[4 * i + 0] * v.x + weights[4 * i + 1] * v.y +
                 weights[4 * i + 2] * v.z + weights[4 * i + 3] * v.w;
    }
    // Tail (n % 4 bytes), handled by the first few threads of the grid.
    const int tail = 4 * n4 + exutil::global_thread_id();
    if (tail < n) {
        atomicAdd(&s_bins[data[tail]], 1u);
        local += weights[tail] * data[tail];
    }
    __syncthreads();

    // Merge this block's private bins into the global histogram.
    for (int b = threadIdx.x; b < NUM_BINS; b += BLOCK) {
        const unsigned int count = s_bins[b];
        if (count != 0u) {
            atomicAdd(&bins[b], count);
        }
    }

    // Float atomicAdd on global memory: one per thread with a non-zero share.
    // (The result depends on the order of additions, so compare with a
    // tolerance.)
    if (local != 0.0f) {
        atomicAdd(weighted_sum, local);
    }
}

// Baseline: every element does an atomic on the global bins.
__global__ void histogram_global_kernel(const unsigned char* data, int n,
                                        unsigned int* bins) {
    int stride = blockDim.x * gridDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        atomicAdd(&bins[data[i]], 1u);
    }
}

int main(int argc, char** argv) {
    int n = 64 << 20;  // 64 MiB of bytes
    int block = 256;
    bool global_only = false;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "-n") && i + 1 < argc) {
            n = std::atoi(argv[++i]);
        } else if (!std::strcmp(argv[i], "-b") && i + 1 < argc) {
            block = std::atoi(argv[++i]);
        } else if (!std::strcmp(argv[i], "--global-only")) {
            global_only = true;
        } else {
            std::fprintf(stderr,
                         "usage: %s [-n bytes] [-b 128|256|512] [--global-only]\n",
                         argv[0]);
            return EXIT_FAILURE;
        }
    }
    if (n <= 0 || (block != 128 && block != 256 && block != 512)) {
        std::fprintf(stderr, "n must be > 0 and block one of 128/256/512\n");
        return EXIT_FAILURE;
    }

    int device = 0;
    CUDA_CHECK(hipGetDevice(&device));
    hipDeviceProp_t prop;
    CUDA_CHECK(hipGetDeviceProperties(&prop, device));
    std::printf("histogram: %d bytes on %s, block %d\n", n, prop.name, block);

    // Input bytes in managed memory: written by the host, read by the GPU.
    unsigned char* data = nullptr;
    CUDA_CHECK(hipMallocManaged(&data, n));
    unsigned int seed = 2463534242u;
    for (int i = 0; i < n; ++i) {
        // xorshift32, then fold into a lumpy distribution so bins differ.
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        data[i] = static_cast<unsigned char>((seed & 0xff) ^ ((seed >> 8) & 0x3f));
    }

    std::vector<float> h_weights(n);
    for (int i = 0; i < n; ++i) {
        h_weights[i] = 1.0f / static_cast<float>(1 + (i & 1023));
    }

    float* d_weights = nullptr;
    unsigned int* d_bins = nullptr;
    float* d_wsum = nullptr;
    CUDA_CHECK(hipMalloc(&d_weights, n * sizeof(float)));
    CUDA_CHECK(hipMalloc(&d_bins, NUM_BINS * sizeof(unsigned int)));
    CUDA_CHECK(hipMalloc(&d_wsum, sizeof(float)));
    CUDA_CHECK(hipMemcpy(d_weights, h_weights.data(), n * sizeof(float),
                          hipMemcpyHostToDevice));
    CUDA_CHECK(hipMemset(d_bins, 0, NUM_BINS * sizeof(unsigned int)));
    CUDA_CHECK(hipMemset(d_wsum, 0, sizeof(float)));

    // A few blocks per SM is plenty for a grid-stride histogram.
    const int grid = exutil::clamp_value(
        exutil::ceil_div(n / 4 + 1, block), 1, prop.multiProcessorCount * 4);

    GpuTimer timer;
    timer.start();
    if (global_only) {
        histogram_global_kernel<<<(n + block - 1) / block, block>>>(data, n,
                                                                     d_bins);
    } else {
        switch (block) {
            case 128:
                histogram_shared_kernel<128><<<grid, 128>>>(
                    data, d_weights, n, d_bins, d_wsum);
                break;
            case 256:
                histogram_shared_kernel<256><<<grid, 256>>>(
                    data, d_weights, n, d_bins, d_wsum);
                break;
            default:
                histogram_shared_kernel<512>
                    <<<grid, 512>>>(data, d_weights, n, d_bins, d_wsum);
                break;
        }
    }
    timer.stop();
    CUDA_CHECK_LAUNCH();
    const float ms = timer.elapsed_ms();

    unsigned int h_bins[NUM_BINS];
    float gpu_wsum = 0.0f;
    CUDA_CHECK(hipMemcpy(h_bins, d_bins, sizeof(h_bins),
                          hipMemcpyDeviceToHost));
    CUDA_CHECK(hipMemcpy(&gpu_wsum, d_wsum, sizeof(float),
                          hipMemcpyDeviceToHost));
    // Managed memory: make sure the GPU is done before the host reads `data`.
    CUDA_CHECK(hipDeviceSynchronize());

    unsigned int ref_bins[NUM_BINS] = {0};
    double ref_wsum = 0.0;
    for (int i = 0; i < n; ++i) {
        ++ref_bins[data[i]];
        ref_wsum += static_cast<double>(h_weights[i]) * data[i];
    }

    int bad_bins = 0;
    unsigned long long total = 0;
    for (int b = 0; b < NUM_BINS; ++b) {
        total += h_bins[b];
        if (h_bins[b] != ref_bins[b]) {
            if (bad_bins < 5) {
                std::fprintf(stderr, "bin %d: gpu %u, cpu %u\n", b, h_bins[b],
                             ref_bins[b]);
            }
            ++bad_bins;
        }
    }
    bool ok = bad_bins == 0 && total == static_cast<unsigned long long>(n);
    if (!global_only) {
        const double rel = std::fabs(gpu_wsum - ref_wsum) /
                           (std::fabs(ref_wsum) + 1e-30);
        std::printf("weighted sum: gpu %.6e cpu %.6e (rel err %.2e)\n",
                    gpu_wsum, ref_wsum, rel);
        ok = ok && rel < 1e-3;
    }
    std::printf("bins[0..3] = %u %u %u %u, total %llu\n", h_bins[0], h_bins[1],
                h_bins[2], h_bins[3], total);
    std::printf("time %.3f ms, %.2f GB/s\n", ms, n / (ms * 1e6));

    CUDA_CHECK(hipFree(data));  // managed memory is released with cudaFree too
    CUDA_CHECK(hipFree(d_weights));
    CUDA_CHECK(hipFree(d_bins));
    CUDA_CHECK(hipFree(d_wsum));

    std::printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
