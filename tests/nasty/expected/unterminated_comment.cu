#include <hip/hip_runtime.h>
void f() { hipFree(0); }
/* cudaMalloc inside a comment that never ends
