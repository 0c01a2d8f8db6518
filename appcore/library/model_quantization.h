#pragma once
// Quantizing a model in the app: the CLI's `quantize` (engine/quantize/model_quantizer.h) on a
// thread of its own, with progress and cancel, and, when the user gives a calibration text,
// an importance matrix measured on it first by the same engine (engine/quantize/calibration.h),
// and, when asked, the Hessians of a GPTQ-style pass from the same reading.
// The output is written whole or not at all (a cancel or an error leaves no file), into the
// folder the model library scans, so the new model is listed, runnable, when it ends.

#include <QObject>
#include <QString>

#include <atomic>
#include <memory>

#include "appcore/io/worker_thread.h"

class ModelQuantization : public QObject {
  Q_OBJECT
 public:
  struct Request {
    QString source;           // a GGUF (F16/BF16/F32; a quantized one only with allowRequantize)
    QString output;           // the new file
    QString type;             // a file type's name: "Q4_K_M"
    QString calibrationText;  // optional: a text to measure an importance matrix on
    bool allowRequantize = false;
    int threads = 0;          // 0: all cores
    int calibrationChunks = 16;  // of 512 tokens, at most
    bool gptq = false;        // a GPTQ-style pass (engine/quantize/gptq.h); needs calibrationText
  };

  explicit ModelQuantization(QObject* parent = nullptr);
  ~ModelQuantization() override;  // cancels and waits for the thread

  void start(const Request& request);  // ignored while one runs
  void cancel();
  bool isRunning() const { return m_worker.isRunning(); }

  // <models dir>/<source name without a 16/32-bit marker>-<TYPE>.gguf
  static QString defaultOutput(const QString& source, const QString& type, const QString& modelsDir);
  // The file types offered, best quality first, each "Q4_K_M" with its one-line description.
  static QList<QPair<QString, QString>> fileTypes();
  // A sentence when the source is already quantized (quantizing it again loses more than
  // quantizing its original); empty for a 16/32-bit source.
  static QString requantizeWarning(const QString& source);

 signals:
  // stage: "Measuring importance: chunk 3 of 16" / "Writing blk.4.ffn_down.weight";
  // fraction of the whole job in [0, 1].
  void progress(const QString& stage, double fraction);
  void finished(const QString& path, const QString& summary);
  void failed(const QString& message);
  void cancelled();

 private:
  WorkerThread m_worker{this};
};
