// Cell fills of the block-pool view: scanline writer and QPainter reference.
#include "ui/pool_view/kv_cell_image.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace {
// Which of the fill colours a cell takes: [0] free, [1] cached, [2] in use by an unknown owner,
// [3..] chat colours, then the cached tints of each (the same choice as KvCellColors::fill).
int groupOf(const KvCell& c) {
  if (c.kind == KvCellKind::Free) return 0;
  if (c.colorIndex < 0) return c.faded() ? 1 : 2;
  const int i = c.colorIndex % KvCellColors::kNumChatColors;
  return 3 + (i < 0 ? i + KvCellColors::kNumChatColors : i) + (c.faded() ? KvCellColors::kNumChatColors : 0);
}

// Copies one line of n pixels into the image. A full-size image (15 MB at 2560x1440) is far
// larger than the CPU caches: streaming stores write it without reading every line in first.
void copyLine(QRgb* to, const QRgb* from, int n) {
#if defined(__SSE2__)
  int i = 0;
  for (; i < n && (reinterpret_cast<uintptr_t>(to + i) & 15) != 0; ++i) to[i] = from[i];
  for (; i + 4 <= n; i += 4)
    _mm_stream_si128(reinterpret_cast<__m128i*>(to + i), _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + i)));
  for (; i < n; ++i) to[i] = from[i];
#else
  std::memcpy(to, from, static_cast<size_t>(n) * sizeof(QRgb));
#endif
}

constexpr int kNumGroups = 3 + 2 * KvCellColors::kNumChatColors;

std::array<QColor, kNumGroups> groupColors(const KvCellColors& colors) {
  std::array<QColor, kNumGroups> g{colors.free, colors.cached, colors.inUseUnknown};
  std::copy(colors.chats.begin(), colors.chats.end(), g.begin() + 3);
  for (int i = 0; i < KvCellColors::kNumChatColors; ++i) g[3 + KvCellColors::kNumChatColors + i] = colors.cachedTint(i);
  return g;
}

// pitch: the cell size of the cell's tier (the disk strip's cells are smaller).
bool outlinedAt(const KvCell& c, int pitch) { return pitch >= KvGridLayout::kGapFrom && (c.faded() || c.kind == KvCellKind::Shared); }
}  // namespace

bool kvCellFillsAreOpaque(const KvCellColors& colors) {
  const std::array<QColor, kNumGroups> fills = groupColors(colors);
  return colors.background.alpha() == 255 && colors.cachedOutline.alpha() == 255 && colors.text.alpha() == 255 &&
         std::all_of(fills.begin(), fills.end(), [](const QColor& c) { return c.alpha() == 255; });
}

void fillKvCells(QImage& image, int scale, const KvGridLayout& g, const KvCellModel& model, const KvCellColors& colors) {
  const int w = image.width(), h = image.height(), k = std::max(1, scale);
  const QRgb background = colors.background.rgba();
  std::array<QRgb, kNumGroups> fill;
  const std::array<QColor, kNumGroups> fills = groupColors(colors);
  for (int i = 0; i < kNumGroups; ++i) fill[i] = fills[i].rgba();
  const QRgb cachedOutline = colors.cachedOutline.rgba(), sharedOutline = colors.text.rgba();
  // One grid row is at most two distinct lines: `edge` for the outline's top and bottom rows,
  // `middle` for the rows between (the same when no cell of the row is outlined).
  std::vector<QRgb> edge(w), middle(w);
  std::vector<uint8_t> written(h, 0);
  auto span = [&](std::vector<QRgb>& line, int x0, int x1, QRgb c) {
    x0 = std::clamp(x0, 0, w), x1 = std::clamp(x1, 0, w);
    if (x0 < x1) std::fill(line.begin() + x0, line.begin() + x1, c);
  };
  auto paintPool = [&](const std::vector<KvCell>& cells, int top, int pitch, int columns) {
    const int n = static_cast<int>(cells.size());
    const int inner = pitch >= KvGridLayout::kGapFrom ? pitch - 1 : pitch;  // the painted square, the gap left out
    for (int first = 0; first < n; first += columns) {
      const int y0 = (top + (first / columns) * pitch) * k;
      if (y0 >= h) break;
      std::fill(edge.begin(), edge.end(), background);
      std::fill(middle.begin(), middle.end(), background);
      bool anyOutlined = false;
      for (int i = first; i < std::min(n, first + columns); ++i) {
        const KvCell& c = cells[i];
        const int x0 = (g.area.left() + (i - first) * pitch) * k, x1 = x0 + inner * k;
        const QRgb f = fill[groupOf(c)];
        if (!outlinedAt(c, pitch)) {
          span(edge, x0, x1, f);
          span(middle, x0, x1, f);
          continue;
        }
        anyOutlined = true;
        const QRgb o = c.faded() ? cachedOutline : sharedOutline;
        span(edge, x0, x1, o);
        span(middle, x0, x1, o);
        span(middle, x0 + k, x1 - k, f);
      }
      for (int d = 0; d < inner * k; ++d) {
        const int y = y0 + d;
        if (y < 0 || y >= h) continue;
        const bool atEdge = anyOutlined && (d < k || d >= (inner - 1) * k);
        copyLine(reinterpret_cast<QRgb*>(image.scanLine(y)), (atEdge ? edge : middle).data(), w);
        written[y] = 1;
      }
    }
  };
  paintPool(model.cells, g.area.top(), g.cellSize, g.columns);
  paintPool(model.hostCells, g.hostTop, g.cellSize, g.columns);
  paintPool(model.diskCells, g.diskTop, g.diskCellSize, g.diskColumns);
  // Gaps between grid rows, margins, the captions' bands: background.
  for (int y = 0; y < h; ++y)
    if (!written[y]) std::fill_n(reinterpret_cast<QRgb*>(image.scanLine(y)), w, background);
#if defined(__SSE2__)
  _mm_sfence();  // the streamed lines are in memory before anyone reads the image
#endif
}

void paintKvCells(QPainter& p, const QRect& area, const KvGridLayout& g, const KvCellModel& model, const KvCellColors& colors) {
  p.fillRect(area, colors.background);
  std::array<std::vector<QRect>, kNumGroups> byColor;
  std::vector<QRect> cachedOutlines, sharedOutlines;
  // Outlined cells are filled whole in the outline colour, then their inside in the fill colour.
  auto add = [&](const KvCell& c, const QRect& r, int pitch) {
    const bool outlined = outlinedAt(c, pitch);
    if (outlined) (c.faded() ? cachedOutlines : sharedOutlines).push_back(r);
    byColor[groupOf(c)].push_back(outlined ? r.adjusted(1, 1, -1, -1) : r);
  };
  for (size_t i = 0; i < model.cells.size(); ++i) add(model.cells[i], g.cellRect(static_cast<int>(i)), g.cellSize);
  for (size_t i = 0; i < model.hostCells.size(); ++i) add(model.hostCells[i], g.hostCellRect(static_cast<int>(i)), g.cellSize);
  for (size_t i = 0; i < model.diskCells.size(); ++i) add(model.diskCells[i], g.diskCellRect(static_cast<int>(i)), g.diskCellSize);
  auto fill = [&](const std::vector<QRect>& rects, const QColor& color) {
    for (const QRect& r : rects) p.fillRect(r, color);
  };
  fill(cachedOutlines, colors.cachedOutline);
  fill(sharedOutlines, colors.text);
  const std::array<QColor, kNumGroups> fills = groupColors(colors);
  for (int i = 0; i < kNumGroups; ++i) fill(byColor[i], fills[i]);
}
