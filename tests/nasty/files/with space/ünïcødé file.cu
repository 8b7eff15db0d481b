#include <cuda.h>
void f() { cuInit(0); }
