#define cudaFree cudaFree
#define A B
#define B A
#define SELF(x) SELF(SELF(x))
#define CALL(f, ...) f(__VA_ARGS__)
void f() { A; SELF(cudaMalloc); CALL(cudaFree, 0); cudaFree(0); }
