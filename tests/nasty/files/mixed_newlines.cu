#include <cuda_runtime.h>
void a() { cudaFree(0); }
void b() { cudaFree(0); }
void c() { cudaFree(0); }void d() { cudaFree(0); }
