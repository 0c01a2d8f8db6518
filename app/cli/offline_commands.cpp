// The commands that need the network, in a CLI built without it (PAGEDCHAT_NETWORK=OFF: the GPU
// kit's build, tests/bench/gpu_proof.sh, where libcurl and libzmq may be missing): each says so.
#include "app/cli/commands.h"
#include "engine/common/error.h"

namespace pagedchat::cli {

namespace {
[[noreturn]] void refuse(const char* what) {
  throw Error(std::string(what) + " needs a pagedchat-cli built with PAGEDCHAT_NETWORK=ON (this one was built without "
              "libcurl and libzmq)");
}
}  // namespace

int generate_remote(const Args&, const std::string&, const std::string&) { refuse("generate --endpoint"); }
int cmd_models(const std::vector<std::string>&) { refuse("models"); }

}  // namespace pagedchat::cli
