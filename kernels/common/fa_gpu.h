/* fa_gpu.h - the one portability header between CUDA and HIP.
 *
 * Kernel sources are written in CUDA spelling. Built by nvcc they use CUDA as
 * is; built as HIP (clang -x hip, __HIP_PLATFORM_AMD__), the names below are
 * aliased to their HIP equivalents, as ggml's ggml-cuda/vendors/hip.h does.
 * Keep this file small: only names both sides have.
 *
 * FA_WARP_SIZE is the hardware's wave size: 32 on NVIDIA; warpSize on AMD,
 * 64 on CDNA (gfx9) and 32 on RDNA (gfx11, gfx12), so no kernel may assume
 * either. The shuffles below work on aligned groups of up to 32 lanes at
 * both sizes: an xor offset under 32 never leaves the group.
 *
 * The HIP build pre-includes this header (-include, as nvcc pre-includes
 * cuda_runtime.h), so __forceinline__ and friends exist before
 * include/fabench/plugin.h uses them.
 */
#ifndef FA_GPU_H
#define FA_GPU_H

#if defined(__HIP_PLATFORM_AMD__) || defined(__HIPCC__) && !defined(__CUDACC__)
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>
#define FA_GPU_HIP 1
#define FA_WARP_SIZE warpSize
#define cudaError_t hipError_t
#define cudaSuccess hipSuccess
#define cudaErrorNoDevice hipErrorNoDevice
#define cudaStream_t hipStream_t
#define cudaEvent_t hipEvent_t
#define cudaDeviceProp hipDeviceProp_t
#define cudaFuncAttributeMaxDynamicSharedMemorySize hipFuncAttributeMaxDynamicSharedMemorySize
#define cudaMemcpyHostToDevice hipMemcpyHostToDevice
#define cudaMemcpyDeviceToHost hipMemcpyDeviceToHost
#define cudaMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define cudaDeviceGetAttribute hipDeviceGetAttribute
#define cudaDevAttrMultiProcessorCount hipDeviceAttributeMultiprocessorCount
#define cudaDevAttrL2CacheSize hipDeviceAttributeL2CacheSize
#define cudaDevAttrMaxSharedMemoryPerBlockOptin hipDeviceAttributeSharedMemPerBlockOptin
#define cudaDevAttrComputeCapabilityMajor hipDeviceAttributeComputeCapabilityMajor
#define cudaDevAttrComputeCapabilityMinor hipDeviceAttributeComputeCapabilityMinor
#define cudaDeviceAttr hipDeviceAttribute_t
#define cudaDriverGetVersion hipDriverGetVersion
#define cudaEventCreate hipEventCreate
#define cudaEventDestroy hipEventDestroy
#define cudaEventElapsedTime hipEventElapsedTime
#define cudaEventRecord hipEventRecord
#define cudaEventSynchronize hipEventSynchronize
#define cudaFree hipFree
/* HIP takes the kernel as a const void * (no template overload before ROCm
 * 6); variadic, since a kernel template's name has commas in it */
template <typename F>
static inline hipError_t fa_hip_func_set_attribute(F func, hipFuncAttribute attr, int value)
{
	return hipFuncSetAttribute(reinterpret_cast<const void *>(func), attr, value);
}
#define cudaFuncSetAttribute(...) fa_hip_func_set_attribute(__VA_ARGS__)
#define cudaGetDevice hipGetDevice
#define cudaGetDeviceCount hipGetDeviceCount
#define cudaGetDeviceProperties hipGetDeviceProperties
#define cudaGetErrorName hipGetErrorName
#define cudaGetErrorString hipGetErrorString
#define cudaGetLastError hipGetLastError
#define cudaPeekAtLastError hipPeekAtLastError
#define cudaMalloc hipMalloc
#define cudaMemGetInfo hipMemGetInfo
#define cudaMemcpy hipMemcpy
#define cudaMemcpyAsync hipMemcpyAsync
#define cudaMemset hipMemset
#define cudaMemsetAsync hipMemsetAsync
#define cudaRuntimeGetVersion hipRuntimeGetVersion
#define cudaSetDevice hipSetDevice
#define cudaStreamCreate hipStreamCreate
#define cudaStreamDestroy hipStreamDestroy
#define cudaStreamSynchronize hipStreamSynchronize
#define cudaDeviceSynchronize hipDeviceSynchronize
#define __shfl_xor_sync(mask, var, lane) __shfl_xor(var, lane)
#define __shfl_sync(mask, var, lane) __shfl(var, lane)
/* added for the kernels/cuda sources (launchers, device fill, reference) */
#define cudaErrorInvalidValue hipErrorInvalidValue
#define cudaErrorNotSupported hipErrorNotSupported
#define cudaErrorMemoryAllocation hipErrorOutOfMemory
#define cudaStreamCreateWithFlags hipStreamCreateWithFlags
#define cudaStreamDefault hipStreamDefault
#define cudaDevAttrClockRate hipDeviceAttributeClockRate
#define cudaDeviceGetPCIBusId hipDeviceGetPCIBusId
#define cudaGraph_t hipGraph_t
#define cudaGraphExec_t hipGraphExec_t
#define cudaStreamBeginCapture hipStreamBeginCapture
#define cudaStreamEndCapture hipStreamEndCapture
#define cudaStreamCaptureModeThreadLocal hipStreamCaptureModeThreadLocal
#define cudaGraphInstantiate(exec, graph, flags) hipGraphInstantiate(exec, graph, NULL, NULL, 0)
#define cudaGraphLaunch hipGraphLaunch
#define cudaGraphDestroy hipGraphDestroy
#define cudaGraphExecDestroy hipGraphExecDestroy
#else
#include <cuda_fp16.h> /* __half2float, __ushort_as_half: same names in hip_fp16.h */
#include <cuda_runtime.h>
#define FA_GPU_CUDA 1
#define FA_WARP_SIZE 32
#endif

#endif /* FA_GPU_H */
