#include <hip/hip_runtime.h>
void a() { hipFree(0); }
void b() { hipFree(0); }
void c() { hipFree(0); }void d() { hipFree(0); }
