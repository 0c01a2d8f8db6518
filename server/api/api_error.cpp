// The OpenAI error body.
#include "server/api/api_error.h"

#include <QJsonDocument>
#include <QJsonObject>

QByteArray ApiError::toJson() const {
  QJsonObject error{{"message", message},
                    {"type", type},
                    {"param", param.isEmpty() ? QJsonValue(QJsonValue::Null) : QJsonValue(param)},
                    {"code", code.isEmpty() ? QJsonValue(QJsonValue::Null) : QJsonValue(code)}};
  return QJsonDocument(QJsonObject{{"error", error}}).toJson(QJsonDocument::Compact);
}
