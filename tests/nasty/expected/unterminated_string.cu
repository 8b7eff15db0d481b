#include <hip/hip_runtime.h>
void f() { hipFree(0); }
const char *s = "cudaMalloc in a string with no end
void g() { hipFree(0); }
