#pragma once
// An API error in OpenAI's shape, {"error": {"message", "type", "param", "code"}}, with its
// HTTP status. Request parsing throws it; ApiServer catches it once and writes it, so a bad
// request never reaches the engine and never disturbs other requests.

#include <QByteArray>
#include <QString>

#include <exception>

struct ApiError : std::exception {
  int status = 400;
  QString message;
  QString type = QStringLiteral("invalid_request_error");
  QString param;  // the offending field ("messages[0].content"); empty: null
  QString code;   // OpenAI's machine-readable code ("model_not_found"); empty: null

  ApiError(int status, QString message, QString type, QString param = {}, QString code = {})
      : status(status), message(std::move(message)), type(std::move(type)), param(std::move(param)), code(std::move(code)) {}

  // 400 invalid_request_error naming the parameter.
  static ApiError badRequest(const QString& message, const QString& param = {}, const QString& code = {}) {
    return ApiError(400, message, QStringLiteral("invalid_request_error"), param, code);
  }

  const char* what() const noexcept override { return "ApiError"; }
  QByteArray toJson() const;
};
