#pragma once
// `pagedchat-cli check kernels` and `pagedchat-cli bench kernels` (built with PAGEDCHAT_CUDA):
// each kernel against its CPU reference, then decode attention's bandwidth. They print a table
// on stdout and return the exit code (0 when every check passes); CUDA failures throw Error.

namespace pagedchat::kernels {

int run_kernel_check(unsigned seed);
int run_kernel_bench();
// Device-to-device copy of 1 GiB, (read + write) bytes per second / 1e9: the bandwidth a
// memory-bound kernel can hope for. Allocates 2 GiB while it runs.
double device_copy_gbs();

}  // namespace pagedchat::kernels
