#define CUDART_VERSION 11060  // the CUDA level whose version tests pick paths HIP has: before 12.x's launch attributes (PDL) and 11.7's __hmax2 on half2
typedef __hip_bfloat16 nv_bfloat16;  // cuda_bf16.h's other name of __nv_bfloat16 (HIPIFY's tables lack it)
