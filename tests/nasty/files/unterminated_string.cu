void f() { cudaFree(0); }
const char *s = "cudaMalloc in a string with no end
void g() { cudaFree(0); }
