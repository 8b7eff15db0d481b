// Copyright (c) 2026 hipport contributors
// SPDX-License-Identifier: MIT
//
// Permission is hereby granted, free of charge, to any person obtaining a copy
// of this file, to deal in it without restriction, subject to the MIT License.
// THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND.
//
// matmul_tiled: C = A * B for row-major single-precision matrices, using
// square shared-memory tiles. A is M x K, B is K x N, C is M x N.
//
// Usage: matmul_tiled [M [N [K]]] [--naive] [--no-check]
//
// Sizes need not be multiples of the tile size; edge tiles are zero-padded
// when they are staged into __shared__ memory.

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include <hip/hip_runtime.h>

#include "../common/cuda_check.h"
#include "../common/math_utils.cuh"

#define TILE 16

// Classic tiled SGEMM. Each block computes one TILE_DIM x TILE_DIM tile of C;
// each thread owns one element of that tile and walks the K dimension one
// tile at a time.
template <int TILE_DIM>
__global__ void matmul_tiled_kernel(const float* __restrict__ A,
                                    const float* __restrict__ B,
                                    float* __restrict__ C,
                                    int M, int N, int K) {
    __shared__ float As[TILE_DIM][TILE_DIM];
    // +1 column of padding keeps the column-wise reads conflict free.
    __shared__ float Bs[TILE_DIM][TILE_DIM + 1];

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int row = blockIdx.y * TILE_DIM + ty;
    const int col = blockIdx.x * TILE_DIM + tx;

    float acc = 0.0f;
    const int num_tiles = (K + TILE_DIM - 1) / TILE_DIM;

    for (int t = 0; t < num_tiles; ++t) {
        const int a_col = t * TILE_DIM + tx;
        const int b_row = t * TILE_DIM + ty;
        As[ty][tx] = (row < M && a_col < K) ? A[row * K + a_col] : 0.0f;
        Bs[ty][tx] = (b_row < K && col < N) ? B[b_row * N + col] : 0.0f;
        __syncthreads();

#pragma unroll
        for (int k = 0; k < TILE_DIM; ++k) {
            acc = fmaf(As[ty][k], Bs[k][tx], acc);
        }
        // Everyone must finish reading before the next tile overwrites it.
        __syncthreads();
    }

    if (row < M && col < N) {
        C[row * N + col] = acc;
    }
}

// Straightforward version for comparison: every operand comes from global
// memory.
__global__ void matmul_naive_kernel(const float* A, const float* B, float* C,
                                    int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
        acc += A[row * K + k] * B[k * N + col];
    }
    C[row * N + col] = acc;
}

static void print_device_info(int device) {
    hipDeviceProp_t prop;
    CUDA_CHECK(hipGetDeviceProperties(&prop, device));
    std::printf("Device %d: \"%s\"\n", device, prop.name);
    std::printf("  compute capability      : %d.%d\n", prop.major, prop.minor);
    std::printf("  multiprocessors         : %d\n", prop.multiProcessorCount);
    std::printf("  global memory           : %.1f MiB\n",
                static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0));
    std::printf("  shared memory per block : %zu bytes\n",
                prop.sharedMemPerBlock);
    std::printf("  registers per block     : %d\n", prop.regsPerBlock);
    std::printf("  warp size               : %d\n", prop.warpSize);
    std::printf("  max threads per block   : %d\n", prop.maxThreadsPerBlock);
    std::printf("  max block dims          : %d x %d x %d\n",
                prop.maxThreadsDim[0], prop.maxThreadsDim[1],
                prop.maxThreadsDim[2]);
    std::printf("  L2 cache                : %d bytes\n", prop.l2CacheSize);
    std::printf("  memory bus width        : %d bits\n", prop.memoryBusWidth);
}

static void matmul_cpu(const std::vector<float>& A, const std::vector<float>& B,
                       std::vector<float>& C, int M, int N, int K) {
    for (int i = 0; i < M; ++i) {
        for (int j = 0; j < N; ++j) {
            double acc = 0.0;
            for (int k = 0; k < K; ++k) {
                acc += static_cast<double>(A[i * K + k]) * B[k * N + j];
            }
            C[i * N + j] = static_cast<float>(acc);
        }
    }
}

int main(int argc, char** argv) {
    int M = 1024, N = 1024, K = 1024;
    bool run_naive = false;
    bool check = true;

    int positional = 0;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--naive") == 0) {
            run_naive = true;
        } else if (std::strcmp(argv[i], "--no-check") == 0) {
            check = false;
        } else if (argv[i][0] != '-' && positional < 3) {
            int v = std::atoi(argv[i]);
            if (positional == 0) M = N = K = v;  // one size => square problem
            if (positional == 1) N = v;
            if (positional == 2) K = v;
            ++positional;
        } else {
            std::fprintf(stderr,
                         "usage: %s [M [N [K]]] [--naive] [--no-check]\n",
                         argv[0]);
            return EXIT_FAILURE;
        }
    }
    if (M <= 0 || N <= 0 || K <= 0) {
        std::fprintf(stderr, "matrix sizes must be positive\n");
        return EXIT_FAILURE;
    }

    int device = 0;
    CUDA_CHECK(hipGetDevice(&device));
    print_device_info(device);
    std::printf("C(%d x %d) = A(%d x %d) * B(%d x %d), tile %d\n", M, N, M, K,
                K, N, TILE);

    const size_t bytes_a = static_cast<size_t>(M) * K * sizeof(float);
    const size_t bytes_b = static_cast<size_t>(K) * N * sizeof(float);
    const size_t bytes_c = static_cast<size_t>(M) * N * sizeof(float);

    std::vector<float> h_A(static_cast<size_t>(M) * K);
    std::vector<float> h_B(static_cast<size_t>(K) * N);
    std::vector<float> h_C(static_cast<size_t>(M) * N);
    std::mt19937 rng(1234);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (auto& x : h_A) x = dist(rng);
    for (auto& x : h_B) x = dist(rng);

    float *d_A, *d_B, *d_C;
    CUDA_CHECK(hipMalloc(&d_A, bytes_a));
    CUDA_CHECK(hipMalloc(&d_B, bytes_b));
    CUDA_CHECK(hipMalloc(&d_C, bytes_c));
    CUDA_CHECK(hipMemcpy(d_A, h_A.data(), bytes_a, hipMemcpyHostToDevice));
    CUDA_CHECK(hipMemcpy(d_B, h_B.data(), bytes_b, hipMemcpyHostToDevice));

    dim3 threads(TILE, TILE);
    dim3 blocks((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);

    hipEvent_t start, stop;
    CUDA_CHECK(hipEventCreate(&start));
    CUDA_CHECK(hipEventCreate(&stop));

    // Warm-up launch so the timed loop does not include module loading.
    matmul_tiled_kernel<TILE><<<blocks, threads>>>(d_A, d_B, d_C, M, N, K);
    CUDA_CHECK(hipGetLastError());
    CUDA_CHECK(hipDeviceSynchronize());

    const int reps = 10;
    CUDA_CHECK(hipEventRecord(start));
    for (int r = 0; r < reps; ++r) {
        matmul_tiled_kernel<TILE><<<blocks, threads>>>(d_A, d_B, d_C,
                                                       M, N, K);
    }
    CUDA_CHECK(hipEventRecord(stop));
    CUDA_CHECK(hipGetLastError());
    CUDA_CHECK(hipEventSynchronize(stop));

    float ms_total = 0.0f;
    CUDA_CHECK(hipEventElapsedTime(&ms_total, start, stop));
    const double ms = ms_total / reps;
    const double flops = 2.0 * M * N * static_cast<double>(K);
    std::printf("tiled:  %8.3f ms  %8.1f GFLOP/s  grid (%u, %u)\n", ms,
                flops / (ms * 1e6), blocks.x, blocks.y);

    // cudaMemcpy waits for the kernels on the legacy default stream.
    CUDA_CHECK(hipMemcpy(h_C.data(), d_C, bytes_c, hipMemcpyDeviceToHost));

    if (run_naive) {
        dim3 nb(16, 16);
        dim3 ng(exutil::ceil_div(N, 16), exutil::ceil_div(M, 16));
        CUDA_CHECK(hipEventRecord(start, 0));
        for (int r = 0; r < reps; ++r) {
            matmul_naive_kernel<<<ng, nb>>>(d_A, d_B, d_C, M, N, K);
        }
        CUDA_CHECK(hipEventRecord(stop, 0));
        CUDA_CHECK(hipGetLastError());
        CUDA_CHECK(hipEventSynchronize(stop));
        float naive_total = 0.0f;
        CUDA_CHECK(hipEventElapsedTime(&naive_total, start, stop));
        const double naive_ms = naive_total / reps;
        std::printf("naive:  %8.3f ms  %8.1f GFLOP/s  (%.2fx slower)\n",
                    naive_ms, flops / (naive_ms * 1e6), naive_ms / ms);
    }

    int status = EXIT_SUCCESS;
    if (check) {
        std::vector<float> ref(static_cast<size_t>(M) * N);
        matmul_cpu(h_A, h_B, ref, M, N, K);
        double max_err = 0.0;
        size_t bad = 0;
        const double tol = 1e-3 * std::sqrt(static_cast<double>(K));
        for (size_t i = 0; i < ref.size(); ++i) {
            double err = std::fabs(static_cast<double>(h_C[i]) - ref[i]);
            if (err > max_err) max_err = err;
            if (err > tol) ++bad;
        }
        std::printf("check: max abs error %.3e (tolerance %.3e), %zu bad\n",
                    max_err, tol, bad);
        if (bad != 0) status = EXIT_FAILURE;
    }

    CUDA_CHECK(hipEventDestroy(start));
    CUDA_CHECK(hipEventDestroy(stop));
    CUDA_CHECK(hipFree(d_A));
    CUDA_CHECK(hipFree(d_B));
    CUDA_CHECK(hipFree(d_C));

    std::printf("%s\n", status == EXIT_SUCCESS ? "PASSED" : "FAILED");
    return status;
}
