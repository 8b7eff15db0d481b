#include <cuda_runtime.h>
__global__ void k(int *p) { p[0] = 1; }
int main() { cudaDeviceSynchronize(); } // été (UTF-8)
