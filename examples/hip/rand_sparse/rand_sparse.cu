// Copyright (c) 2026 hipport contributors
// SPDX-License-Identifier: MIT
//
// Permission is hereby granted, free of charge, to any person obtaining a copy
// of this file, to deal in it without restriction, subject to the MIT License.
// THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND.
//
// rand_sparse: build a random sparse matrix on the GPU and multiply it by a
// random dense vector with cuSPARSE.
//
// Usage: rand_sparse [-n rows] [-k nnz_per_row] [-s seed]
//
//  1. cuRAND host API (curandGenerateUniform) fills the dense vector x.
//  2. A kernel with per-thread curandState (curand_kernel.h) picks k column
//     indices and values for each row. Columns come out unsorted.
//  3. cusparseXcsrsort sorts the column indices of every row (the matrix
//     descriptor says "general, zero-based"); the values are permuted to
//     match with a small gather kernel.
//  4. The generic SpMV API computes y = alpha * A * x + beta * y.
//  5. The result is checked against a CPU SpMV.
//
// The legacy cusparseScsrmv() was removed in CUDA 11, so step 4 uses
// cusparseSpMV with a CSR descriptor instead.

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <hip/hip_runtime.h>
#include <hiprand/hiprand.h>
#include <hiprand/hiprand_kernel.h>
#include <hipsparse/hipsparse.h>

#include "../common/cuda_check.h"

#define CURAND_CHECK(call)                                                    \
    do {                                                                      \
        hiprandStatus_t st_ = (call);                                          \
        if (st_ != HIPRAND_STATUS_SUCCESS) {                                   \
            std::fprintf(stderr, "cuRAND error %d at %s:%d in '%s'\n",        \
                         static_cast<int>(st_), __FILE__, __LINE__, #call);   \
            std::exit(EXIT_FAILURE);                                          \
        }                                                                     \
    } while (0)

// Only the numeric status is printed: a portable build cannot rely on
// cusparseGetErrorString() being available everywhere.
#define CUSPARSE_CHECK(call)                                                  \
    do {                                                                      \
        hipsparseStatus_t st_ = (call);                                        \
        if (st_ != HIPSPARSE_STATUS_SUCCESS) {                                 \
            std::fprintf(stderr, "cuSPARSE error %d at %s:%d in '%s'\n",      \
                         static_cast<int>(st_), __FILE__, __LINE__, #call);   \
            std::exit(EXIT_FAILURE);                                          \
        }                                                                     \
    } while (0)

// One generator state per row; subsequence = row gives independent streams.
__global__ void init_rng_states(hiprandState* states, unsigned long long seed,
                                int rows) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows) {
        hiprand_init(seed, row, 0, &states[row]);
    }
}

// Every row gets exactly k non-zeros: the columns are split into k equal
// segments, one random column is drawn from each, and segments are visited
// starting at a random rotation, so columns are distinct but unsorted.
__global__ void fill_random_csr(hiprandState* states, int rows, int cols, int k,
                                int* __restrict__ row_ptr,
                                int* __restrict__ col_idx,
                                float* __restrict__ values) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;

    hiprandState local = states[row];  // work on a register copy
    const int seg = cols / k;
    const int rot = static_cast<int>(hiprand_uniform(&local) * k) % k;
    const int base = row * k;

    row_ptr[row] = base;
    if (row == rows - 1) {
        row_ptr[rows] = rows * k;
    }
    for (int j = 0; j < k; ++j) {
        const int s = (j + rot) % k;
        // curand_uniform returns (0, 1]; map to [0, seg).
        int off = static_cast<int>((1.0f - hiprand_uniform(&local)) * seg);
        if (off >= seg) off = seg - 1;
        col_idx[base + j] = s * seg + off;
        values[base + j] = 2.0f * hiprand_uniform(&local) - 1.0f;
    }
    states[row] = local;  // save so a later launch continues the sequence
}

__global__ void iota_kernel(int* p, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = i;
}

__global__ void gather_kernel(const float* __restrict__ src,
                              const int* __restrict__ perm,
                              float* __restrict__ dst, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[perm[i]];
}

int main(int argc, char** argv) {
    int rows = 1 << 18;
    int k = 16;
    unsigned long long seed = 20260101ULL;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "-n") && i + 1 < argc) {
            rows = std::atoi(argv[++i]);
        } else if (!std::strcmp(argv[i], "-k") && i + 1 < argc) {
            k = std::atoi(argv[++i]);
        } else if (!std::strcmp(argv[i], "-s") && i + 1 < argc) {
            seed = std::strtoull(argv[++i], nullptr, 10);
        } else {
            std::fprintf(stderr, "usage: %s [-n rows] [-k nnz_per_row] [-s seed]\n",
                         argv[0]);
            return EXIT_FAILURE;
        }
    }
    const int cols = rows;  // square matrix
    if (rows <= 0 || k <= 0 || k > cols) {
        std::fprintf(stderr, "need rows > 0 and 0 < k <= rows\n");
        return EXIT_FAILURE;
    }
    const int nnz = rows * k;
    std::printf("rand_sparse: %d x %d, %d nnz/row, %d nnz total, seed %llu\n",
                rows, cols, k, nnz, seed);

    // ---------------------------------------------------------------- memory
    int *d_row_ptr, *d_col_idx, *d_perm;
    float *d_vals_unsorted, *d_vals, *d_x, *d_y;
    hiprandState* d_states;
    CUDA_CHECK(hipMalloc(&d_row_ptr, (rows + 1) * sizeof(int)));
    CUDA_CHECK(hipMalloc(&d_col_idx, nnz * sizeof(int)));
    CUDA_CHECK(hipMalloc(&d_perm, nnz * sizeof(int)));
    CUDA_CHECK(hipMalloc(&d_vals_unsorted, nnz * sizeof(float)));
    CUDA_CHECK(hipMalloc(&d_vals, nnz * sizeof(float)));
    CUDA_CHECK(hipMalloc(&d_x, cols * sizeof(float)));
    CUDA_CHECK(hipMalloc(&d_y, rows * sizeof(float)));
    CUDA_CHECK(hipMalloc(&d_states, rows * sizeof(hiprandState)));

    // ----------------------------------------------- 1. x via cuRAND host API
    hiprandGenerator_t gen;
    CURAND_CHECK(hiprandCreateGenerator(&gen, HIPRAND_RNG_PSEUDO_DEFAULT));
    CURAND_CHECK(hiprandSetPseudoRandomGeneratorSeed(gen, seed));
    CURAND_CHECK(hiprandGenerateUniform(gen, d_x, cols));
    CURAND_CHECK(hiprandGenerateUniform(gen, d_y, rows));  // initial y for beta

    // ------------------------------------- 2. random CSR via curand_kernel.h
    const int block = 128;
    const int grid_rows = (rows + block - 1) / block;
    init_rng_states<<<grid_rows, block>>>(d_states, seed, rows);
    CUDA_CHECK_LAUNCH();
    fill_random_csr<<<grid_rows, block>>>(d_states, rows, cols, k, d_row_ptr,
                                          d_col_idx, d_vals_unsorted);
    CUDA_CHECK_LAUNCH();

    // ---------------------------------------------- 3. sort with cuSPARSE
    hipsparseHandle_t handle;
    CUSPARSE_CHECK(hipsparseCreate(&handle));

    hipsparseMatDescr_t descr;
    CUSPARSE_CHECK(hipsparseCreateMatDescr(&descr));
    CUSPARSE_CHECK(hipsparseSetMatType(descr, HIPSPARSE_MATRIX_TYPE_GENERAL));
    CUSPARSE_CHECK(hipsparseSetMatIndexBase(descr, HIPSPARSE_INDEX_BASE_ZERO));

    size_t sort_bytes = 0;
    CUSPARSE_CHECK(hipsparseXcsrsort_bufferSizeExt(handle, rows, cols, nnz,
                                                  d_row_ptr, d_col_idx,
                                                  &sort_bytes));
    void* d_sort_buf = nullptr;
    CUDA_CHECK(hipMalloc(&d_sort_buf, sort_bytes));

    const int grid_nnz = (nnz + 255) / 256;
    iota_kernel<<<grid_nnz, 256>>>(d_perm, nnz);  // identity permutation
    CUDA_CHECK_LAUNCH();
    CUSPARSE_CHECK(hipsparseXcsrsort(handle, rows, cols, nnz, descr, d_row_ptr,
                                    d_col_idx, d_perm, d_sort_buf));
    gather_kernel<<<grid_nnz, 256>>>(d_vals_unsorted, d_perm, d_vals, nnz);
    CUDA_CHECK_LAUNCH();

    // --------------------------------------------------- 4. generic SpMV
    hipsparseSpMatDescr_t matA;
    hipsparseDnVecDescr_t vecX, vecY;
    CUSPARSE_CHECK(hipsparseCreateCsr(&matA, rows, cols, nnz, d_row_ptr,
                                     d_col_idx, d_vals, HIPSPARSE_INDEX_32I,
                                     HIPSPARSE_INDEX_32I,
                                     HIPSPARSE_INDEX_BASE_ZERO, HIP_R_32F));
    CUSPARSE_CHECK(hipsparseCreateDnVec(&vecX, cols, d_x, HIP_R_32F));
    CUSPARSE_CHECK(hipsparseCreateDnVec(&vecY, rows, d_y, HIP_R_32F));

    // Copy the inputs back now (y is overwritten by SpMV).
    std::vector<int> h_row_ptr(rows + 1), h_col_idx(nnz);
    std::vector<float> h_vals(nnz), h_x(cols), h_y0(rows), h_y(rows);
    CUDA_CHECK(hipMemcpy(h_row_ptr.data(), d_row_ptr, (rows + 1) * sizeof(int),
                          hipMemcpyDeviceToHost));
    CUDA_CHECK(hipMemcpy(h_col_idx.data(), d_col_idx, nnz * sizeof(int),
                          hipMemcpyDeviceToHost));
    CUDA_CHECK(hipMemcpy(h_vals.data(), d_vals, nnz * sizeof(float),
                          hipMemcpyDeviceToHost));
    CUDA_CHECK(hipMemcpy(h_x.data(), d_x, cols * sizeof(float),
                          hipMemcpyDeviceToHost));
    CUDA_CHECK(hipMemcpy(h_y0.data(), d_y, rows * sizeof(float),
                          hipMemcpyDeviceToHost));

    const float alpha = 1.0f;
    const float beta = 0.5f;
    size_t spmv_bytes = 0;
    CUSPARSE_CHECK(hipsparseSpMV_bufferSize(handle,
                                           HIPSPARSE_OPERATION_NON_TRANSPOSE,
                                           &alpha, matA, vecX, &beta, vecY,
                                           HIP_R_32F,
                                           HIPSPARSE_SPMV_ALG_DEFAULT,
                                           &spmv_bytes));
    void* d_spmv_buf = nullptr;
    if (spmv_bytes > 0) {
        CUDA_CHECK(hipMalloc(&d_spmv_buf, spmv_bytes));
    }

    GpuTimer timer;
    timer.start();
    CUSPARSE_CHECK(hipsparseSpMV(handle, HIPSPARSE_OPERATION_NON_TRANSPOSE,
                                &alpha, matA, vecX, &beta, vecY, HIP_R_32F,
                                HIPSPARSE_SPMV_ALG_DEFAULT, d_spmv_buf));
    timer.stop();
    const float ms = timer.elapsed_ms();

    CUDA_CHECK(hipMemcpy(h_y.data(), d_y, rows * sizeof(float),
                          hipMemcpyDeviceToHost));

    // ------------------------------------------------------- 5. CPU check
    bool ok = true;
    int unsorted_rows = 0;
    double max_err = 0.0;
    for (int r = 0; r < rows; ++r) {
        double acc = 0.0;
        for (int p = h_row_ptr[r]; p < h_row_ptr[r + 1]; ++p) {
            if (p > h_row_ptr[r] && h_col_idx[p] <= h_col_idx[p - 1]) {
                ++unsorted_rows;
            }
            acc += static_cast<double>(h_vals[p]) * h_x[h_col_idx[p]];
        }
        const double ref = alpha * acc + beta * h_y0[r];
        max_err = std::fmax(max_err, std::fabs(ref - h_y[r]));
    }
    if (unsorted_rows != 0) {
        std::fprintf(stderr, "%d rows are not sorted after csrsort\n",
                     unsorted_rows);
        ok = false;
    }
    if (max_err > 1e-4 * k) {
        ok = false;
    }
    std::printf("SpMV: %.3f ms, max |y - y_ref| = %.3e\n", ms, max_err);

    // --------------------------------------------------------------- cleanup
    CUSPARSE_CHECK(hipsparseDestroySpMat(matA));
    CUSPARSE_CHECK(hipsparseDestroyDnVec(vecX));
    CUSPARSE_CHECK(hipsparseDestroyDnVec(vecY));
    CUSPARSE_CHECK(hipsparseDestroyMatDescr(descr));
    CUSPARSE_CHECK(hipsparseDestroy(handle));
    CURAND_CHECK(hiprandDestroyGenerator(gen));

    CUDA_CHECK(hipFree(d_spmv_buf));  // cudaFree(nullptr) is a no-op
    CUDA_CHECK(hipFree(d_sort_buf));
    CUDA_CHECK(hipFree(d_states));
    CUDA_CHECK(hipFree(d_y));
    CUDA_CHECK(hipFree(d_x));
    CUDA_CHECK(hipFree(d_vals));
    CUDA_CHECK(hipFree(d_vals_unsorted));
    CUDA_CHECK(hipFree(d_perm));
    CUDA_CHECK(hipFree(d_col_idx));
    CUDA_CHECK(hipFree(d_row_ptr));

    std::printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
