void f() { cudaFree(0); }
