#include <hip/hip_runtime.h>
__global__ void k(int *p) { p[0] = 1; }
