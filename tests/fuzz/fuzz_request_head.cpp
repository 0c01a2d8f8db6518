// libFuzzer target for the request-head checks (server/http/request_framing.h): any bytes give an
// error or a head whose length is within the limit, never a crash. Run: fuzz_request_head -max_len=2048
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "server/http/request_framing.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const QByteArrayView bytes(reinterpret_cast<const char*>(data), static_cast<qsizetype>(size));
  const qsizetype end = headEnd(bytes);
  if (end > static_cast<qsizetype>(size)) std::abort();
  RequestHead head;
  const std::optional<ApiError> error = checkRequestHead(end < 0 ? bytes : bytes.first(end), 1 << 20, head);
  if (!error && (head.contentLength < 0 || head.contentLength > (1 << 20))) std::abort();
  if (error && (error->status < 400 || error->status > 499)) std::abort();
  return 0;
}
