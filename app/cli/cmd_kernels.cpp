// `check kernels` and `bench kernels`: the CUDA kernels against their CPU references, and decode
// attention's bandwidth (kernels/tools/kernel_check.cpp, kernels/tools/kernel_bench.cpp). Built into the
// CLI only with PAGEDCHAT_CUDA; elsewhere they say so. They need no Qt and no model.

#include <cstdio>

#include "app/cli/cli_args.h"
#include "app/cli/commands.h"
#include "engine/common/error.h"

#include "runtime/backend_registry.h"
#include "runtime/gpu_tools.h"

namespace pagedchat::cli {
namespace {

// Without CUDA the tools say so; with it, a machine without a GPU says that instead.
bool can_run(const char* what) {
  if (!gpu_tools_built()) {
    std::fprintf(stderr, "pagedchat-cli: %s: built without CUDA\n", what);
    return false;
  }
  if (cuda_available()) return true;
  std::fprintf(stderr, "pagedchat-cli: no CUDA device found\n");
  return false;
}

}  // namespace

int cmd_check(const std::vector<std::string>& argv) {
  if (!argv.empty() && argv[0] == "backend") return cmd_check_backend({argv.begin() + 1, argv.end()});
  if (argv.empty() || argv[0] != "kernels") fail("usage: pagedchat-cli check kernels [--seed S] | check backend [options]");
  Args args({argv.begin() + 1, argv.end()}, {"seed"}, {});
  const unsigned seed = static_cast<unsigned>(args.get_int("seed", 1234, 0, 2000000000));
  if (!can_run("check kernels")) return 1;
  return run_kernel_check(seed);
}

int cmd_bench_kernels(const std::vector<std::string>& argv) {
  Args args(argv, {}, {});  // no options; an unknown one is an error
  if (!can_run("bench kernels")) return 1;
  return run_kernel_bench();
}

}  // namespace pagedchat::cli
