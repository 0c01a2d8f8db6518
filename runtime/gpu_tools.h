#pragma once
// The CUDA tools of the CLI (`check kernels`, `bench kernels`, the copy bandwidth of `bench
// decode`) behind a header free of kernels/: in a build without CUDA each throws Error saying so.

namespace pagedchat {

bool gpu_tools_built();
// Each kernel against its CPU reference; prints a table, returns the exit code.
int run_kernel_check(unsigned seed);
// Decode attention's bandwidth; prints a table, returns the exit code.
int run_kernel_bench();
// Device-to-device copy bandwidth, (read + write) GB/s.
double device_copy_gbs();

}  // namespace pagedchat
