#include <hip/hip_runtime.h>
#define cudaFree hipFree
#define A B
#define B A
#define SELF(x) SELF(SELF(x))
#define CALL(f, ...) f(__VA_ARGS__)
void f() { A; SELF(hipMalloc); CALL(hipFree, 0); hipFree(0); }
