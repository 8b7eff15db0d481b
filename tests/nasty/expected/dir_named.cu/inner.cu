#include <hip/hip_runtime.h>
void f() { hipFree(0); }
