// The CLI's CUDA tools, or a clear refusal without CUDA (see gpu_tools.h).
#include "runtime/gpu_tools.h"

#include "engine/common/error.h"

#ifdef PAGEDCHAT_HAVE_CUDA
#include "kernels/tools/kernel_tools.h"
#endif

namespace pagedchat {

#ifdef PAGEDCHAT_HAVE_CUDA
bool gpu_tools_built() { return true; }
int run_kernel_check(unsigned seed) { return kernels::run_kernel_check(seed); }
int run_kernel_bench() { return kernels::run_kernel_bench(); }
double device_copy_gbs() { return kernels::device_copy_gbs(); }
#else
bool gpu_tools_built() { return false; }
int run_kernel_check(unsigned) { fail("built without CUDA"); }
int run_kernel_bench() { fail("built without CUDA"); }
double device_copy_gbs() { fail("built without CUDA"); }
#endif

}  // namespace pagedchat
