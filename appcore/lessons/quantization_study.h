#pragma once
// The quantization lesson's measurement: the user's model rounded to Q3_K_M three ways (plain,
// weighted by an importance matrix, GPTQ-style) and each read against the original on a
// held-out text (engine/quantize/quality_comparison.h), on a thread of its own with progress
// and cancel; the variants' files are written to a folder of the lesson's own and removed when
// the measurement ends. The texts are the licences Debian ships (GPL-3 to calibrate, Apache-2.0
// held out), as `bench quant-quality` reads them.

#include <QObject>
#include <QString>

#include <atomic>
#include <memory>

#include "appcore/io/worker_thread.h"
#include "engine/quantize/quality_comparison.h"

class QuantizationStudy : public QObject {
  Q_OBJECT
 public:
  struct Request {
    QString model;    // the source (a quantized file is widened to F16 first)
    QString workDir;  // emptied of the variants when done
    QString calibrationText = QStringLiteral("/usr/share/common-licenses/GPL-3");
    QString heldOutText = QStringLiteral("/usr/share/common-licenses/Apache-2.0");
    QString type = QStringLiteral("Q3_K_M");
    int calibrationChunks = 4;   // of 512 tokens
    int heldOutTokens = 1024;
    int threads = 0;
  };
  using Result = std::shared_ptr<const pagedchat::quantize::QualityComparison>;
  struct Outcome {
    Result result;  // null when it failed
    QString error;  // why ("cancelled" after cancel())
  };

  explicit QuantizationStudy(QObject* parent = nullptr);
  ~QuantizationStudy() override;  // cancels and waits for the thread

  void start(const Request& request);  // ignored while one runs
  void cancel();
  bool isRunning() const { return m_worker.isRunning(); }

 signals:
  void progress(const QString& stage, double fraction);
  void ended(const QuantizationStudy::Outcome& outcome);

 private:
  WorkerThread m_worker{this};
};
