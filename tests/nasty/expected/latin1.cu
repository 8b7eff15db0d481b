// Copyright (c) 2009 François Müller -- résumé of the kernel
#include <hip/hip_runtime.h>
/* µs timings: ± 3 °C */
__global__ void scale(float *p) { p[threadIdx.x] *= 2.0f; }
void run(float *d) {
  hipMalloc(&d, 64); // déjà alloué
  const char *msg = "échec cudaMalloc";
  hipFree(d);
}
