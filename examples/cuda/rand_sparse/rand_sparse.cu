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

#include <cuda_runtime.h>
#include <curand.h>
#include <curand_kernel.h>
#include <cusparse.h>

#include "../common/cuda_check.h"

#define CURAND_CHECK(call)                                                    \
    do {                                                                      \
        curandStatus_t st_ = (call);                                          \
        if (st_ != CURAND_STATUS_SUCCESS) {                                   \
            std::fprintf(stderr, "cuRAND error %d at %s:%d in '%s'\n",        \
                         static_cast<int>(st_), __FILE__, __LINE__, #call);   \
            std::exit(EXIT_FAILURE);                                          \
        }                                                                     \
    } while (0)

// Only the numeric status is printed: a portable build cannot rely on
// cusparseGetErrorString() being available everywhere.
#define CUSPARSE_CHECK(call)                                                  \
    do {                                                                      \
        cusparseStatus_t st_ = (call);                                        \
        if (st_ != CUSPARSE_STATUS_SUCCESS) {                                 \
            std::fprintf(stderr, "cuSPARSE error %d at %s:%d in '%s'\n",      \
                         static_cast<int>(st_), __FILE__, __LINE__, #call);   \
            std::exit(EXIT_FAILURE);                                          \
        }                                                                     \
    } while (0)

// One generator state per row; subsequence = row gives independent streams.
__global__ void init_rng_states(curandState* states, unsigned long long seed,
                                int rows) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows) {
        curand_init(seed, row, 0, &states[row]);
    }
}

// Every row gets exactly k non-zeros: the columns are split into k equal
// segments, one random column is drawn from each, and segments are visited
// starting at a random rotation, so columns are distinct but unsorted.
__global__ void fill_random_csr(curandState* states, int rows, int cols, int k,
                                int* __restrict__ row_ptr,
                                int* __restrict__ col_idx,
                                float* __restrict__ values) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;

    curandState local = states[row];  // work on a register copy
    const int seg = cols / k;
    const int rot = static_cast<int>(curand_uniform(&local) * k) % k;
    const int base = row * k;

    row_ptr[row] = base;
    if (row == rows - 1) {
        row_ptr[rows] = rows * k;
    }
    for (int j = 0; j < k; ++j) {
        const int s = (j + rot) % k;
        // curand_uniform returns (0, 1]; map to [0, seg).
        int off = static_cast<int>((1.0f - curand_uniform(&local)) * seg);
        if (off >= seg) off = seg - 1;
        col_idx[base + j] = s * seg + off;
        values[base + j] = 2.0f * curand_uniform(&local) - 1.0f;
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
    curandState* d_states;
    CUDA_CHECK(cudaMalloc(&d_row_ptr, (rows + 1) * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&d_col_idx, nnz * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&d_perm, nnz * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&d_vals_unsorted, nnz * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_vals, nnz * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_x, cols * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_y, rows * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_states, rows * sizeof(curandState)));

    // ----------------------------------------------- 1. x via cuRAND host API
    curandGenerator_t gen;
    CURAND_CHECK(curandCreateGenerator(&gen, CURAND_RNG_PSEUDO_DEFAULT));
    CURAND_CHECK(curandSetPseudoRandomGeneratorSeed(gen, seed));
    CURAND_CHECK(curandGenerateUniform(gen, d_x, cols));
    CURAND_CHECK(curandGenerateUniform(gen, d_y, rows));  // initial y for beta

    // ------------------------------------- 2. random CSR via curand_kernel.h
    const int block = 128;
    const int grid_rows = (rows + block - 1) / block;
    init_rng_states<<<grid_rows, block>>>(d_states, seed, rows);
    CUDA_CHECK_LAUNCH();
    fill_random_csr<<<grid_rows, block>>>(d_states, rows, cols, k, d_row_ptr,
                                          d_col_idx, d_vals_unsorted);
    CUDA_CHECK_LAUNCH();

    // ---------------------------------------------- 3. sort with cuSPARSE
    cusparseHandle_t handle;
    CUSPARSE_CHECK(cusparseCreate(&handle));

    cusparseMatDescr_t descr;
    CUSPARSE_CHECK(cusparseCreateMatDescr(&descr));
    CUSPARSE_CHECK(cusparseSetMatType(descr, CUSPARSE_MATRIX_TYPE_GENERAL));
    CUSPARSE_CHECK(cusparseSetMatIndexBase(descr, CUSPARSE_INDEX_BASE_ZERO));

    size_t sort_bytes = 0;
    CUSPARSE_CHECK(cusparseXcsrsort_bufferSizeExt(handle, rows, cols, nnz,
                                                  d_row_ptr, d_col_idx,
                                                  &sort_bytes));
    void* d_sort_buf = nullptr;
    CUDA_CHECK(cudaMalloc(&d_sort_buf, sort_bytes));

    const int grid_nnz = (nnz + 255) / 256;
    iota_kernel<<<grid_nnz, 256>>>(d_perm, nnz);  // identity permutation
    CUDA_CHECK_LAUNCH();
    CUSPARSE_CHECK(cusparseXcsrsort(handle, rows, cols, nnz, descr, d_row_ptr,
                                    d_col_idx, d_perm, d_sort_buf));
    gather_kernel<<<grid_nnz, 256>>>(d_vals_unsorted, d_perm, d_vals, nnz);
    CUDA_CHECK_LAUNCH();

    // --------------------------------------------------- 4. generic SpMV
    cusparseSpMatDescr_t matA;
    cusparseDnVecDescr_t vecX, vecY;
    CUSPARSE_CHECK(cusparseCreateCsr(&matA, rows, cols, nnz, d_row_ptr,
                                     d_col_idx, d_vals, CUSPARSE_INDEX_32I,
                                     CUSPARSE_INDEX_32I,
                                     CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
    CUSPARSE_CHECK(cusparseCreateDnVec(&vecX, cols, d_x, CUDA_R_32F));
    CUSPARSE_CHECK(cusparseCreateDnVec(&vecY, rows, d_y, CUDA_R_32F));

    // Copy the inputs back now (y is overwritten by SpMV).
    std::vector<int> h_row_ptr(rows + 1), h_col_idx(nnz);
    std::vector<float> h_vals(nnz), h_x(cols), h_y0(rows), h_y(rows);
    CUDA_CHECK(cudaMemcpy(h_row_ptr.data(), d_row_ptr, (rows + 1) * sizeof(int),
                          cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(h_col_idx.data(), d_col_idx, nnz * sizeof(int),
                          cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(h_vals.data(), d_vals, nnz * sizeof(float),
                          cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(h_x.data(), d_x, cols * sizeof(float),
                          cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(h_y0.data(), d_y, rows * sizeof(float),
                          cudaMemcpyDeviceToHost));

    const float alpha = 1.0f;
    const float beta = 0.5f;
    size_t spmv_bytes = 0;
    CUSPARSE_CHECK(cusparseSpMV_bufferSize(handle,
                                           CUSPARSE_OPERATION_NON_TRANSPOSE,
                                           &alpha, matA, vecX, &beta, vecY,
                                           CUDA_R_32F,
                                           CUSPARSE_SPMV_ALG_DEFAULT,
                                           &spmv_bytes));
    void* d_spmv_buf = nullptr;
    if (spmv_bytes > 0) {
        CUDA_CHECK(cudaMalloc(&d_spmv_buf, spmv_bytes));
    }

    GpuTimer timer;
    timer.start();
    CUSPARSE_CHECK(cusparseSpMV(handle, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                &alpha, matA, vecX, &beta, vecY, CUDA_R_32F,
                                CUSPARSE_SPMV_ALG_DEFAULT, d_spmv_buf));
    timer.stop();
    const float ms = timer.elapsed_ms();

    CUDA_CHECK(cudaMemcpy(h_y.data(), d_y, rows * sizeof(float),
                          cudaMemcpyDeviceToHost));

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
    CUSPARSE_CHECK(cusparseDestroySpMat(matA));
    CUSPARSE_CHECK(cusparseDestroyDnVec(vecX));
    CUSPARSE_CHECK(cusparseDestroyDnVec(vecY));
    CUSPARSE_CHECK(cusparseDestroyMatDescr(descr));
    CUSPARSE_CHECK(cusparseDestroy(handle));
    CURAND_CHECK(curandDestroyGenerator(gen));

    CUDA_CHECK(cudaFree(d_spmv_buf));  // cudaFree(nullptr) is a no-op
    CUDA_CHECK(cudaFree(d_sort_buf));
    CUDA_CHECK(cudaFree(d_states));
    CUDA_CHECK(cudaFree(d_y));
    CUDA_CHECK(cudaFree(d_x));
    CUDA_CHECK(cudaFree(d_vals));
    CUDA_CHECK(cudaFree(d_vals_unsorted));
    CUDA_CHECK(cudaFree(d_perm));
    CUDA_CHECK(cudaFree(d_col_idx));
    CUDA_CHECK(cudaFree(d_row_ptr));

    std::printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
