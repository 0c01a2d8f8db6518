// mcp.json: nlohmann's ordered_json keeps the servers in the user's order.
#include "mcp/mcp_config.h"

#include <nlohmann/json.hpp>

namespace pagedchat::mcp {
namespace {

using json = nlohmann::ordered_json;

constexpr size_t kMaxServers = 64;

// A map of strings ("env", "headers"), or a sentence saying what is wrong with it.
std::string read_strings(const json& entry, const char* key, std::map<std::string, std::string>* out) {
  const auto it = entry.find(key);
  if (it == entry.end() || it->is_null()) return {};
  if (!it->is_object()) return std::string("'") + key + "' must be an object of strings";
  for (const auto& [k, v] : it->items()) {
    if (!v.is_string()) return std::string("'") + key + "." + k + "' must be a string";
    (*out)[k] = v.get<std::string>();
  }
  return {};
}

}  // namespace

Config parse_mcp_config(std::string_view text) {
  Config config;
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {
    config.problems.push_back(std::string("the file is not JSON: ") + e.what());
    return config;
  }
  const auto servers = root.is_object() ? root.find("mcpServers") : root.end();
  if (!root.is_object() || servers == root.end() || !servers->is_object()) {
    config.problems.push_back("the file has no \"mcpServers\" object");
    return config;
  }
  for (const auto& item : servers->items()) {
    const std::string name = item.key();
    const json& entry = item.value();
    auto problem = [&](const std::string& why) { config.problems.push_back("server '" + name + "': " + why); };
    if (config.servers.size() == kMaxServers) {
      problem("more than " + std::to_string(kMaxServers) + " servers; the rest are left out");
      break;
    }
    if (name.empty() || name.size() > 64) {
      problem("a name must be 1 to 64 characters");
      continue;
    }
    if (!entry.is_object()) {
      problem("must be an object");
      continue;
    }
    ServerConfig s;
    s.name = name;
    s.disabled = entry.value("disabled", false);
    const bool has_command = entry.contains("command"), has_url = entry.contains("url");
    if (has_command == has_url) {
      problem("give either \"command\" (a program to start) or \"url\" (a Streamable HTTP endpoint)");
      continue;
    }
    std::string why;
    if (has_url) {
      if (!entry["url"].is_string()) why = "'url' must be a string";
      else s.url = entry["url"].get<std::string>();
      if (why.empty() && s.url.rfind("http://", 0) != 0 && s.url.rfind("https://", 0) != 0)
        why = "'url' must start with http:// or https://";
      if (why.empty()) why = read_strings(entry, "headers", &s.headers);
    } else {
      if (!entry["command"].is_string() || entry["command"].get<std::string>().empty()) why = "'command' must be a program's name";
      else s.stdio.command = entry["command"].get<std::string>();
      if (why.empty() && entry.contains("args")) {
        if (!entry["args"].is_array()) why = "'args' must be an array of strings";
        else
          for (const json& a : entry["args"]) {
            if (!a.is_string()) {
              why = "'args' must be an array of strings";
              break;
            }
            s.stdio.args.push_back(a.get<std::string>());
          }
      }
      if (why.empty()) why = read_strings(entry, "env", &s.stdio.env);
    }
    if (!why.empty()) {
      problem(why);
      continue;
    }
    config.servers.push_back(std::move(s));
  }
  return config;
}

}  // namespace pagedchat::mcp
