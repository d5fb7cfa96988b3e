/* test_kernels.cu - kernels that misbehave on purpose, to prove the harness's
 * handling of device faults and hangs (hidden unless FABENCH_TEST_KERNELS=1).
 *
 *   cuda_test_fault  one thread stores to an address no allocation can have;
 *                    the next synchronization returns cudaErrorIllegalAddress,
 *                    a sticky error: the process must end.
 *   cuda_test_hang   one thread waits for a device flag that nothing ever
 *                    sets: the kernel never ends and the harness must kill
 *                    the process.
 */
#include "cuda_kernels.h"

namespace {

/* Inside the first page, which is never mapped on the device. The address
 * reaches the kernel as an argument, so the compiler cannot see it is bad
 * and turn the store into a trap (a different error). */
constexpr uintptr_t FAULT_ADDRESS = 0x100;

__device__ volatile int hang_flag; /* zero-initialised, never written */

__global__ void fault_kernel(float *bad)
{
	if (threadIdx.x == 0 && blockIdx.x == 0)
		*(volatile float *)bad = 1.0f;
}

__global__ void hang_kernel(void)
{
	while (hang_flag == 0) {
	}
}

} /* namespace */

extern "C" int fa_cuda_test_fault_launch(const struct fa_launch_args *a)
{
	(void)cudaGetLastError(); /* report this launch's error, not an older one */
	fault_kernel<<<1, 32, 0, fa_cuda_stream_of(a)>>>((float *)FAULT_ADDRESS);
	return (int)cudaGetLastError();
}

extern "C" int fa_cuda_test_hang_launch(const struct fa_launch_args *a)
{
	(void)cudaGetLastError();
	hang_kernel<<<1, 1, 0, fa_cuda_stream_of(a)>>>();
	return (int)cudaGetLastError();
}
