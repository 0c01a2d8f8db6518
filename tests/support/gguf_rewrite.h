#pragma once
// A copy of a real model file with another chat template, for suites that need a model whose
// template behaves differently (one that refuses system messages). The new template is padded
// with a Jinja comment to keep the file's length change a multiple of its alignment, so the
// tensor data stays aligned with no other byte moved.

#include <QFile>

#include <cstdint>
#include <string>

#include "engine/gguf/gguf_file.h"

namespace pagedchat::test {

inline bool write_with_chat_template(const std::string& from, const QString& to, std::string tmpl) {
  const GgufFile f = GgufFile::open(from);
  const GgufValue* v = f.find("tokenizer.chat_template");
  if (!v) return false;
  const uint64_t alignment = f.opt_uint("general.alignment").value_or(32);
  const size_t old_len = v->str.size();
  // "{#" + spaces + "#}" brings the length to old_len + k * alignment.
  size_t padded = tmpl.size() + 4;
  while ((padded % alignment + alignment - old_len % alignment) % alignment != 0) ++padded;
  tmpl += "{#" + std::string(padded - tmpl.size() - 4, ' ') + "#}";
  const uint8_t* base = f.data();
  const size_t at = static_cast<size_t>(reinterpret_cast<const uint8_t*>(v->str.data()) - base);
  QFile out(to);
  if (!out.open(QIODevice::WriteOnly)) return false;
  const uint64_t n = tmpl.size();
  out.write(reinterpret_cast<const char*>(base), static_cast<qint64>(at - sizeof n));
  out.write(reinterpret_cast<const char*>(&n), sizeof n);
  out.write(tmpl.data(), static_cast<qint64>(n));
  out.write(reinterpret_cast<const char*>(base + at + old_len), static_cast<qint64>(f.file_size() - at - old_len));
  return out.error() == QFile::NoError;
}

}  // namespace pagedchat::test
