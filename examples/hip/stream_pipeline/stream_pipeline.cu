// Copyright (c) 2026 hipport contributors
// SPDX-License-Identifier: MIT
//
// Permission is hereby granted, free of charge, to any person obtaining a copy
// of this file, to deal in it without restriction, subject to the MIT License.
// THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND.
//
// stream_pipeline: overlap host<->device copies with compute using several
// non-blocking streams.
//
// Usage: stream_pipeline [-n elements] [-s streams] [-c chunks]
//
// The input is split into chunks; chunk i goes to stream i % S and runs
// H2D copy -> polynomial kernel -> D2H copy. With pinned host memory
// (cudaMallocHost) the copies of one stream overlap the kernels of another.
// The polynomial coefficients live in __constant__ memory and are uploaded
// with cudaMemcpyToSymbol.

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <hip/hip_runtime.h>

#include "../common/cuda_check.h"
#include "../common/math_utils.cuh"

#define POLY_DEGREE 7
#define MAX_STREAMS 16

// Coefficients c[0..POLY_DEGREE] of the polynomial, broadcast to all threads.
__constant__ float c_coeffs[POLY_DEGREE + 1];

// out[i] = sigmoid(p(in[i])) with p evaluated by Horner's rule. ITERS repeats
// the evaluation to make the kernel heavy enough to overlap with copies.
template <int DEGREE, int ITERS>
__global__ void poly_sigmoid_kernel(const float* __restrict__ in,
                                    float* __restrict__ out, int n) {
    for (int i = exutil::global_thread_id(); i < n;
         i += exutil::grid_stride()) {
        float x = in[i];
        float y = 0.0f;
#pragma unroll 1
        for (int r = 0; r < ITERS; ++r) {
            y += exutil::horner<DEGREE>(c_coeffs, x + 1e-3f * r);
        }
        out[i] = exutil::fast_sigmoid(y / ITERS);
    }
}

static float host_reference(const float* coeffs, float x, int iters) {
    float y = 0.0f;
    for (int r = 0; r < iters; ++r) {
        y += exutil::horner<POLY_DEGREE>(coeffs, x + 1e-3f * r);
    }
    y /= iters;
    return 1.0f / (1.0f + std::exp(-y));
}

int main(int argc, char** argv) {
    int n = 1 << 24;
    int num_streams = 4;
    int num_chunks = 16;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "-n") && i + 1 < argc) {
            n = std::atoi(argv[++i]);
        } else if (!std::strcmp(argv[i], "-s") && i + 1 < argc) {
            num_streams = std::atoi(argv[++i]);
        } else if (!std::strcmp(argv[i], "-c") && i + 1 < argc) {
            num_chunks = std::atoi(argv[++i]);
        } else {
            std::fprintf(stderr, "usage: %s [-n elements] [-s streams] [-c chunks]\n",
                         argv[0]);
            return EXIT_FAILURE;
        }
    }
    if (n <= 0 || num_streams < 1 || num_streams > MAX_STREAMS ||
        num_chunks < num_streams) {
        std::fprintf(stderr, "need n > 0, 1 <= streams <= %d, chunks >= streams\n",
                     MAX_STREAMS);
        return EXIT_FAILURE;
    }
    constexpr int kIters = 32;
    const int chunk = exutil::ceil_div(n, num_chunks);
    std::printf("stream_pipeline: n = %d, %d streams, %d chunks of %d\n", n,
                num_streams, num_chunks, chunk);

    int device = 0;
    CUDA_CHECK(hipGetDevice(&device));
    hipDeviceProp_t prop;
    CUDA_CHECK(hipGetDeviceProperties(&prop, device));
    if (!prop.concurrentKernels) {
        std::printf("note: %s cannot run kernels concurrently; expect less "
                    "overlap\n", prop.name);
    }

    // Polynomial coefficients -> __constant__ memory.
    const float h_coeffs[POLY_DEGREE + 1] = {0.5f,  -1.0f, 0.25f, 0.125f,
                                             -0.0625f, 0.03125f, -0.015625f,
                                             0.0078125f};
    CUDA_CHECK(hipMemcpyToSymbol(HIP_SYMBOL(c_coeffs), h_coeffs, sizeof(h_coeffs)));

    // Pinned host buffers: required for cudaMemcpyAsync to be truly async.
    const size_t bytes = static_cast<size_t>(n) * sizeof(float);
    float* h_in = nullptr;
    float* h_out = nullptr;
    CUDA_CHECK(hipHostMalloc(&h_in, bytes, hipHostMallocDefault));
    CUDA_CHECK(hipHostMalloc((void**)&h_out, bytes, hipHostMallocDefault));
    for (int i = 0; i < n; ++i) {
        h_in[i] = std::sin(0.001f * static_cast<float>(i % 6283));
    }

    float *d_in = nullptr, *d_out = nullptr;
    CUDA_CHECK(hipMalloc(&d_in, bytes));
    CUDA_CHECK(hipMalloc(&d_out, bytes));

    hipStream_t streams[MAX_STREAMS];
    hipEvent_t started[MAX_STREAMS];
    hipEvent_t finished[MAX_STREAMS];
    for (int s = 0; s < num_streams; ++s) {
        CUDA_CHECK(hipStreamCreateWithFlags(&streams[s],
                                             hipStreamNonBlocking));
        CUDA_CHECK(hipEventCreate(&started[s]));
        CUDA_CHECK(hipEventCreate(&finished[s]));
    }

    const int block = 256;

    // ---------------------------------------------- sequential baseline
    GpuTimer seq_timer;
    seq_timer.start(streams[0]);
    CUDA_CHECK(hipMemcpyAsync(d_in, h_in, bytes, hipMemcpyHostToDevice,
                               streams[0]));
    poly_sigmoid_kernel<POLY_DEGREE, kIters>
        <<<(n + block - 1) / block, block, 0, streams[0]>>>(d_in, d_out, n);
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(hipMemcpyAsync(h_out, d_out, bytes, hipMemcpyDeviceToHost,
                               streams[0]));
    seq_timer.stop();
    const float seq_ms = seq_timer.elapsed_ms();

    std::memset(h_out, 0, bytes);

    // ------------------------------------------------- pipelined version
    for (int s = 0; s < num_streams; ++s) {
        CUDA_CHECK(hipEventRecord(started[s], streams[s]));
    }
    for (int c = 0; c < num_chunks; ++c) {
        const int offset = c * chunk;
        if (offset >= n) break;
        const int count = exutil::min_value(chunk, n - offset);
        const size_t chunk_bytes = static_cast<size_t>(count) * sizeof(float);
        hipStream_t stream = streams[c % num_streams];

        CUDA_CHECK(hipMemcpyAsync(d_in + offset, h_in + offset, chunk_bytes,
                                   hipMemcpyHostToDevice, stream));
        dim3 grid((count + block - 1) / block);
        poly_sigmoid_kernel<POLY_DEGREE, kIters><<<grid, block, 0, stream>>>(
            d_in + offset, d_out + offset, count);
        CUDA_CHECK_LAUNCH();
        CUDA_CHECK(hipMemcpyAsync(h_out + offset, d_out + offset, chunk_bytes,
                                   hipMemcpyDeviceToHost, stream));
    }
    for (int s = 0; s < num_streams; ++s) {
        CUDA_CHECK(hipEventRecord(finished[s], streams[s]));
    }

    // Wait per stream and report how long each one was busy.
    float pipe_ms = 0.0f;
    for (int s = 0; s < num_streams; ++s) {
        CUDA_CHECK(hipStreamSynchronize(streams[s]));
        float ms = 0.0f;
        CUDA_CHECK(hipEventElapsedTime(&ms, started[s], finished[s]));
        std::printf("  stream %d: %.3f ms\n", s, ms);
        if (ms > pipe_ms) pipe_ms = ms;
    }
    CUDA_CHECK(hipDeviceSynchronize());

    std::printf("sequential: %.3f ms, pipelined: ~%.3f ms (%.2fx)\n", seq_ms,
                pipe_ms, pipe_ms > 0.0f ? seq_ms / pipe_ms : 0.0f);

    // Spot-check against the host version of the same math.
    int bad = 0;
    for (int i = 0; i < n; i += 997) {
        const float ref = host_reference(h_coeffs, h_in[i], kIters);
        if (std::fabs(ref - h_out[i]) > 1e-4f) {
            if (bad < 5) {
                std::fprintf(stderr, "mismatch at %d: gpu %f, cpu %f\n", i,
                             h_out[i], ref);
            }
            ++bad;
        }
    }

    for (int s = 0; s < num_streams; ++s) {
        CUDA_CHECK(hipEventDestroy(started[s]));
        CUDA_CHECK(hipEventDestroy(finished[s]));
        CUDA_CHECK(hipStreamDestroy(streams[s]));
    }
    CUDA_CHECK(hipFree(d_in));
    CUDA_CHECK(hipFree(d_out));
    // Pinned memory must go back through cudaFreeHost, not free().
    CUDA_CHECK(hipHostFree(h_in));
    CUDA_CHECK(hipHostFree(h_out));

    std::printf("%s\n", bad == 0 ? "PASSED" : "FAILED");
    return bad == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
