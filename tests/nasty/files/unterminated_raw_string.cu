void f() { cudaFree(0); }
const char *s = R"xyz(cudaMalloc
void g() { cudaFree(0); }
)xy" 
