// CRLF file
#include <hip/hip_runtime.h>
__global__ void k(float *p) { p[0] = 0; }
void h() {
  hipStream_t s;
  hipStreamCreate(&s);
}
