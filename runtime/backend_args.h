#pragma once
// The backend options as a user gives them (--backend, --kv-type, --dtype,
// --gpu-memory-fraction on the CLI and pagedchat-server; the app's settings), with their help
// and their checks in one place: the CLI, the server and the app accept and refuse the same
// values with the same sentence (they were parsed and checked twice, and disagreed on what
// --kv-type means for cuda). make_backend (backend_registry.h) builds what these allow.

#include <optional>
#include <string>
#include <vector>

#include "engine/common/error.h"
#include "runtime/backend_registry.h"

namespace pagedchat {

struct BackendArgHelp {
  const char* name;        // the option without its dashes
  const char* value_name;  // what --help shows after it
  const char* help;        // one sentence, its default included
};
// In the order --help lists them.
const std::vector<BackendArgHelp>& backend_arg_help();

// The CPU KV pool's element types, the default first: "f16", "q8_0", "f32".
const std::vector<std::string>& cpu_kv_types();

// The options as given; nullopt: not given.
struct BackendArgValues {
  std::optional<std::string> backend, kv_type, dtype, gpu_memory_fraction;
};

// A value refused; usage(): a bad value (the command line's fault), else the backend cannot
// run here (a build without CUDA, no GPU).
class BackendArgError : public Error {
 public:
  BackendArgError(const std::string& what, bool usage) : Error(what), usage_(usage) {}
  bool usage() const { return usage_; }

 private:
  bool usage_;
};

// Checks the values and fills BackendOptions' name, kv_type, dtype and gpu_memory_fraction
// (threads and batch sizes are the caller's). Throws BackendArgError, the message naming the
// option and what it accepts ("--kv-type must be f32, f16 or q8_0 (got 'q4')").
BackendOptions check_backend_args(const BackendArgValues& given);

}  // namespace pagedchat
