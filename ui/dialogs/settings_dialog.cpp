// Builds the settings form and reads it back.
#include "ui/dialogs/settings_dialog.h"

#include "ui/dialogs/sampling_form.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QGroupBox>
#include <QHash>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QThread>
#include <QVBoxLayout>

#include <algorithm>

#include "runtime/backend_args.h"

#include "ui/dialogs/spin_boxes.h"

SettingsDialog::SettingsDialog(const AppSettings& s, bool cudaAvailable, QWidget* parent) : QDialog(parent), m_initial(s) {
  setWindowTitle(tr("Settings"));
  setObjectName(QStringLiteral("settingsDialog"));
  auto* v = new QVBoxLayout(this);

  auto* sampling = new QGroupBox(tr("Sampling (new replies)"), this);
  auto* sf = new QFormLayout(sampling);
  m_sampling = new SamplingForm(s.sampling, sampling);
  sf->addRow(m_sampling);
  m_contextPolicy = new QComboBox(sampling);
  m_contextPolicy->setObjectName(QStringLiteral("defaultContextPolicy"));
  m_contextPolicy->addItem(tr("Drop the oldest turns"), static_cast<int>(ContextPolicy::dropOldest));
  m_contextPolicy->addItem(tr("Stop and ask"), static_cast<int>(ContextPolicy::stopAndAsk));
  m_contextPolicy->setCurrentIndex(m_contextPolicy->findData(static_cast<int>(s.contextPolicy)));
  m_contextPolicy->setToolTip(tr("For chats that keep the app default (each chat can choose its own under its system prompt)"));
  sf->addRow(tr("When a chat's context is full"), m_contextPolicy);
  v->addWidget(sampling);

  auto* engine = new QGroupBox(tr("Engine (applied by reloading the model)"), this);
  auto* ef = new QFormLayout(engine);
  m_blockSize = new QComboBox(engine);
  m_blockSize->setObjectName(QStringLiteral("blockSize"));
  for (int size : {1, 4, 8, 16, 32}) m_blockSize->addItem(tr("%1 tokens").arg(size), size);
  m_blockSize->setCurrentIndex(std::max(0, m_blockSize->findData(s.blockSize)));
  m_kvMemory = settingsIntBox(engine, "kvMemory", 0, 1 << 20, tr("automatic (4 full chats)"));
  m_kvMemory->setValue(s.kvMemoryMiB);
  m_kvMemory->setSuffix(tr(" MiB"));
  m_swapMemory = settingsIntBox(engine, "swapMemory", 0, 1 << 20, tr("off (preempted chats are recomputed)"));
  m_swapMemory->setValue(s.swapMiB);
  m_swapMemory->setSuffix(tr(" MiB"));
  m_swapMemory->setToolTip(tr("Host memory a chat's KV blocks are copied to when the pool runs out, and copied back from "
                              "when there is room again; without it, a preempted chat's tokens are computed again"));
  // The disk tier: on or off, and its cap.
  m_kvDisk = new QCheckBox(tr("Keep chats' KV blocks on disk"), engine);
  m_kvDisk->setObjectName(QStringLiteral("kvDisk"));
  m_kvDisk->setChecked(s.kvDisk);
  m_kvDisk->setToolTip(tr("A chat reopened after a restart, or whose blocks left the pool, reads its history back from disk "
                          "instead of computing it again (in %1)").arg(AppSettings::kvDiskFolder()));
  m_kvDiskSize = settingsIntBox(engine, "kvDiskSize", 0, 1 << 30, tr("a tenth of the free space"));
  m_kvDiskSize->setValue(s.kvDiskMiB);
  m_kvDiskSize->setSuffix(tr(" MiB"));
  m_kvDiskSize->setSingleStep(1024);
  m_kvDiskSize->setToolTip(tr("The most the disk cache may take; past it, the blocks used least recently are removed first"));
  m_kvDiskSize->setEnabled(s.kvDisk);
  connect(m_kvDisk, &QCheckBox::toggled, m_kvDiskSize, &QWidget::setEnabled);
  auto* diskRow = new QWidget(engine);
  auto* diskLayout = new QHBoxLayout(diskRow);
  diskLayout->setContentsMargins(0, 0, 0, 0);
  diskLayout->addWidget(m_kvDisk);
  diskLayout->addWidget(m_kvDiskSize, 1);
  m_maxBatched = settingsIntBox(engine, "maxBatchedTokens", 16, 65536);
  m_maxBatched->setValue(s.maxBatchedTokens);
  m_threads = settingsIntBox(engine, "threads", 0, 1024, tr("all cores (%1)").arg(QThread::idealThreadCount()));
  m_threads->setValue(s.threads);
  m_maxContext = settingsIntBox(engine, "maxContext", 128, 1 << 20);
  m_maxContext->setValue(s.maxContext);
  m_backend = new QComboBox(engine);
  m_backend->setObjectName(QStringLiteral("backend"));
  m_backend->addItem(tr("CPU"), QStringLiteral("cpu"));
  m_backend->addItem(tr("CUDA"), QStringLiteral("cuda"));
  if (!cudaAvailable) {
    // Shown but not selectable, so users learn the choice exists and why they lack it.
    if (auto* model = qobject_cast<QStandardItemModel*>(m_backend->model())) model->item(1)->setEnabled(false);
    m_backend->setItemData(1, tr("Not available: this build has no CUDA backend, or no GPU was found"), Qt::ToolTipRole);
  }
  m_backend->setCurrentIndex(s.backend == QLatin1String("cuda") && cudaAvailable ? 1 : 0);
  m_kvType = new QComboBox(engine);
  m_kvType->setObjectName(QStringLiteral("kvType"));
  // The CPU pool's types, as the CLI and the server accept them (runtime/backend_args.h).
  const QHash<QString, QString> kvLabels = {{QStringLiteral("f16"), tr("16-bit (f16)")},
                                            {QStringLiteral("q8_0"), tr("8-bit (q8_0): about half the memory of f16")},
                                            {QStringLiteral("f32"), tr("32-bit (f32): twice the memory, the reference")}};
  for (const std::string& type : pagedchat::cpu_kv_types()) {
    const QString t = QString::fromStdString(type);
    m_kvType->addItem(kvLabels.value(t, t), t);
  }
  m_kvType->setCurrentIndex(std::max(0, m_kvType->findData(s.kvType)));
  m_kvType->setToolTip(tr("How the CPU stores each token's keys and values: smaller types let more and longer chats "
                          "fit the pool and make long chats faster. CUDA keeps its 16-bit type."));
  m_speculation = new QComboBox(engine);
  m_speculation->setObjectName(QStringLiteral("speculation"));
  m_speculation->addItem(tr("Off"), QStringLiteral("off"));
  m_speculation->addItem(tr("Prompt lookup: drafts what followed the last words before"), QStringLiteral("ngram"));
  m_speculation->addItem(tr("Draft model: a smaller model with the same vocabulary"), QStringLiteral("draft"));
  m_speculation->setCurrentIndex(std::max(0, m_speculation->findData(s.speculation)));
  m_speculation->setToolTip(tr("Speculative decoding: guessed tokens are checked by the model all at once, so replies "
                               "come faster where the guesses are good (quoting, editing or repeating text). The "
                               "reply itself is the same either way."));
  m_draftModel = new QLineEdit(s.draftModel, engine);
  m_draftModel->setObjectName(QStringLiteral("draftModel"));
  m_draftModel->setPlaceholderText(tr("GGUF file of the draft model"));
  auto* browse = new QPushButton(tr("Browse…"), engine);
  connect(browse, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Draft model"), m_draftModel->text(), tr("GGUF models (*.gguf)"));
    if (!path.isEmpty()) m_draftModel->setText(path);
  });
  auto* draftRow = new QWidget(engine);
  auto* draftLayout = new QHBoxLayout(draftRow);
  draftLayout->setContentsMargins(0, 0, 0, 0);
  draftLayout->addWidget(m_draftModel, 1);
  draftLayout->addWidget(browse);
  auto enableDraft = [this, browse] {
    const bool draft = m_speculation->currentData().toString() == QLatin1String("draft");
    m_draftModel->setEnabled(draft);
    browse->setEnabled(draft);
  };
  connect(m_speculation, &QComboBox::currentIndexChanged, this, enableDraft);
  enableDraft();
  ef->addRow(tr("KV block size"), m_blockSize);
  ef->addRow(tr("KV pool memory"), m_kvMemory);
  ef->addRow(tr("Swap space"), m_swapMemory);
  ef->addRow(tr("Disk cache"), diskRow);
  ef->addRow(tr("Max tokens per step"), m_maxBatched);
  ef->addRow(tr("Threads"), m_threads);
  ef->addRow(tr("Context per chat (tokens)"), m_maxContext);
  ef->addRow(tr("Backend"), m_backend);
  ef->addRow(tr("KV element type"), m_kvType);
  ef->addRow(tr("Speculative decoding"), m_speculation);
  ef->addRow(tr("Draft model"), draftRow);
  m_chatTemplate = new QComboBox(engine);
  m_chatTemplate->setObjectName(QStringLiteral("chatTemplate"));
  m_chatTemplate->addItem(tr("The model's own template (plain text for a base model)"), QStringLiteral("model"));
  m_chatTemplate->addItem(tr("Built-in (recognised from the template's markers)"), QStringLiteral("builtin"));
  m_chatTemplate->addItem(tr("Plain text (the model continues what you write)"), QStringLiteral("plain"));
  m_chatTemplate->setCurrentIndex(std::max(0, m_chatTemplate->findData(s.chatTemplate)));
  m_chatTemplate->setToolTip(tr("How chats become the prompt: the Jinja template in the model file, as Hugging Face renders "
                                "it, or PagedChat's built-in format for the family (ChatML, Llama 3, Gemma, Llama 2, Phi-3), "
                                "for a template that refuses a chat (one without a system role); or plain text, no format at "
                                "all, the messages one text that a reply continues: how a base model is used"));
  ef->addRow(tr("Chat format"), m_chatTemplate);
  v->addWidget(engine);

  m_note = new QLabel(this);
  m_note->setObjectName(QStringLiteral("settingsNote"));
  m_note->setWordWrap(true);
  v->addWidget(m_note);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  // An answer schema the engine cannot hold replies to cannot be saved (the form says why).
  auto checkOk = [this, buttons] { buttons->button(QDialogButtonBox::Ok)->setEnabled(m_sampling->problem().isEmpty()); };
  connect(m_sampling, &SamplingForm::edited, this, checkOk);
  checkOk();
  v->addWidget(buttons);

  connect(m_kvDisk, &QCheckBox::toggled, this, &SettingsDialog::updateNote);
  for (QSpinBox* b : {m_kvMemory, m_swapMemory, m_kvDiskSize, m_maxBatched, m_threads, m_maxContext})
    connect(b, &QSpinBox::valueChanged, this, &SettingsDialog::updateNote);
  connect(m_draftModel, &QLineEdit::textChanged, this, &SettingsDialog::updateNote);
  for (QComboBox* b : {m_blockSize, m_backend, m_kvType, m_speculation, m_chatTemplate}) connect(b, &QComboBox::currentIndexChanged, this, &SettingsDialog::updateNote);
  updateNote();
}

AppSettings SettingsDialog::settings() const {
  AppSettings s = m_initial;
  s.sampling = m_sampling->sampling(s.sampling);
  s.contextPolicy = static_cast<ContextPolicy>(m_contextPolicy->currentData().toInt());
  s.blockSize = m_blockSize->currentData().toInt();
  s.kvMemoryMiB = m_kvMemory->value();
  s.swapMiB = m_swapMemory->value();
  s.kvDisk = m_kvDisk->isChecked();
  s.kvDiskMiB = m_kvDiskSize->value();
  s.maxBatchedTokens = m_maxBatched->value();
  s.threads = m_threads->value();
  s.maxContext = m_maxContext->value();
  s.backend = m_backend->currentData().toString();
  s.kvType = m_kvType->currentData().toString();
  s.speculation = m_speculation->currentData().toString();
  s.draftModel = m_draftModel->text().trimmed();
  s.chatTemplate = m_chatTemplate->currentData().toString();
  return s;
}

void SettingsDialog::updateNote() {
  QString note = settings().sameEngine(m_initial)
                     ? QString()
                     : tr("The engine settings changed: OK reloads the model. Replies in progress stop, and each chat's "
                          "next turn reads its messages again.");
  if (m_initial.teachingPreset)
    note = (note + QStringLiteral(" ") +
            tr("The teaching preset is on (Engine toolbar): block size, pool, context and tokens per step take effect when it is off."))
               .trimmed();
  m_note->setText(note);
}
