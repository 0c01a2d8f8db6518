// Parsing of the CLI's `--name value` options and `--flag` switches.
#include "app/cli/cli_args.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "engine/common/error.h"
#include "engine/kv/kv_manager.h"

namespace pagedchat::cli {

namespace {

// Options naming a file or folder: empty is never what the user meant.
bool is_path_option(const std::string& name) {
  auto ends_with = [&](const char* tail) {
    const size_t n = std::char_traits<char>::length(tail);
    return name.size() >= n && name.compare(name.size() - n, n, tail) == 0;
  };
  return ends_with("model") || ends_with("file") || name == "folder" || name == "out";
}

}  // namespace

Args::Args(const std::vector<std::string>& argv, const std::set<std::string>& options, const std::set<std::string>& flags,
           size_t max_positional) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a.rfind("--", 0) != 0) {
      if (positional_.size() >= max_positional)
        fail("unexpected argument '%s' (options start with --; see --help)", a.c_str());
      positional_.push_back(a);
      continue;
    }
    std::string name = a.substr(2);
    if (flags.count(name)) {
      flags_.insert(name);
    } else if (options.count(name)) {
      if (i + 1 >= argv.size()) fail("option --%s needs a value", name.c_str());
      if (argv[i + 1].empty() && is_path_option(name))
        fail("option --%s is empty (leave it out for the default)", name.c_str());
      values_[name].push_back(argv[++i]);
    } else {
      fail("unknown option --%s", name.c_str());
    }
  }
}

std::optional<std::string> Args::get(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second.back();
}

std::vector<std::string> Args::get_all(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

std::string Args::get_or(const std::string& name, const std::string& fallback) const {
  return get(name).value_or(fallback);
}

int Args::get_int(const std::string& name, int fallback, int lo, int hi) const {
  auto v = get(name);
  if (!v) return fallback;
  char* end = nullptr;
  errno = 0;
  long x = std::strtol(v->c_str(), &end, 10);
  if (errno || end == v->c_str() || *end || x < lo || x > hi)
    fail("--%s must be an integer in [%d, %d], got '%s'", name.c_str(), lo, hi, v->c_str());
  return static_cast<int>(x);
}

double Args::get_double(const std::string& name, double fallback, double lo, double hi) const {
  auto v = get(name);
  if (!v) return fallback;
  char* end = nullptr;
  errno = 0;
  double x = std::strtod(v->c_str(), &end);
  if (errno || end == v->c_str() || *end || !std::isfinite(x) || x < lo || x > hi)
    fail("--%s must be a number in [%g, %g], got '%s'", name.c_str(), lo, hi, v->c_str());
  return x;
}

std::vector<int> Args::get_int_list(const std::string& name, const std::string& fallback, long max) const {
  const std::string s = get_or(name, fallback);
  std::vector<int> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end || v < 1 || v > max) fail("--%s must be a list like 1,2 (got '%s')", name.c_str(), s.c_str());
    out.push_back(static_cast<int>(v));
  }
  if (out.empty()) fail("--%s is empty", name.c_str());
  return out;
}

uint64_t Args::get_u64(const std::string& name, uint64_t fallback) const {
  auto v = get(name);
  if (!v) return fallback;
  char* end = nullptr;
  errno = 0;
  unsigned long long x = std::strtoull(v->c_str(), &end, 10);
  if (errno || end == v->c_str() || *end || (*v)[0] == '-')
    fail("--%s must be a non-negative integer, got '%s'", name.c_str(), v->c_str());
  return x;
}

int Args::get_block_size(int fallback) const {
  const int bs = get_int("block-size", fallback, 1, 32);
  if (!is_valid_block_size(bs)) fail("--block-size must be %s (got %d)", kValidBlockSizes, bs);
  return bs;
}

std::string read_text_file(const std::string& path, const char* option) {
  constexpr size_t kMaxBytes = size_t(64) << 20;
  std::FILE* f = path == "-" ? stdin : std::fopen(path.c_str(), "rb");
  if (!f) fail("%s: cannot open '%s': %s", option, path.c_str(), std::strerror(errno));
  std::string text;
  char buf[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) {
    text.append(buf, n);
    if (text.size() > kMaxBytes) {
      if (f != stdin) std::fclose(f);
      fail("%s: '%s' is larger than 64 MiB", option, path.c_str());
    }
  }
  const bool bad = std::ferror(f) != 0;
  if (f != stdin) std::fclose(f);
  if (bad) fail("%s: cannot read '%s'", option, path.c_str());
  return text;
}

}  // namespace pagedchat::cli
