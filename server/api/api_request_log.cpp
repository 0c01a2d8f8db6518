// A request log line as text.
#include "server/api/api_request_log.h"

#include <algorithm>

QString ApiLogEntry::line() const {
  QString s = QStringLiteral("%1  %2 %3  %4").arg(at.toString(QStringLiteral("HH:mm:ss")), method, path).arg(status);
  if (status == kClientLeft) s += QStringLiteral(" (client left)");
  if (promptTokens >= 0) s += QStringLiteral("  %1 → %2 tokens").arg(promptTokens).arg(std::max<int64_t>(completionTokens, 0));
  if (stream) s += QStringLiteral("  streamed");
  return s + QStringLiteral("  %1 ms").arg(durationMs);
}
