// libFuzzer target for what an MCP server sends (mcp/mcp_client.h) and for mcp.json
// (mcp/mcp_config.h): any input must give results or Errors, never a crash, a hang or unbounded
// memory. The input's lines are the server's messages; a line that starts with '@' is the rest
// wrapped as the result of the request in flight ({"jsonrpc":"2.0","id":<its id>,"result":...}),
// so the fuzzer reaches the result parsing without guessing ids. The whole input is also read as
// an mcp.json. Run: fuzz_mcp -max_len=65536 -timeout=10

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include "mcp/mcp_client.h"
#include "mcp/mcp_config.h"

namespace {

using namespace pagedchat::mcp;

class ScriptedTransport final : public Transport {
 public:
  explicit ScriptedTransport(const std::string& input) {
    size_t start = 0;
    while (start <= input.size()) {
      const size_t nl = input.find('\n', start);
      lines_.push_back(input.substr(start, nl == std::string::npos ? std::string::npos : nl - start));
      if (nl == std::string::npos) break;
      start = nl + 1;
    }
  }
  bool send(const std::string& message) override {
    // The id of the request in flight, for '@' lines.
    const size_t at = message.find("\"id\":");
    if (at != std::string::npos && message.find("\"method\"") != std::string::npos)
      last_id_ = message.substr(at + 5, message.find_first_of(",}", at) - at - 5);
    return !lines_.empty();
  }
  std::optional<std::string> receive(Clock::time_point) override {
    if (lines_.empty()) return std::nullopt;
    std::string line = std::move(lines_.front());
    lines_.pop_front();
    if (!line.empty() && line[0] == '@') line = R"({"jsonrpc":"2.0","id":)" + last_id_ + R"(,"result":)" + line.substr(1) + "}";
    return line;
  }
  bool failed() const override { return lines_.empty(); }
  Error failure() const override { return {ErrorKind::exited, "the script ended"}; }
  void close() override { lines_.clear(); }

 private:
  std::deque<std::string> lines_;
  std::string last_id_ = "0";
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  (void)parse_mcp_config(input);

  Limits limits;
  limits.start_timeout_s = limits.request_timeout_s = limits.call_timeout_s = 0.05;
  Client client("fuzz", std::make_unique<ScriptedTransport>(input), limits);
  if (!client.start().ok()) return 0;
  std::vector<Tool> tools;
  (void)client.list_tools(&tools);
  ToolResult result;
  (void)client.call_tool(tools.empty() ? "t" : tools[0].name, "{}", &result, {});
  (void)client.ping();
  return 0;
}
