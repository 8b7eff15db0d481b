void f() { cudaFree(0); }
/* cudaMalloc inside a comment that never ends
