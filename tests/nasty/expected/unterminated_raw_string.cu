#include <hip/hip_runtime.h>
void f() { hipFree(0); }
const char *s = R"xyz(cudaMalloc
void g() { cudaFree(0); }
)xy" 
