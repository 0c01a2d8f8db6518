// `check kernels` and `bench kernels`: the CUDA kernels against their CPU references, and decode
// attention's bandwidth (kernels/kernel_check.cpp, kernels/kernel_bench.cpp). Built into the
// CLI only with PAGEDCHAT_CUDA; elsewhere they say so. They need no Qt and no model.

#include <cstdio>

#include "app/cli/cli_args.h"
#include "app/cli/commands.h"
#include "engine/common/error.h"

#ifdef PAGEDCHAT_HAVE_CUDA
#include "kernels/dequantize.h"
#include "kernels/kernel_tools.h"
#endif

namespace pagedchat::cli {
namespace {

#ifdef PAGEDCHAT_HAVE_CUDA
bool have_device() {
  if (cuda::device_count() > 0) return true;
  std::fprintf(stderr, "pagedchat-cli: no CUDA device found\n");
  return false;
}
#endif

}  // namespace

int cmd_check(const std::vector<std::string>& argv) {
  if (!argv.empty() && argv[0] == "backend") return cmd_check_backend({argv.begin() + 1, argv.end()});
  if (argv.empty() || argv[0] != "kernels") fail("usage: pagedchat-cli check kernels [--seed S] | check backend [options]");
#ifdef PAGEDCHAT_HAVE_CUDA
  Args args({argv.begin() + 1, argv.end()}, {"seed"}, {});
  const unsigned seed = static_cast<unsigned>(args.get_int("seed", 1234, 0, 2000000000));
  if (!have_device()) return 1;
  return kernels::run_kernel_check(seed);
#else
  std::fprintf(stderr, "pagedchat-cli: check kernels: built without CUDA\n");
  return 1;
#endif
}

int cmd_bench_kernels(const std::vector<std::string>& argv) {
  Args args(argv, {}, {});  // no options; an unknown one is an error
#ifdef PAGEDCHAT_HAVE_CUDA
  if (!have_device()) return 1;
  return kernels::run_kernel_bench();
#else
  std::fprintf(stderr, "pagedchat-cli: bench kernels: built without CUDA\n");
  return 1;
#endif
}

}  // namespace pagedchat::cli
