#pragma once
// Small files for the model library's tests: GGUF headers of a given architecture (enough
// metadata and one tensor for ModelConfig to judge them, not a runnable model), ZIP archives
// (a wheel's layout), and writing them where a test lays out another tool's folders.

#include <zlib.h>

#include <QByteArray>
#include <QCryptographicHash>
#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QString>

#include <optional>
#include <string>
#include <vector>

#include "tests/support/gguf_builder.h"

namespace pagedchat::test {

struct FixtureModel {
  std::string architecture = "llama";
  std::string name = "Tiny";
  std::string tokenizer = "gpt2";
  uint32_t file_type = 3;  // Q4_1 (llama.cpp's numbering); ~0u: none written
  bool chat_template = true;
  std::string chat_template_source = "{{ messages }}";
  uint64_t context = 2048;
  uint32_t split_count = 0;  // > 1: a shard of a split GGUF
  bool long_rope = false;    // a rope_factors_long tensor without its short twin: a file we refuse
  uint32_t experts = 0;      // > 0: expert_count (1 used per token) and one 8 x 4 x experts F32 expert tensor
  std::vector<std::string> tokens = {"a", "b", "c", "d"};  // token_embd has 4 rows
  std::optional<uint32_t> bos_token_id;
};

inline QByteArray fixture_gguf(const FixtureModel& m) {
  GgufBuilder b;
  const std::string a = m.architecture;
  b.add_string("general.architecture", a);
  b.add_string("general.name", m.name);
  if (m.file_type != ~0u) b.add_u32("general.file_type", m.file_type);
  if (m.split_count) b.add_u32("split.count", m.split_count);
  b.add_u32(a + ".block_count", 2);
  b.add_u32(a + ".embedding_length", 8);
  b.add_u32(a + ".attention.head_count", 2);
  b.add_u32(a + ".feed_forward_length", 16);
  b.add_u64(a + ".context_length", m.context);
  b.add_string("tokenizer.ggml.model", m.tokenizer);
  b.add_string_array("tokenizer.ggml.tokens", m.tokens);  // one a row of token_embd
  if (m.bos_token_id) b.add_u32("tokenizer.ggml.bos_token_id", *m.bos_token_id);
  if (m.chat_template) b.add_string("tokenizer.chat_template", m.chat_template_source);
  // token_embd: 8 x 4 in F32 (type 0), and a 8 x 2 F16 (type 1) norm-like tensor: 48 parameters.
  b.add_tensor("token_embd.weight", 0, {8, 4}, std::vector<uint8_t>(8 * 4 * 4, 0));
  if (m.long_rope) b.add_tensor("rope_factors_long.weight", 0, {2}, std::vector<uint8_t>(2 * 4, 0));
  if (m.experts) {
    b.add_u32(a + ".expert_count", m.experts);
    b.add_u32(a + ".expert_used_count", 1);
    b.add_tensor("blk.0.ffn_up_exps.weight", 0, {8, 4, m.experts}, std::vector<uint8_t>(8 * 4 * m.experts * 4, 0));
  }
  b.add_tensor("output_norm.weight", 1, {8, 2}, std::vector<uint8_t>(8 * 2 * 2, 0));
  const std::vector<uint8_t> bytes = b.build();
  return QByteArray(reinterpret_cast<const char*>(bytes.data()), static_cast<qsizetype>(bytes.size()));
}

// Writes bytes at path, making its folders; fails the test on error.
inline void write_fixture(const QString& path, const QByteArray& bytes) {
  QDir().mkpath(QFileInfo(path).absolutePath());
  QFile f(path);
  QVERIFY2(f.open(QIODevice::WriteOnly), qPrintable(path));
  QCOMPARE(f.write(bytes), bytes.size());
}

inline std::string sha256_hex(const QByteArray& b) {
  return QCryptographicHash::hash(b, QCryptographicHash::Sha256).toHex().toStdString();
}

inline QByteArray read_file(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// Every file below dir (hidden ones too), relative to it, sorted: what a download left behind.
inline QStringList files_below(const QString& dir) {
  QStringList out;
  QDirIterator it(dir, QDir::Files | QDir::Hidden, QDirIterator::Subdirectories);
  while (it.hasNext()) out << QDir(dir).relativeFilePath(it.next());
  out.sort();
  return out;
}

struct ZipEntry {
  QString name;
  QByteArray bytes;
  bool deflate = true;
};

// A ZIP archive as wheels are written: local headers, the data, a central directory.
inline QByteArray zip_archive(const std::vector<ZipEntry>& entries) {
  auto u16 = [](QByteArray& b, uint32_t v) { b.append(char(v & 0xff)).append(char((v >> 8) & 0xff)); };
  auto u32 = [&](QByteArray& b, uint32_t v) { u16(b, v & 0xffff); u16(b, v >> 16); };
  QByteArray out, dir;
  for (const ZipEntry& e : entries) {
    QByteArray data = e.bytes;
    if (e.deflate) {
      z_stream z{};
      deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
      data.resize(static_cast<qsizetype>(deflateBound(&z, static_cast<uLong>(e.bytes.size()))));
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(e.bytes.data()));
      z.avail_in = static_cast<uInt>(e.bytes.size());
      z.next_out = reinterpret_cast<Bytef*>(data.data());
      z.avail_out = static_cast<uInt>(data.size());
      deflate(&z, Z_FINISH);
      data.resize(static_cast<qsizetype>(z.total_out));
      deflateEnd(&z);
    }
    const uint32_t crc = crc32(0, reinterpret_cast<const Bytef*>(e.bytes.constData()), static_cast<uInt>(e.bytes.size()));
    const QByteArray name = e.name.toUtf8();
    const uint32_t offset = static_cast<uint32_t>(out.size());
    const uint32_t method = e.deflate ? 8 : 0;
    u32(out, 0x04034b50); u16(out, 20); u16(out, 0); u16(out, method); u32(out, 0);
    u32(out, crc); u32(out, static_cast<uint32_t>(data.size())); u32(out, static_cast<uint32_t>(e.bytes.size()));
    u16(out, static_cast<uint32_t>(name.size())); u16(out, 0);
    out.append(name).append(data);
    u32(dir, 0x02014b50); u16(dir, 20); u16(dir, 20); u16(dir, 0); u16(dir, method); u32(dir, 0);
    u32(dir, crc); u32(dir, static_cast<uint32_t>(data.size())); u32(dir, static_cast<uint32_t>(e.bytes.size()));
    u16(dir, static_cast<uint32_t>(name.size())); u16(dir, 0); u16(dir, 0); u16(dir, 0); u16(dir, 0); u32(dir, 0);
    u32(dir, offset);
    dir.append(name);
  }
  const uint32_t dirOffset = static_cast<uint32_t>(out.size());
  out.append(dir);
  u32(out, 0x06054b50); u16(out, 0); u16(out, 0);
  u16(out, static_cast<uint32_t>(entries.size())); u16(out, static_cast<uint32_t>(entries.size()));
  u32(out, static_cast<uint32_t>(dir.size())); u32(out, dirOffset); u16(out, 0);
  return out;
}

}  // namespace pagedchat::test
