// Palette-derived colours of the block-pool view.
#include "ui/pool_view/kv_cell_colors.h"

namespace {
QColor mix(const QColor& a, const QColor& b, double t) {
  auto channel = [&](int x, int y) { return static_cast<int>(x + (y - x) * t + 0.5); };
  return QColor(channel(a.red(), b.red()), channel(a.green(), b.green()), channel(a.blue(), b.blue()));
}

// Hues spaced so that neighbouring chat indices differ clearly (degrees).
constexpr std::array<int, KvCellColors::kNumChatColors> kChatHues{210, 30, 120, 0, 270, 180, 320, 60, 240, 90};
}  // namespace

KvCellColors KvCellColors::fromPalette(const QPalette& palette) {
  KvCellColors c;
  const QColor base = palette.color(QPalette::Base);
  const QColor text = palette.color(QPalette::Text);
  c.dark = base.lightnessF() < 0.5;
  c.background = palette.color(QPalette::Window);
  c.free = mix(base, text, 0.08);
  c.inUseUnknown = mix(base, text, 0.45);
  c.cached = mix(base, text, 0.22);
  c.cachedOutline = mix(base, text, 0.55);
  c.text = c.dark ? QColor(Qt::white) : QColor(Qt::black);
  c.swappedHatch = c.dark ? QColor(0, 0, 0, 140) : QColor(255, 255, 255, 170);
  c.selection = palette.color(QPalette::Highlight);
  // Light theme: saturated mid-light chips that black text reads on; dark: deeper chips for
  // white text, still clearly apart from the dark free cells.
  for (int i = 0; i < kNumChatColors; ++i)
    c.chats[i] = (c.dark ? QColor::fromHsv(kChatHues[i], 150, 190) : QColor::fromHsv(kChatHues[i], 120, 235)).toRgb();
  // Okabe and Ito's eight colours, told apart with every common colour-vision deficiency.
  auto set = [&](KvFlashKind k, QColor color) { c.flashes[static_cast<int>(k)] = color; };
  set(KvFlashKind::CopyOnWrite, QColor(0xf0, 0xe4, 0x42));  // yellow
  set(KvFlashKind::Evict, QColor(0xd5, 0x5e, 0x00));        // vermillion
  set(KvFlashKind::Preempt, QColor(0xcc, 0x79, 0xa7));      // reddish purple
  set(KvFlashKind::SwapOut, QColor(0x00, 0x72, 0xb2));      // blue
  set(KvFlashKind::SwapIn, QColor(0x56, 0xb4, 0xe9));       // sky blue
  set(KvFlashKind::CacheHit, QColor(0x00, 0x9e, 0x73));     // bluish green
  set(KvFlashKind::Allocate, QColor(0xe6, 0x9f, 0x00));     // orange
  set(KvFlashKind::Free, c.dark ? QColor(Qt::white) : QColor(Qt::black));
  return c;
}

QColor KvCellColors::chat(int colorIndex) const {
  int i = colorIndex % kNumChatColors;
  return chats[i < 0 ? i + kNumChatColors : i];
}

// Our own cached blocks have no owner; a vLLM cache's do (the prefix each belongs to): between
// the cached grey and that prefix's colour, so that it reads as both.
QColor KvCellColors::cachedTint(int colorIndex) const {
  const QColor tint = chat(colorIndex);
  auto mix = [](int a, int b) { return (a * 40 + b * 60) / 100; };
  return QColor(mix(cached.red(), tint.red()), mix(cached.green(), tint.green()), mix(cached.blue(), tint.blue()));
}

QColor KvCellColors::fill(const KvCell& cell) const {
  switch (cell.kind) {
    case KvCellKind::Free: return free;
    case KvCellKind::Cached: return cell.colorIndex < 0 ? cached : cachedTint(cell.colorIndex);
    case KvCellKind::OnDisk:
      if (cell.faded()) return cell.colorIndex < 0 ? cached : cachedTint(cell.colorIndex);
      return cell.colorIndex >= 0 ? chat(cell.colorIndex) : inUseUnknown;
    case KvCellKind::InUse:
    case KvCellKind::Shared:
    case KvCellKind::Swapped: return cell.colorIndex >= 0 ? chat(cell.colorIndex) : inUseUnknown;
  }
  return free;
}
