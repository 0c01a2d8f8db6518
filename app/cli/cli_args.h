#pragma once
// A small argument parser for the CLI: `--name value` options and `--flag` switches, with
// errors that name the option.

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace pagedchat::cli {

class Args {
 public:
  // flags: the options that take no value; max_positional: how many bare arguments the command
  // takes (more are refused rather than ignored). Throws Error on an unknown or incomplete
  // option, and on an empty path (--model '' must not quietly mean the default model).
  Args(const std::vector<std::string>& argv, const std::set<std::string>& options, const std::set<std::string>& flags,
       size_t max_positional = 0);

  bool flag(const std::string& name) const { return flags_.count(name) > 0; }
  std::optional<std::string> get(const std::string& name) const;  // the last one given
  std::vector<std::string> get_all(const std::string& name) const;  // every one, in order
  std::string get_or(const std::string& name, const std::string& fallback) const;
  int get_int(const std::string& name, int fallback, int lo, int hi) const;
  double get_double(const std::string& name, double fallback, double lo, double hi) const;
  uint64_t get_u64(const std::string& name, uint64_t fallback) const;
  // --block-size, refused at once unless the KV pool takes it (not after the model has loaded).
  int get_block_size(int fallback = 16) const;
  // A list like "1,2": each in [1, max]; fallback when the option is not given.
  std::vector<int> get_int_list(const std::string& name, const std::string& fallback, long max) const;
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::map<std::string, std::vector<std::string>> values_;
  std::set<std::string> flags_;
  std::vector<std::string> positional_;
};

// The text of a file an option names ("-": standard input), for values too long for a command
// line; errors name the option. At most 64 MiB.
std::string read_text_file(const std::string& path, const char* option);

}  // namespace pagedchat::cli
