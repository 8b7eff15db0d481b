#include <hip/hip_runtime.h>
void f() { hipInit(0); }
