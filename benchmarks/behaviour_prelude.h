// Device functions HIP has and HIP-CPU lacks, for benchmarks/behaviour.py: force-included (`-include`) before every
// `.cu` file of every variant alike (converted, patched, hand port), so that a program is not lost to the emulator
// for a one-line intrinsic. Each gives the value HIP's gives (to the last bit where the name says `_rn`, as far as
// the host's float arithmetic does); none of them touches lanes, masks or wavefront widths, which are what the
// benchmark measures. What the emulator lacks beyond these (cooperative groups, bf16, the `*_sync` forms...) stays
// a build failure, reported as an emulator limit.
#pragma once
#include <hip/hip_runtime.h>

#include <math.h>  // HIP's device math is global (`signbit`, `sqrtf`...), as C's header makes it

#include <cmath>
#include <cstdint>

inline float __fdividef(float x, float y) noexcept { return x / y; }
inline float __expf(float x) noexcept { return std::exp(x); }
inline float __frsqrt_rn(float x) noexcept { return 1.0f / std::sqrt(x); }
inline int __float2int_rn(float x) noexcept { return static_cast<int>(std::nearbyint(x)); }

inline float rsqrtf(float x) noexcept { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) noexcept { return 1.0 / std::sqrt(x); }

// HIP's integer and floating `max`/`min` of device code (the host's are `std::`).
#define HIPPORT_BEHAVIOUR_MINMAX(T)                                  \
    inline T max(T a, T b) noexcept { return a < b ? b : a; }        \
    inline T min(T a, T b) noexcept { return b < a ? b : a; }
HIPPORT_BEHAVIOUR_MINMAX(int)
HIPPORT_BEHAVIOUR_MINMAX(unsigned int)
HIPPORT_BEHAVIOUR_MINMAX(long long)
HIPPORT_BEHAVIOUR_MINMAX(unsigned long long)
HIPPORT_BEHAVIOUR_MINMAX(float)
HIPPORT_BEHAVIOUR_MINMAX(double)
#undef HIPPORT_BEHAVIOUR_MINMAX

inline unsigned int __brev(unsigned int x) noexcept {
    unsigned int r = 0;
    for (int i = 0; i < 32; ++i, x >>= 1) r = (r << 1) | (x & 1u);
    return r;
}

inline unsigned long long __brevll(unsigned long long x) noexcept {
    unsigned long long r = 0;
    for (int i = 0; i < 64; ++i, x >>= 1) r = (r << 1) | (x & 1ull);
    return r;
}

// HIP's `__syncwarp` waits for the lanes of the wavefront (a wave barrier on AMD GPUs). On HIP-CPU the lanes of a
// wavefront meet at a warp operation: a ballot whose value is dropped is that meeting, and no more.
#if !defined(__syncwarp)
inline void __syncwarp(unsigned long long = 0) noexcept { (void)__ballot(1); }
#endif

// `hipDeviceGetAttribute` for the attributes the programs ask for, from HIP-CPU's `hipGetDeviceProperties` (whose
// `warpSize` is the width the program is built for: 64, or 32 with -DHIP_CPU_WAVEFRONT_SIZE=32).
enum hipDeviceAttribute_t {
    hipDeviceAttributeWarpSize,
    hipDeviceAttributeMultiprocessorCount,
    hipDeviceAttributeMaxThreadsPerBlock,
    hipDeviceAttributeMaxThreadsPerMultiProcessor,
    hipDeviceAttributeMaxSharedMemoryPerBlock,
};

inline hipError_t hipDeviceGetAttribute(int* value, hipDeviceAttribute_t attribute, int device) {
    hipDeviceProp_t p;
    hipError_t status = hipGetDeviceProperties(&p, device);
    if (status != hipSuccess) return status;
    switch (attribute) {
        case hipDeviceAttributeWarpSize: *value = p.warpSize; break;
        case hipDeviceAttributeMultiprocessorCount: *value = p.multiProcessorCount; break;
        case hipDeviceAttributeMaxThreadsPerBlock: *value = p.maxThreadsPerBlock; break;
        case hipDeviceAttributeMaxThreadsPerMultiProcessor: *value = p.maxThreadsPerMultiProcessor; break;
        case hipDeviceAttributeMaxSharedMemoryPerBlock: *value = static_cast<int>(p.sharedMemPerBlock); break;
    }
    return hipSuccess;
}

// A lane's number in its wavefront: HIP-CPU's wavefronts are runs of `warpSize` consecutive linear thread ids.
inline unsigned int __lane_id() noexcept {
    return (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) % warpSize;
}

// HIP's atomic add that may skip the safe path on some GPUs: on the CPU, the atomic add.
template <typename T>
inline T unsafeAtomicAdd(T* address, T value) noexcept { return atomicAdd(address, value); }

// Cache and attribute requests: hints on a GPU, nothing to do on the CPU.
enum hipFuncCache_t { hipFuncCachePreferNone, hipFuncCachePreferShared, hipFuncCachePreferL1, hipFuncCachePreferEqual };
inline hipError_t hipFuncSetCacheConfig(const void*, hipFuncCache_t) noexcept { return hipSuccess; }
enum hipFuncAttribute { hipFuncAttributeMaxDynamicSharedMemorySize = 8, hipFuncAttributePreferredSharedMemoryCarveout };
inline hipError_t hipFuncSetAttribute(const void*, hipFuncAttribute, int) noexcept { return hipSuccess; }

// HIP-CPU's vector components (`v.x` of a `float4`) are accessor objects, which its shuffle templates do not take;
// HIP's are plain values. The shuffles of such a component, as of its value.
#define HIPPORT_BEHAVIOUR_SHFL(NAME, LANE)                                                                         \
    template <typename T, typename V, std::uint32_t I>                                                             \
    inline T NAME(const hip::detail::Scalar_accessor<T, V, I>& v, LANE lane, std::int32_t width = warpSize) {      \
        return NAME(static_cast<T>(v), lane, width);                                                               \
    }
HIPPORT_BEHAVIOUR_SHFL(__shfl, std::int32_t)
HIPPORT_BEHAVIOUR_SHFL(__shfl_up, std::uint32_t)
HIPPORT_BEHAVIOUR_SHFL(__shfl_down, std::uint32_t)
HIPPORT_BEHAVIOUR_SHFL(__shfl_xor, std::int32_t)
#undef HIPPORT_BEHAVIOUR_SHFL

// HIP-CPU declares `__ffsll` and `__popcll` for `std::int64_t`/`std::uint64_t` (`long` on Linux): an
// `unsigned long long` argument, as HIP's take, is ambiguous there.
inline unsigned int __ffsll(unsigned long long x) noexcept { return __builtin_ffsll(static_cast<long long>(x)); }
inline unsigned int __ffsll(long long x) noexcept { return __builtin_ffsll(x); }
inline unsigned int __popcll(unsigned long long x) noexcept { return __builtin_popcountll(x); }
inline unsigned int __clzll(unsigned long long x) noexcept { return x ? __builtin_clzll(x) : 64; }
inline unsigned int __clzll(long long x) noexcept { return __clzll(static_cast<unsigned long long>(x)); }

// HIP's `hip_fp16.h` names `__half` `half` as well; HIP-CPU's does not.
#include <hip/hip_fp16.h>
using half = __half;
