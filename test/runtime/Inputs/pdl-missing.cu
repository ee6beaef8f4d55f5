// A kernel launched with launchDependent that touches memory before pdlWait().
__global__ void good_kernel(float* x) {
  pdlWait();
  x[threadIdx.x] = 0.0f;
}
__global__ void __launch_bounds__(256, 2) bad_kernel(float* x, int n) {
  if (threadIdx.x < n) x[threadIdx.x] = 1.0f;
  pdlWait();
}
void run(Context* ctx, const char* loc, float* x) {
  launchDependent(ctx, loc, "bad_kernel", bad_kernel, dim3(1), dim3(32), 0, x, 32);
}
