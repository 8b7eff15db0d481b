// Copyright (c) 2026 hipport contributors
// SPDX-License-Identifier: MIT
//
// Permission is hereby granted, free of charge, to any person obtaining a copy
// of this file, to deal in it without restriction, subject to the MIT License.
// THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND.
//
// Small error-checking and timing helpers shared by the example programs.
// Every CUDA runtime call in the examples goes through CUDA_CHECK so that a
// failure reports the file/line and the text from cudaGetErrorString().

#ifndef HIPPORT_EXAMPLES_CUDA_CHECK_H
#define HIPPORT_EXAMPLES_CUDA_CHECK_H

#include <cstdio>
#include <cstdlib>

#include <hip/hip_runtime.h>

// Abort with a readable message if a runtime call does not return cudaSuccess.
#define CUDA_CHECK(call)                                                      \
    do {                                                                      \
        hipError_t err_ = (call);                                            \
        if (err_ != hipSuccess) {                                            \
            std::fprintf(stderr, "CUDA error at %s:%d: %s (%s) in '%s'\n",    \
                         __FILE__, __LINE__, hipGetErrorString(err_),        \
                         hipGetErrorName(err_), #call);                      \
            std::exit(EXIT_FAILURE);                                          \
        }                                                                     \
    } while (0)

// Kernel launches do not return an error code, so check cudaGetLastError()
// right after the <<<...>>> launch. Define EXAMPLES_SYNC_LAUNCHES to also
// wait for the kernel, which turns asynchronous faults into errors reported
// at the launch site (handy when debugging, slow otherwise).
#ifdef EXAMPLES_SYNC_LAUNCHES
#define CUDA_CHECK_LAUNCH()                                                   \
    do {                                                                      \
        CUDA_CHECK(hipGetLastError());                                       \
        CUDA_CHECK(hipDeviceSynchronize());                                  \
    } while (0)
#else
#define CUDA_CHECK_LAUNCH()                                                   \
    do {                                                                      \
        CUDA_CHECK(hipGetLastError());                                       \
    } while (0)
#endif

// Non-fatal variant used in cleanup paths: report and keep going.
inline bool cuda_warn(hipError_t err, const char* what) {
    if (err != hipSuccess) {
        std::fprintf(stderr, "warning: %s failed: %s\n", what,
                     hipGetErrorString(err));
        return false;
    }
    return true;
}

// RAII wrapper around a pair of cudaEvent_t used to time work on a stream.
//
//   GpuTimer t;
//   t.start();
//   kernel<<<grid, block>>>(...);
//   t.stop();
//   float ms = t.elapsed_ms();   // waits for the stop event
class GpuTimer {
public:
    GpuTimer() {
        CUDA_CHECK(hipEventCreate(&start_));
        CUDA_CHECK(hipEventCreate(&stop_));
    }
    ~GpuTimer() {
        cuda_warn(hipEventDestroy(start_), "cudaEventDestroy(start)");
        cuda_warn(hipEventDestroy(stop_), "cudaEventDestroy(stop)");
    }
    GpuTimer(const GpuTimer&) = delete;
    GpuTimer& operator=(const GpuTimer&) = delete;

    void start(hipStream_t stream = 0) {
        stream_ = stream;
        CUDA_CHECK(hipEventRecord(start_, stream_));
    }
    void stop() { CUDA_CHECK(hipEventRecord(stop_, stream_)); }

    float elapsed_ms() {
        float ms = 0.0f;
        CUDA_CHECK(hipEventSynchronize(stop_));
        CUDA_CHECK(hipEventElapsedTime(&ms, start_, stop_));
        return ms;
    }

private:
    hipEvent_t start_ = nullptr;
    hipEvent_t stop_ = nullptr;
    hipStream_t stream_ = 0;
};

// Pick a device by index (default 0) and print a one-line summary.
inline int select_device(int requested) {
    int count = 0;
    CUDA_CHECK(hipGetDeviceCount(&count));
    if (count == 0) {
        std::fprintf(stderr, "no CUDA-capable device found\n");
        std::exit(EXIT_FAILURE);
    }
    if (requested < 0 || requested >= count) {
        std::fprintf(stderr, "device %d out of range (have %d), using 0\n",
                     requested, count);
        requested = 0;
    }
    CUDA_CHECK(hipSetDevice(requested));
    hipDeviceProp_t prop;
    CUDA_CHECK(hipGetDeviceProperties(&prop, requested));
    std::printf("Using device %d: %s (sm_%d%d, %d SMs)\n", requested,
                prop.name, prop.major, prop.minor, prop.multiProcessorCount);
    return requested;
}

#endif  // HIPPORT_EXAMPLES_CUDA_CHECK_H
