// spill.cu - the source of tests/bmatrix/ptxas-sm90a.txt's spilling kernel: 64 live
// floats under __launch_bounds__(1024, 2) (32 registers a thread) spill.
// Not in any source list; kept to regenerate the fixture.
__global__ void __launch_bounds__(1024, 2) spill_kernel(const float *x, float *y, int n)
{
	float acc[64];
#pragma unroll
	for (int i = 0; i < 64; i++)
		acc[i] = x[threadIdx.x + i * n];
	for (int r = 0; r < 8; r++)
#pragma unroll
		for (int i = 0; i < 64; i++)
			acc[i] = acc[i] * acc[(i + r) & 63] + 1.0f;
	float s = 0;
#pragma unroll
	for (int i = 0; i < 64; i++)
		s += acc[i];
	y[threadIdx.x] = s;
}
