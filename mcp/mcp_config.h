#pragma once
// The MCP servers a user configured, read from an `mcp.json` in the shape LM Studio, Claude
// Desktop and Cursor read:
//   {"mcpServers": {"files": {"command": "npx", "args": ["-y", "..."], "env": {"K": "V"}},
//                   "web":   {"url": "https://host/mcp", "headers": {"Authorization": "Bearer ..."}}}}
// An entry that is wrong is left out with a sentence saying why; the others load.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "mcp/stdio_transport.h"

namespace pagedchat::mcp {

struct ServerConfig {
  std::string name;
  StdioCommand stdio;                          // a child process, when `url` is empty
  std::string url;                             // Streamable HTTP
  std::map<std::string, std::string> headers;  // sent with every HTTP request
  bool disabled = false;                       // "disabled": true keeps the entry but starts nothing
  bool is_http() const { return !url.empty(); }
};

struct Config {
  std::vector<ServerConfig> servers;  // in the file's order
  std::vector<std::string> problems;  // one sentence for each entry left out, or the whole file
};

Config parse_mcp_config(std::string_view text);

}  // namespace pagedchat::mcp
