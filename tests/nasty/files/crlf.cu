// CRLF file
__global__ void k(float *p) { p[0] = 0; }
void h() {
  cudaStream_t s;
  cudaStreamCreate(&s);
}
